#include "bench/http_load.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "common/http_server.h"
#include "scheduler/extender_app.h"

namespace ker::bench {

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

bool startsWithFold(std::string_view line, std::string_view prefix) {
  return line.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), line.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

Connection::Connection(int port, bool acceptGzip) : port_(port), acceptGzip_(acceptGzip) {}

Connection::~Connection() {
  close();
}

void Connection::open() {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) {
    throw std::runtime_error("socket() failed");
  }
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port_));
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close();
    throw std::runtime_error("cannot connect to 127.0.0.1:" + std::to_string(port_) + ": " +
                             std::strerror(errno));
  }
  in_.clear();
}

void Connection::close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

bool Connection::readMore() {
  constexpr size_t kChunk = 1 << 18;
  if (!chunk_) {
    chunk_ = std::make_unique_for_overwrite<char[]>(kChunk);
  }
  ssize_t n;
  do {
    n = ::recv(fd_, chunk_.get(), kChunk, 0);
  } while (n < 0 && errno == EINTR);
  if (n > 0) {
    in_.append(chunk_.get(), static_cast<size_t>(n));
  }
  return n > 0;
}

Reply Connection::post(const std::string& path, std::string_view body) {
  std::string head =
      "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
      "\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nContent-Type: application/json\r\n" + (acceptGzip_ ? "Accept-Encoding: gzip\r\n" : "") +
      "\r\n";
  return roundTrip(head, body);
}

Reply Connection::get(const std::string& path) {
  return roundTrip("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
                       "\r\nUser-Agent: Go-http-client/1.1\r\n\r\n",
                   {});
}

Reply Connection::roundTrip(std::string_view head, std::string_view body) {
  // A kept-alive connection the server has meanwhile closed fails on first use; like Go's
  // transport, try once more on a fresh connection.
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool reused = fd_ >= 0;
    if (!reused) {
      open();
    }
    iovec iov[2] = {{const_cast<char*>(head.data()), head.size()},
                    {const_cast<char*>(body.data()), body.size()}};
    size_t total = head.size() + body.size();
    size_t sent = 0;
    bool failed = false;
    while (sent < total) {
      msghdr msg{};
      iovec rest[2];
      int count = 0;
      size_t skip = sent;
      for (auto& v : iov) {
        if (skip >= v.iov_len) {
          skip -= v.iov_len;
          continue;
        }
        rest[count++] = {static_cast<char*>(v.iov_base) + skip, v.iov_len - skip};
        skip = 0;
      }
      msg.msg_iov = rest;
      msg.msg_iovlen = static_cast<size_t>(count);
      ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        failed = true;
        break;
      }
      sent += static_cast<size_t>(n);
    }
    size_t headerEnd = std::string::npos;
    while (!failed && (headerEnd = in_.find("\r\n\r\n")) == std::string::npos) {
      if (!readMore()) {
        failed = true;
      }
    }
    if (failed) {
      close();
      if (reused && in_.empty()) {
        continue;
      }
      throw std::runtime_error("connection to 127.0.0.1:" + std::to_string(port_) +
                               " failed mid-request");
    }
    Reply reply;
    std::string_view headers(in_.data(), headerEnd);
    if (headers.size() < 12 || !headers.starts_with("HTTP/1.1 ")) {
      throw std::runtime_error("not an HTTP/1.1 reply: " + std::string(headers.substr(0, 80)));
    }
    std::from_chars(headers.data() + 9, headers.data() + 12, reply.status);
    size_t length = 0;
    bool closeAfter = false;
    size_t pos = headers.find("\r\n");
    while (pos != std::string_view::npos && pos < headers.size()) {
      size_t next = headers.find("\r\n", pos + 2);
      std::string_view line = headers.substr(
          pos + 2, next == std::string_view::npos ? std::string_view::npos : next - pos - 2);
      std::string_view value = trim(line.substr(std::min(line.find(':') + 1, line.size())));
      if (startsWithFold(line, "content-length:")) {
        std::from_chars(value.data(), value.data() + value.size(), length);
      } else if (startsWithFold(line, "connection:")) {
        closeAfter = startsWithFold(value, "close");
      } else if (startsWithFold(line, "content-encoding:")) {
        reply.gzipped = startsWithFold(value, "gzip");
      } else if (startsWithFold(line, "transfer-encoding:")) {
        throw std::runtime_error("chunked replies are not expected from the extender");
      }
      pos = next;
    }
    const size_t bodyStart = headerEnd + 4;
    while (in_.size() < bodyStart + length) {
      if (!readMore()) {
        close();
        throw std::runtime_error("connection closed mid-reply");
      }
    }
    reply.body.assign(in_, bodyStart, length);
    in_.erase(0, bodyStart + length);
    if (closeAfter) {
      close();
    }
    return reply;
  }
  throw std::runtime_error("connection to 127.0.0.1:" + std::to_string(port_) + " keeps failing");
}

std::string decodedBody(const Reply& reply) {
  if (!reply.gzipped) {
    return reply.body;
  }
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
    throw std::runtime_error("inflateInit2 failed");
  }
  std::string out;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(reply.body.data()));
  zs.avail_in = static_cast<uInt>(reply.body.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    const size_t old = out.size();
    out.resize(old + (1 << 20));
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + old);
    zs.avail_out = 1 << 20;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.resize(old + (1 << 20) - zs.avail_out);
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    throw std::runtime_error("corrupt gzip reply");
  }
  return out;
}

double percentile(std::vector<double> samples, double p) {
  if (samples.empty()) {
    return 0;
  }
  std::sort(samples.begin(), samples.end());
  size_t rank = static_cast<size_t>(p / 100.0 * static_cast<double>(samples.size()) + 0.999999);
  return samples[std::clamp<size_t>(rank, 1, samples.size()) - 1];
}

double median(std::vector<double> samples) {
  if (samples.empty()) {
    return 0;
  }
  const size_t mid = samples.size() / 2;
  std::nth_element(samples.begin(), samples.begin() + static_cast<ptrdiff_t>(mid), samples.end());
  const double upper = samples[mid];
  if (samples.size() % 2 == 1) {
    return upper;
  }
  const double lower =
      *std::max_element(samples.begin(), samples.begin() + static_cast<ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

LoadResult runLoad(int port, const std::string& path, const std::string& body,
                   const LoadOptions& opts) {
  const auto n = static_cast<size_t>(std::max(opts.concurrency, 1));
  std::vector<std::vector<double>> latencies(n);
  std::atomic<size_t> issued{0};
  std::atomic<size_t> errors{0};
  std::atomic<size_t> wireBytes{0};
  std::mutex failureMu;
  std::string failure;
  Clock::time_point start;
  std::barrier sync(static_cast<std::ptrdiff_t>(n), [&]() noexcept { start = Clock::now(); });
  auto worker = [&](size_t id) {
    bool ok = true;
    std::unique_ptr<Connection> conn;
    try {
      conn = std::make_unique<Connection>(port, opts.acceptGzip);
      for (size_t i = 0; i < opts.warmupPerConnection; ++i) {
        conn->post(path, body);
      }
    } catch (const std::exception& e) {
      std::lock_guard lock(failureMu);
      failure = e.what();
      ok = false;
    }
    sync.arrive_and_wait();
    while (ok) {
      const size_t slot = issued.fetch_add(1);
      const double elapsed = msSince(start);
      if (slot >= opts.maxRequests ||
          (slot >= opts.minRequests && elapsed >= static_cast<double>(opts.duration.count()))) {
        break;
      }
      try {
        const auto t0 = Clock::now();
        Reply r = conn->post(path, body);
        latencies[id].push_back(msSince(t0));
        if (r.status != 200) {
          errors++;
        }
        wireBytes = r.body.size();
      } catch (const std::exception& e) {
        std::lock_guard lock(failureMu);
        failure = e.what();
        ok = false;
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) {
    threads.emplace_back(worker, i);
  }
  for (auto& t : threads) {
    t.join();
  }
  const double elapsedMs = msSince(start);
  if (!failure.empty()) {
    throw std::runtime_error("load on " + path + " failed: " + failure);
  }
  std::vector<double> all;
  for (auto& l : latencies) {
    all.insert(all.end(), l.begin(), l.end());
  }
  LoadResult r;
  r.requests = all.size();
  r.errors = errors.load();
  r.p50Ms = percentile(all, 50);
  r.p99Ms = percentile(all, 99);
  r.rps = elapsedMs > 0 ? static_cast<double>(all.size()) * 1000.0 / elapsedMs : 0;
  r.replyWireBytes = wireBytes.load();
  return r;
}

FloorServer::FloorServer(Stack stack) {
  const ExtenderConfig extender;  // the extender's defaults: thread count, body limit
  if (stack == Stack::kExtenderStack) {
    HttpServerOptions opts;
    opts.bindAddress = "127.0.0.1";
    opts.threads = extender.threads;
    opts.maxBodyBytes = extender.maxBodyBytes;
    stack_ = std::make_unique<HttpServer>(opts);
    for (const char* verb : {"/filter", "/prioritize", "/preempt", "/bind"}) {
      stack_->post(verb, [](const HttpRequest&) {
        return HttpResponse{200, "application/json", "{}"};
      });
    }
    stack_->start();
    port_ = stack_->port();
    return;
  }
  const HttpServerOptions defaults;
  bare_ = std::make_unique<httplib::Server>();
  bare_->new_task_queue = [n = extender.threads] { return new httplib::ThreadPool(n); };
  bare_->set_tcp_nodelay(true);
  bare_->set_keep_alive_max_count(defaults.keepAliveMaxRequests);
  bare_->set_keep_alive_timeout(defaults.keepAliveTimeout.count());
  bare_->set_payload_max_length(extender.maxBodyBytes);
  bare_->Post(R"(/(filter|prioritize|preempt|bind))",
              [](const httplib::Request&, httplib::Response& res) {
                res.set_content("{}", "application/json");
              });
  port_ = bare_->bind_to_any_port("127.0.0.1");
  if (port_ <= 0) {
    throw std::runtime_error("the transport floor server cannot bind 127.0.0.1");
  }
  // The socket already listens: connections made before the accept loop runs wait in the
  // backlog.
  thread_ = std::thread([this] { bare_->listen_after_bind(); });
}

FloorServer::~FloorServer() {
  if (stack_) {
    stack_->stop();
  }
  if (bare_) {
    bare_->stop();
    thread_.join();
  }
}

double domParseMs(const std::string& body, int runs) {
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    // Freeing the document is part of what a naive decoder costs per request.
    const auto t0 = Clock::now();
    bool object = nlohmann::json::parse(body).is_object();
    times.push_back(msSince(t0));
    if (!object) {
      throw std::runtime_error("the body is not a JSON object");
    }
  }
  return median(times);
}

}  // namespace ker::bench

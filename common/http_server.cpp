#include "common/http_server.h"

#include <fcntl.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

#include "common/logging.h"
#include "common/socket_bytes.h"

namespace ker {

namespace {

// The server's own refusals and failures: JSON with an `Error` member, the field an
// extender's client (kube-scheduler) reads, so every reply on these routes parses.
HttpResponse errorReply(int status, const std::string& message) {
  return HttpResponse{status, "application/json", nlohmann::json{{"Error", message}}.dump()};
}

// httplib routes by regex; paths are matched literally.
std::string literalPattern(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (std::strchr(R"(\^$.|?*+()[]{})", c) != nullptr) {
      out += '\\';
    }
    out += c;
  }
  return out;
}

HttpRequest convert(const httplib::Request& req) {
  HttpRequest r;
  r.method = req.method;
  r.path = req.path;
  r.remoteAddr = req.remote_addr;
  for (const auto& [name, value] : req.headers) {
    r.addHeader(name, value);
  }
  return r;
}

// Writes a spliced body through one buffer, so small pieces do not cost a send each; a
// piece as large as the buffer (a run of passing Nodes) is sent from where it lies.
bool writeSpliced(const SplicedBody& body, std::string_view request, httplib::DataSink& sink) {
  constexpr size_t kChunk = size_t{256} << 10;
  std::string buffer;
  buffer.reserve(kChunk);
  bool failed = false;
  auto flush = [&] {
    failed = !sink.write(buffer.data(), buffer.size());
    buffer.clear();
    return !failed;
  };
  body.forEachPiece(request, [&](std::string_view piece) {
    if (piece.size() >= kChunk) {
      if (!buffer.empty() && !flush()) {
        return false;
      }
      failed = !sink.write(piece.data(), piece.size());
      return !failed;
    }
    while (!piece.empty()) {
      const size_t n = std::min(piece.size(), kChunk - buffer.size());
      buffer.append(piece.data(), n);
      piece.remove_prefix(n);
      if (buffer.size() == kChunk && !flush()) {
        return false;
      }
    }
    return true;
  });
  return !failed && (buffer.empty() || flush());
}

// Moves the body: a filter reply in NodeList mode can be tens of MB. A response with inserts
// (which dispatch has checked against the request) keeps the request body until written.
void apply(HttpResponse&& from, std::string&& requestBody, httplib::Response& to) {
  to.status = from.status;
  if (from.body.inserts.empty()) {
    to.body = std::move(from.body.text);
    to.set_header("Content-Type", from.contentType);
    return;
  }
  auto body = std::make_shared<const SplicedBody>(std::move(from.body));
  auto request = std::make_shared<const std::string>(std::move(requestBody));
  // httplib asks for the whole body at once: it serves Range requests for GET alone, and
  // GET requests have no body to splice from.
  to.set_content_provider(body->size(), from.contentType,
                          [body, request](size_t offset, size_t, httplib::DataSink& sink) {
                            return offset == 0 && writeSpliced(*body, *request, sink);
                          });
}

// Sends the response, then has httplib close the connection: httplib 0.11 only closes on the
// client's request, but a body provider that reports failure after writing everything ends
// the connection. Used where unread request bytes would otherwise be parsed as the next
// request, or where the peer is misbehaving.
void applyAndClose(const HttpResponse& from, httplib::Response& to) {
  to.status = from.status;
  to.set_header("Connection", "close");
  to.set_content_provider(
      from.body.text.size(), from.contentType.c_str(),
      [body = from.body.text](size_t offset, size_t length, httplib::DataSink& sink) {
        sink.write(body.data() + offset, length);
        return false;
      });
}

std::string peerKey(const std::string& addr, int port) {
  return addr + ":" + std::to_string(port);
}

// The address part of a peerKey (IPv6 addresses hold colons too; the port follows the last).
std::string hostOf(const std::string& peer) {
  return peer.substr(0, peer.rfind(':'));
}

// Owns a descriptor.
class UniqueFd {
 public:
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&&) = delete;
  ~UniqueFd() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// A connection this process accepted on the server's port. It is checked and shut down through
// a duplicate descriptor: httplib may close its own at any time and the number be reused by
// another socket, while the duplicate keeps naming the one that was checked.
struct Connection {
  UniqueFd fd;
  ino_t inode;
  std::string peer;
};

enum class SocketRole { kListening, kAccepted };

// httplib 0.11 offers no handle on its sockets, hence the walk over the open descriptors.
// Every non-listening socket here on the server's port is one it accepted: connect() never
// picks a port a listener is bound to. A listening socket has no peer.
std::vector<Connection> socketsOnPort(int port, SocketRole role) {
  std::vector<Connection> out;
  // The listing may show the duplicates made along the way, under their own numbers.
  std::set<ino_t> seen;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int n = -1;
    const std::string name = entry.path().filename().string();
    struct stat st {};
    if (std::from_chars(name.data(), name.data() + name.size(), n).ec != std::errc() ||
        fstat(n, &st) != 0 || !S_ISSOCK(st.st_mode)) {
      continue;
    }
    UniqueFd fd(fcntl(n, F_DUPFD_CLOEXEC, 0));
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    int listening = 0;
    socklen_t optLen = sizeof listening;
    if (fd.get() < 0 || fstat(fd.get(), &st) != 0 || !seen.insert(st.st_ino).second ||
        getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0 ||
        (local.ss_family != AF_INET && local.ss_family != AF_INET6) ||
        getsockopt(fd.get(), SOL_SOCKET, SO_ACCEPTCONN, &listening, &optLen) != 0 ||
        (listening != 0) != (role == SocketRole::kListening)) {
      continue;
    }
    // sin_port and sin6_port sit at the same offset.
    if (ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port) != port) {
      continue;
    }
    if (role == SocketRole::kListening) {
      out.push_back(Connection{std::move(fd), st.st_ino, ""});
      continue;
    }
    sockaddr_storage peer{};
    len = sizeof peer;
    char host[NI_MAXHOST];
    char serv[NI_MAXSERV];
    if (getpeername(fd.get(), reinterpret_cast<sockaddr*>(&peer), &len) != 0 ||
        getnameinfo(reinterpret_cast<sockaddr*>(&peer), len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
      continue;
    }
    out.push_back(Connection{std::move(fd), st.st_ino, peerKey(host, std::atoi(serv))});
  }
  return out;
}

std::vector<Connection> acceptedConnections(int port) {
  return socketsOnPort(port, SocketRole::kAccepted);
}

// httplib 0.11 listens with a backlog of 5. A burst of connections (a crowd the watchdog will
// cut, kube-scheduler's parallel calls) overflows it whenever the accept thread waits for a
// CPU, and every handshake dropped costs its client a 1 s SYN retransmission: a kubelet probe
// with its 1 s timeout fails. listen() again on the bound socket sets the kernel's maximum.
// Failing that only costs latency, and failing start() here would leak httplib's listening
// socket (only its stop() or accept loop closes it), so it is logged instead.
void raiseListenBacklog(int port) {
  const std::vector<Connection> listeners = socketsOnPort(port, SocketRole::kListening);
  std::string problem = listeners.empty() ? "its listening socket was not found" : "";
  for (const Connection& l : listeners) {
    if (::listen(l.fd.get(), SOMAXCONN) != 0) {
      problem = std::strerror(errno);
    }
  }
  if (!problem.empty()) {
    log::warn("cannot raise the listen backlog; a burst of connections may wait 1 s",
              {{"port", port}, {"error", problem}});
  }
}

// Shuts down this process's accepted connections on port, except those serving a request in
// flight (unless force): idle keep-alive workers wake up and finish. httplib 0.11 leaves idle
// keep-alive connections waiting out their timeout after stop().
void shutdownConnections(int port, const std::set<std::string>& spare, bool force) {
  for (const Connection& c : acceptedConnections(port)) {
    if (force || spare.count(c.peer) == 0) {
      ::shutdown(c.fd.get(), SHUT_RDWR);
    }
  }
}

// The declared body length when it exceeds max; a malformed header is left to httplib (400).
// With max 0 any body is too large, a chunked one too: httplib would read a chunked body of an
// unrouted request in full, whatever its length.
bool declaredTooLarge(const httplib::Request& req, size_t max) {
  if (max == 0 && req.has_header("Transfer-Encoding")) {
    return true;
  }
  const std::string value = req.get_header_value("Content-Length");
  uint64_t len = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), len);
  return !value.empty() && ec == std::errc() && end == value.data() + value.size() && len > max;
}

void requireReadable(const std::string& path, const char* what) {
  if (!std::ifstream(path).good()) {
    throw std::runtime_error(std::string("cannot read ") + what + " file " + path + ": " +
                             std::strerror(errno));
  }
}

time_t secondsOf(std::chrono::milliseconds d) {
  return static_cast<time_t>(d.count() / 1000);
}
time_t microsOf(std::chrono::milliseconds d) {
  return static_cast<time_t>(d.count() % 1000 * 1000);
}

// How often the watchdog looks for connections past their request deadline or over their
// peer's limit. A crowd of connections holds every worker until it is cut, and a probe queued
// behind them waits up to this long; the walk is of this process's descriptors only, so it is
// cheap to take often.
constexpr std::chrono::milliseconds kWatchInterval{200};

}  // namespace

HttpServer::HttpServer(HttpServerOptions opts) : opts_(std::move(opts)) {}

HttpServer::~HttpServer() {
  stop();
}

void HttpServer::addRoute(std::string method, const std::string& path, HttpHandler handler) {
  if (server_) {
    throw std::logic_error("HttpServer: routes must be added before start()");
  }
  routes_.push_back(Route{std::move(method), path, std::move(handler)});
}

void HttpServer::get(const std::string& path, HttpHandler handler) {
  addRoute("GET", path, std::move(handler));
}

void HttpServer::post(const std::string& path, HttpHandler handler) {
  addRoute("POST", path, std::move(handler));
}

ReadyCheck readyWhen(std::string name, std::function<bool()> ok, std::string problem) {
  return {std::move(name),
          [ok = std::move(ok), problem = std::move(problem)]() -> std::optional<std::string> {
            if (ok()) {
              return std::nullopt;
            }
            return problem;
          }};
}

bool allReady(const std::vector<ReadyCheck>& checks) {
  return std::none_of(checks.begin(), checks.end(),
                      [](const ReadyCheck& c) { return c.problem().has_value(); });
}

void HttpServer::mountHealth(std::vector<ReadyCheck> checks) {
  get("/healthz", [](const HttpRequest&) { return HttpResponse{200, "text/plain", "ok"}; });
  get("/readyz", [checks = std::move(checks)](const HttpRequest&) {
    std::string report;
    bool ready = true;
    for (const auto& check : checks) {
      if (auto problem = check.problem()) {
        ready = false;
        report += "[-]" + check.name + " failed: " + *problem + "\n";
      } else {
        report += "[+]" + check.name + " ok\n";
      }
    }
    if (ready) {
      return HttpResponse{200, "text/plain", "ok"};
    }
    return HttpResponse{503, "text/plain", report + "readyz check failed\n"};
  });
}

void HttpServer::mountMetrics(metrics::Registry& registry) {
  requests_ = &registry.counter("http_requests_total", "HTTP requests by path, method and code.",
                                {"path", "method", "code"});
  latency_ = &registry.histogram("http_request_duration_seconds",
                                 "HTTP request latency in seconds, by path and method.",
                                 {"path", "method"});
  timedOut_ = &registry
                   .counter("http_connections_timed_out_total",
                            "HTTP connections shut down for receiving a request or sending a "
                            "response too slowly.")
                   .get();
  get("/metrics", [&registry](const HttpRequest&) {
    return HttpResponse{200, metrics::Registry::kContentType, registry.render()};
  });
}

void HttpServer::count(const std::string& method, const std::string& path, int status,
                       double seconds) {
  if (requests_ == nullptr) {
    return;
  }
  // Unknown paths share one label value so scanners cannot blow up the series count.
  const bool known =
      std::any_of(routes_.begin(), routes_.end(), [&](const Route& r) { return r.path == path; });
  const std::string label = known ? path : "other";
  requests_->labels({label, method, std::to_string(status)}).inc();
  latency_->labels({label, method}).observe(seconds);
}

HttpResponse HttpServer::dispatch(const Route& route, const HttpRequest& req,
                                  const std::string& peer) {
  {
    std::lock_guard lock(peers_->mu);
    peers_->handling.insert(peer);
  }
  const auto start = std::chrono::steady_clock::now();
  HttpResponse res;
  try {
    res = route.handler(req);
  } catch (const std::exception& e) {
    log::error("HTTP handler failed", {{"path", req.path}, {"error", e.what()}});
    res = errorReply(500, std::string("internal error: ") + e.what());
  } catch (...) {
    log::error("HTTP handler failed", {{"path", req.path}, {"error", "unknown exception"}});
    res = errorReply(500, "internal error");
  }
  if (!res.body.fits(req.body.size())) {
    log::error("HTTP handler answered with slices outside its request", {{"path", req.path}});
    res = errorReply(500, "internal error");
  }
  {
    const auto now = Clock::now();
    std::lock_guard lock(peers_->mu);
    peers_->handling.erase(peer);
    peers_->deadlines[peer] = {now, now + opts_.requestTimeout};  // to write the response
  }
  count(req.method, route.path, res.status,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return res;
}

namespace {

// OpenSSL's verify callback, only to say why a client was turned away: the handshake fails
// with no request, so nothing else would tell.
int logClientRefusal(int preverified, X509_STORE_CTX* store) {
  if (preverified == 0) {
    const int error = X509_STORE_CTX_get_error(store);
    log::warn("client certificate refused", {{"depth", X509_STORE_CTX_get_error_depth(store)},
                                             {"error", X509_verify_cert_error_string(error)}});
  }
  return preverified;
}

// The client's name is checked in the handshake by OpenSSL's own host check, so no handler
// ever sees a refused client. Subject CN too: kube-scheduler's and most client certificates
// carry their name only there.
void requireClientNames(SSL_CTX* ctx, const HttpServerOptions& opts) {
  if (opts.allowedClientNames.empty()) {
    return;
  }
  if (opts.clientCaFile.empty()) {
    throw std::runtime_error("allowed client names need a client CA (mutual TLS)");
  }
  X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
  X509_VERIFY_PARAM_set_hostflags(
      param, X509_CHECK_FLAG_NO_WILDCARDS | X509_CHECK_FLAG_ALWAYS_CHECK_SUBJECT);
  for (const auto& name : opts.allowedClientNames) {
    if (name.empty() || X509_VERIFY_PARAM_add1_host(param, name.c_str(), name.size()) != 1) {
      throw std::runtime_error("cannot require the client name \"" + name + "\"");
    }
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, logClientRefusal);
}

}  // namespace

HttpResponse HttpServer::tooLarge(const std::string& method, const std::string& path) {
  count(method, path, 400, 0);
  return errorReply(400,
                    "request body exceeds the limit of " + std::to_string(bodyLimit()) + " bytes");
}

size_t HttpServer::bodyLimit() const {
  const bool takesBodies = std::any_of(routes_.begin(), routes_.end(),
                                       [](const Route& r) { return r.method == "POST"; });
  return takesBodies ? opts_.maxBodyBytes : 0;
}

HttpServerOptions probeServerOptions(const std::string& address, int port) {
  HttpServerOptions o;
  o.bindAddress = address;
  o.port = port;
  o.threads = 8;
  o.maxConnectionsPerPeer = 2;
  o.readTimeout = std::chrono::seconds(2);
  o.writeTimeout = std::chrono::seconds(2);
  o.keepAliveTimeout = std::chrono::seconds(2);
  o.requestTimeout = std::chrono::seconds(3);
  o.maxHeaderBytes = size_t{64} << 10;
  return o;
}

void HttpServer::start() {
  if (server_) {
    throw std::logic_error("HttpServer: already started");
  }
  if (opts_.requestTimeout <= std::chrono::milliseconds::zero()) {
    throw std::invalid_argument("HttpServer: requestTimeout must be positive");
  }
  // A peer closing early must not kill the process on the next write (httplib does not pass
  // MSG_NOSIGNAL, and OpenSSL writes to the socket directly).
  std::signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<httplib::Server> svr;
  if (!opts_.certFile.empty() || !opts_.keyFile.empty()) {
    requireReadable(opts_.certFile, "TLS certificate");
    requireReadable(opts_.keyFile, "TLS key");
    if (!opts_.clientCaFile.empty()) {
      requireReadable(opts_.clientCaFile, "client CA");
    }
    auto ssl = std::make_unique<httplib::SSLServer>(
        opts_.certFile.c_str(), opts_.keyFile.c_str(),
        opts_.clientCaFile.empty() ? nullptr : opts_.clientCaFile.c_str());
    if (!ssl->is_valid()) {
      throw std::runtime_error("cannot load the TLS certificate, key or client CA (" +
                               opts_.certFile + ", " + opts_.keyFile + ")");
    }
    SSL_CTX_set_min_proto_version(ssl->ssl_context(), TLS1_2_VERSION);
    requireClientNames(ssl->ssl_context(), opts_);
    svr = std::move(ssl);
  } else if (!opts_.clientCaFile.empty()) {
    throw std::runtime_error("a client CA needs a server certificate and key (TLS)");
  } else {
    svr = std::make_unique<httplib::Server>();
  }

  // httplib's default sets SO_REUSEPORT, which would let a second server silently share the
  // port; plain SO_REUSEADDR makes a clash an error while still allowing quick restarts.
  svr->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  const size_t threads = std::max<size_t>(1, opts_.threads);
  svr->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  svr->set_read_timeout(secondsOf(opts_.readTimeout), microsOf(opts_.readTimeout));
  svr->set_write_timeout(secondsOf(opts_.writeTimeout), microsOf(opts_.writeTimeout));
  svr->set_keep_alive_timeout(static_cast<time_t>(opts_.keepAliveTimeout.count()));
  svr->set_keep_alive_max_count(opts_.keepAliveMaxRequests);
  // httplib writes a reply's headers and body separately; with Nagle on, the body waits for
  // the client's delayed ACK (about 40 ms on Linux) on every request.
  svr->set_tcp_nodelay(true);
  const size_t max = bodyLimit();
  // Backstop for bodies the checks below do not see; they answer first with a clear message.
  svr->set_payload_max_length(max);

  // Reject a declared oversize body before reading any of it, with or without
  // "Expect: 100-continue"; the unread body makes the connection unusable, so close it.
  svr->set_expect_100_continue_handler(
      [this, max](const httplib::Request& req, httplib::Response& res) {
        if (declaredTooLarge(req, max)) {
          applyAndClose(tooLarge(req.method, req.path), res);
          return 400;
        }
        return 100;
      });
  // A request is in flight from routing until its response is written (the logger runs
  // last in httplib's write path); requests rejected before routing need no protection.
  // Then the connection waits for its next request, with a fresh deadline.
  svr->set_logger([peers = peers_, idle = opts_.keepAliveTimeout + opts_.requestTimeout](
                      const httplib::Request& req, const httplib::Response&) {
    const auto now = Clock::now();
    const std::string peer = peerKey(req.remote_addr, req.remote_port);
    std::lock_guard lock(peers->mu);
    peers->inFlight.erase(peer);
    peers->deadlines[peer] = {now, now + idle};
  });
  svr->set_pre_routing_handler([this, max](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard lock(peers_->mu);
      peers_->inFlight.insert(peerKey(req.remote_addr, req.remote_port));
    }
    if (declaredTooLarge(req, max)) {
      applyAndClose(tooLarge(req.method, req.path), res);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  // httplib answers requests it could not read (malformed, or the peer stalled past the read
  // timeout) with an empty 4xx and then keeps the connection; close it instead. Returning
  // Handled for closing responses makes httplib set their Content-Length on every path.
  svr->set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
        if (res.content_provider_) {
          return httplib::Server::HandlerResponse::Handled;
        }
        // Our handlers' responses always carry a Content-Type; httplib's own errors do not.
        if (res.body.empty() && !res.has_header("Content-Type") && res.status >= 400 &&
            res.status < 500 && res.status != 404) {
          applyAndClose(errorReply(res.status, "malformed or incomplete request"), res);
          return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
      }));

  for (const Route& route : routes_) {
    const std::string pattern = literalPattern(route.path);
    if (route.method == "GET") {
      svr->Get(pattern, [this, route](const httplib::Request& req, httplib::Response& res) {
        apply(dispatch(route, convert(req), peerKey(req.remote_addr, req.remote_port)), {}, res);
      });
      continue;
    }
    // POST bodies are read through a receiver so a chunked body is cut off at the limit.
    svr->Post(pattern, [this, route, max](const httplib::Request& req, httplib::Response& res,
                                          const httplib::ContentReader& reader) {
      HttpRequest r = convert(req);
      // Room for the whole body up front (NodeList bodies run to tens of MB): growing by
      // doubling copied it several times over. Pages are only touched as bytes arrive.
      if (const auto length = req.get_header_value<uint64_t>("Content-Length"); length > 0) {
        r.body.reserve(std::min<uint64_t>(length, max));
      }
      bool exceeded = false;
      const bool complete = reader([&](const char* data, size_t len) {
        if (r.body.size() + len > max) {
          exceeded = true;
          return false;
        }
        r.body.append(data, len);
        return true;
      });
      if (exceeded) {
        applyAndClose(tooLarge(r.method, route.path), res);
      } else if (!complete) {
        applyAndClose(errorReply(400, "incomplete request body"), res);
      } else {
        HttpResponse response = dispatch(route, r, peerKey(req.remote_addr, req.remote_port));
        apply(std::move(response), std::move(r.body), res);
      }
    });
  }

  if (opts_.port == 0) {
    port_ = svr->bind_to_any_port(opts_.bindAddress);
  } else {
    port_ = svr->bind_to_port(opts_.bindAddress, opts_.port) ? opts_.port : -1;
  }
  if (port_ < 0) {
    port_ = 0;
    throw std::runtime_error("cannot listen on " + opts_.bindAddress + ":" +
                             std::to_string(opts_.port) + ": " + std::strerror(errno));
  }
  raiseListenBacklog(port_);

  exited_ = std::make_shared<std::atomic<bool>>(false);
  server_ = std::move(svr);
  thread_ = std::thread([svr = server_.get(), exited = exited_] {
    svr->listen_after_bind();
    exited->store(true);
  });
  // httplib's stop() is a no-op until the accept loop runs, so wait for it; otherwise a quick
  // stop() would leave the thread listening forever.
  while (!server_->is_running() && !exited_->load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (exited_->load()) {
    thread_.join();
    server_.reset();
    throw std::runtime_error("HTTP server on port " + std::to_string(port_) + " failed to start");
  }
  log::info("HTTP server listening", {{"address", opts_.bindAddress},
                                      {"port", port_},
                                      {"tls", tls()},
                                      {"mtls", !opts_.clientCaFile.empty()}});
  // The read and write timeouts are per socket call, so a peer trickling a byte at a time
  // would hold a worker for as long as it likes; the watchdog bounds a whole request instead.
  watchdog_ = std::jthread([this](std::stop_token stop) {
    std::mutex mu;
    std::condition_variable_any wake;  // woken by stop()'s request_stop()
    std::unique_lock lock(mu);
    std::map<ino_t, Watched> watched;
    Clock::time_point previousLook{};
    while (!wake.wait_for(lock, stop, kWatchInterval, [&stop] { return stop.stop_requested(); })) {
      const auto look = Clock::now();
      cutOverdue(watched, previousLook);
      previousLook = look;
    }
  });
}

void HttpServer::cutOverdue(std::map<ino_t, Watched>& watched, Clock::time_point previousLook) {
  const auto now = Clock::now();
  // Walked outside the lock, which handlers take on entry and exit.
  const std::vector<Connection> connections = acceptedConnections(port_);
  std::vector<std::optional<uint64_t>> read;
  for (const Connection& c : connections) {
    // Read after the received count: the unread part can only have grown, so this undercounts.
    read.push_back(bytesRead(c.fd.get()));
  }
  std::map<ino_t, Watched> seen;
  std::vector<std::string> slow;
  std::vector<std::string> oversized;
  std::vector<std::string> crowded;
  // Per peer address, its connections oldest first: those past maxConnectionsPerPeer are cut.
  std::map<std::string, std::vector<std::pair<Clock::time_point, ino_t>>> byHost;
  for (const Connection& c : connections) {
    auto it = watched.find(c.inode);
    byHost[hostOf(c.peer)].push_back({it != watched.end() ? it->second.firstSeen : now, c.inode});
  }
  std::set<ino_t> overLimit;
  if (opts_.maxConnectionsPerPeer > 0) {
    for (auto& [host, conns] : byHost) {
      std::sort(conns.begin(), conns.end());
      for (size_t i = opts_.maxConnectionsPerPeer; i < conns.size(); ++i) {
        overLimit.insert(conns[i].second);
      }
    }
  }
  {
    std::lock_guard lock(peers_->mu);
    std::set<std::string> present;
    for (size_t i = 0; i < connections.size(); ++i) {
      const Connection& c = connections[i];
      auto it = watched.find(c.inode);
      const bool known = it != watched.end();
      Watched w = known ? it->second : Watched{now};
      // The deadline set when a response to this peer was written is this connection's if it
      // was set since the connection was first seen or, for a connection seen now for the
      // first time, since the previous look: it finished a request before the watchdog saw it
      // (a large one takes milliseconds). One set earlier is an earlier connection's from the
      // same addr:port: start over. Only a predecessor that closed within one look can pass
      // its deadline on, and the new connection's header bytes then count from this look.
      auto d = peers_->deadlines.find(c.peer);
      const bool current =
          d != peers_->deadlines.end() &&
          (d->second.set >= w.firstSeen || (!known && d->second.set > previousLook));
      const Clock::time_point deadline =
          current ? d->second.at : w.firstSeen + opts_.keepAliveTimeout + opts_.requestTimeout;
      // Bytes httplib read while no request was past its headers, since the last request
      // moved on: a request line and headers, which it reads without a limit on their count.
      // (A body waiting unread in the kernel is not counted.)
      const bool inRequest =
          peers_->inFlight.count(c.peer) != 0 || peers_->handling.count(c.peer) != 0;
      const Clock::time_point progress = current ? d->second.set : Clock::time_point{};
      if (read[i] && (!known || inRequest || progress != w.progress || *read[i] < w.headerStart)) {
        // A connection seen for the first time that has neither a request in flight nor a
        // response behind it has read nothing but its first request line and headers: all of
        // it counts (a peer sending them fast would otherwise pass unseen before the first look).
        w.headerStart = !known && !inRequest && !current ? 0 : *read[i];
      }
      w.progress = progress;
      const bool oversize = read[i] && *read[i] - w.headerStart > opts_.maxHeaderBytes;
      // Shut down under the lock, so a handler that has started is never cut.
      const bool crowding = overLimit.count(c.inode) != 0;
      if (!w.cut && peers_->handling.count(c.peer) == 0 &&
          (now > deadline || oversize || crowding)) {
        ::shutdown(c.fd.get(), SHUT_RDWR);
        w.cut = true;
        (now > deadline ? slow : oversize ? oversized : crowded).push_back(c.peer);
      }
      present.insert(c.peer);
      seen.emplace(c.inode, w);
    }
    std::erase_if(peers_->deadlines, [&](const auto& d) { return present.count(d.first) == 0; });
  }
  watched = std::move(seen);
  for (const std::string& peer : slow) {
    log::warn("HTTP connection too slow to send its request or take its response; closed",
              {{"peer", peer}, {"port", port_}});
    if (timedOut_ != nullptr) {
      timedOut_->inc();
    }
  }
  for (const std::string& peer : crowded) {
    log::warn("HTTP peer over its connection limit; newest connection closed",
              {{"peer", peer}, {"port", port_}, {"limit", opts_.maxConnectionsPerPeer}});
  }
  for (const std::string& peer : oversized) {
    log::warn("HTTP request headers over the limit; connection closed",
              {{"peer", peer}, {"port", port_}, {"limit", opts_.maxHeaderBytes}});
  }
}

void HttpServer::stop() {
  if (!server_) {
    return;
  }
  watchdog_.request_stop();
  if (watchdog_.joinable()) {  // not when start() failed to create it
    watchdog_.join();
  }
  server_->stop();
  const auto deadline = std::chrono::steady_clock::now() + opts_.stopGracePeriod;
  while (!exited_->load()) {
    std::set<std::string> busy;
    {
      std::lock_guard lock(peers_->mu);
      busy = peers_->inFlight;
    }
    shutdownConnections(port_, busy, std::chrono::steady_clock::now() >= deadline);
    // Connections that were busy go idle again after their response; look again soon.
    for (int i = 0; i < 10 && !exited_->load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  thread_.join();
  server_.reset();
}

std::optional<std::pair<std::string, int>> parseBindAddress(const std::string& address) {
  if (address.empty() || address == "0") {
    return std::nullopt;
  }
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size()) {
    return std::nullopt;
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  int port = 0;
  for (size_t i = colon + 1; i < address.size(); ++i) {
    if (address[i] < '0' || address[i] > '9' || port > 65535) {
      return std::nullopt;
    }
    port = port * 10 + (address[i] - '0');
  }
  if (port > 65535) {
    return std::nullopt;
  }
  return std::make_pair(host.empty() ? std::string("0.0.0.0") : host, port);
}

}  // namespace ker

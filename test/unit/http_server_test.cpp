#include "common/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/metrics.h"

namespace ker {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// A plain TCP connection to the server, for requests no well-behaved client would send.
class RawConn {
 public:
  // from: the loopback address to connect from (127.0.0.1 unless given), so that one test can
  // be several peers.
  explicit RawConn(int port, const char* from = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (from != nullptr) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      ::inet_pton(AF_INET, from, &local.sin_addr);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
        throw std::runtime_error(std::string("bind to ") + from + " failed");
      }
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      throw std::runtime_error("connect failed");
    }
  }
  ~RawConn() { ::close(fd_); }

  void send(const std::string& data) {
    ASSERT_EQ(::send(fd_, data.data(), data.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(data.size()));
  }

  // Sends without failing the test: false once the server has dropped the connection.
  bool trySend(const std::string& data) {
    return ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
  }

  // Whether the server has closed or reset the connection, without waiting.
  bool closedByPeer() {
    pollfd p{fd_, POLLIN, 0};
    char c;
    return ::poll(&p, 1, 0) > 0 && ::recv(fd_, &c, 1, MSG_DONTWAIT | MSG_PEEK) <= 0;
  }

  // Reads one response framed by Content-Length; what arrived when the peer closes or the
  // timeout passes first.
  std::string readResponse(std::chrono::milliseconds timeout) {
    bool eof = false;
    return readUntil(timeout, eof, [](const std::string& out) {
      const size_t headerEnd = out.find("\r\n\r\n");
      const size_t at = out.find("Content-Length: ");
      return headerEnd != std::string::npos && at < headerEnd &&
             out.size() >= headerEnd + 4 + std::stoul(out.substr(at + 16));
    });
  }

  // Reads until the peer closes (eof = true) or the timeout passes.
  std::string readUntilClosed(std::chrono::milliseconds timeout, bool& eof) {
    return readUntil(timeout, eof, [](const std::string&) { return false; });
  }

 private:
  std::string readUntil(std::chrono::milliseconds timeout, bool& eof,
                        const std::function<bool(const std::string&)>& complete) {
    std::string out;
    eof = false;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!complete(out) && std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) {
        continue;
      }
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        eof = true;  // orderly close or reset: either way the server dropped us
        break;
      }
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  int fd_ = -1;
};

HttpServerOptions loopback() {
  HttpServerOptions opts;
  opts.bindAddress = "127.0.0.1";
  return opts;
}

// The response is complete and self-delimiting: one Content-Length matching the body.
void expectWellFramed(const std::string& reply) {
  const size_t headerEnd = reply.find("\r\n\r\n");
  ASSERT_NE(headerEnd, std::string::npos) << reply;
  const std::string head = reply.substr(0, headerEnd);
  const size_t at = head.find("Content-Length: ");
  ASSERT_NE(at, std::string::npos) << head;
  EXPECT_EQ(head.find("Content-Length: ", at + 1), std::string::npos) << head;
  const size_t len = std::stoul(head.substr(at + 16));
  EXPECT_EQ(reply.size() - headerEnd - 4, len) << reply;
  EXPECT_NE(head.find("Connection: close"), std::string::npos) << head;
}

HttpResponse echo(const HttpRequest& req) {
  return HttpResponse{200, "application/json",
                      req.method + " " + req.path + " " + req.header("X-Test") + " " + req.body};
}

TEST(HttpServer, ServesGetAndPostOnAnEphemeralPort) {
  HttpServerOptions opts = loopback();
  HttpServer server(opts);
  server.get("/hello", echo);
  server.post("/echo", echo);
  server.start();
  ASSERT_GT(server.port(), 0);
  EXPECT_FALSE(server.tls());

  httplib::Client cli("127.0.0.1", server.port());
  auto res = cli.Get("/hello", {{"x-TEST", "v1"}});
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "GET /hello v1 ");
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");

  res = cli.Post("/echo", {{"X-Test", "v2"}}, "{\"a\":1}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "POST /echo v2 {\"a\":1}");

  // Paths match literally: "." is not a regex wildcard, and other paths are 404.
  res = cli.Get("/helloX");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_THROW(server.get("/late", echo), std::logic_error);
}

// A reply spliced from the request (as the NodeList filter answers) arrives whole, also
// when it is larger than the buffer it is written through.
TEST(HttpServer, SplicedRepliesCarryTheRequestBytes) {
  HttpServer server(loopback());
  server.post("/splice", [](const HttpRequest& req) {
    HttpResponse res{200, "application/json", "<"};
    for (size_t at = 0; at < req.body.size(); at += 1000) {
      res.body.insertRequestBytes(at, std::min<size_t>(1000, req.body.size() - at));
      res.body.text += "|";
    }
    res.body.text += ">";
    return res;
  });
  // One slice larger than the server's write buffer, sent from the request as it lies.
  server.post("/whole", [](const HttpRequest& req) {
    return HttpResponse{200, "text/plain", {"[]", {{1, 0, req.body.size()}}}};
  });
  server.post("/outside", [](const HttpRequest& req) {
    return HttpResponse{200, "text/plain", {"x", {{0, req.body.size(), 1}}}};
  });
  server.start();

  std::string request;
  for (int i = 0; request.size() < (size_t{700} << 10); ++i) {
    request += std::to_string(i) + ",";
  }
  std::string want = "<";
  for (size_t at = 0; at < request.size(); at += 1000) {
    want += request.substr(at, 1000) + "|";
  }
  want += ">";
  httplib::Client cli("127.0.0.1", server.port());
  auto res = cli.Post("/splice", request, "text/plain");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(res->body.size(), want.size());
  EXPECT_EQ(res->body, want);
  res = cli.Post("/whole", request, "text/plain");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->body, "[" + request + "]");

  // A handler's slip is a 500, not a read past the request.
  res = cli.Post("/outside", "abc", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 500);
  res = cli.Post("/splice", "still serving", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "<still serving|>");
}

TEST(HttpServer, HandlerExceptionBecomes500AndServingContinues) {
  HttpServer server(loopback());
  server.post("/boom",
              [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("kaput"); });
  server.get("/odd", [](const HttpRequest&) -> HttpResponse { throw 42; });
  server.get("/ok", echo);
  server.start();

  httplib::Client cli("127.0.0.1", server.port());
  auto res = cli.Post("/boom", "x", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 500);
  EXPECT_NE(res->body.find("kaput"), std::string::npos);
  res = cli.Get("/odd");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 500);
  res = cli.Get("/ok");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

class BodyLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions opts = loopback();
    opts.maxBodyBytes = 1024;
    server = std::make_unique<HttpServer>(opts);
    server->post("/echo", [this](const HttpRequest& req) {
      handled++;
      return echo(req);
    });
    server->start();
  }

  std::unique_ptr<HttpServer> server;
  std::atomic<int> handled{0};
};

TEST_F(BodyLimitTest, BodyAtTheLimitIsAccepted) {
  httplib::Client cli("127.0.0.1", server->port());
  auto res = cli.Post("/echo", std::string(1024, 'a'), "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(handled, 1);
}

TEST_F(BodyLimitTest, DeclaredOversizeGets400WithoutSendingTheBody) {
  RawConn conn(server->port());
  conn.send(
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
      "Content-Length: 100000000\r\n\r\n");
  bool eof = false;
  const std::string reply = conn.readUntilClosed(3s, eof);
  EXPECT_EQ(reply.rfind("HTTP/1.1 400", 0), 0u) << reply;
  EXPECT_NE(reply.find("request body exceeds the limit of 1024 bytes"), std::string::npos);
  EXPECT_TRUE(eof) << "the connection must be closed, not drained";
  expectWellFramed(reply);
  EXPECT_EQ(handled, 0);
}

TEST_F(BodyLimitTest, ExpectContinueOversizeGets400Directly) {
  RawConn conn(server->port());
  conn.send(
      "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
      "Content-Length: 5000\r\n\r\n");
  bool eof = false;
  const std::string reply = conn.readUntilClosed(3s, eof);
  EXPECT_EQ(reply.rfind("HTTP/1.1 400", 0), 0u) << reply;
  EXPECT_EQ(reply.find("100 Continue"), std::string::npos);
  EXPECT_TRUE(eof);
  expectWellFramed(reply);
  EXPECT_EQ(handled, 0);
}

TEST_F(BodyLimitTest, ChunkedOversizeIsCutOff) {
  RawConn conn(server->port());
  conn.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  const std::string chunk(800, 'b');
  conn.send("320\r\n" + chunk + "\r\n");
  conn.send("320\r\n" + chunk + "\r\n");
  bool eof = false;
  const std::string reply = conn.readUntilClosed(3s, eof);
  EXPECT_EQ(reply.rfind("HTTP/1.1 400", 0), 0u) << reply;
  EXPECT_TRUE(eof);
  expectWellFramed(reply);
  EXPECT_EQ(handled, 0);
}

TEST(HttpServer, StalledClientIsDroppedWhileOthersAreServed) {
  HttpServerOptions opts = loopback();
  opts.readTimeout = 500ms;
  opts.threads = 2;
  HttpServer server(opts);
  server.get("/ok", echo);
  server.start();

  RawConn stalled(server.port());
  stalled.send("GET /ok HTTP/1.1\r\nHost: x\r\nX-Partial: ");
  const auto start = std::chrono::steady_clock::now();

  httplib::Client cli("127.0.0.1", server.port());
  auto res = cli.Get("/ok");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 400ms) << "served while one peer stalls";

  bool eof = false;
  const std::string reply = stalled.readUntilClosed(5s, eof);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(eof);
  EXPECT_EQ(reply.rfind("HTTP/1.1 400", 0), 0u) << reply;
  expectWellFramed(reply);
  EXPECT_GE(elapsed, 400ms);
  EXPECT_LT(elapsed, 3s);
}

// A GET from 127.0.0.1 gets a 200.
void expectServed(int port, const char* path) {
  httplib::Client cli("127.0.0.1", port);
  auto res = cli.Get(path);
  ASSERT_TRUE(res) << path;
  EXPECT_EQ(res->status, 200) << path;
}

// A server without a POST route (the health and metrics ports) takes no body: a large POST is
// refused from its headers, before any of the body is read, and the connection closed.
TEST(HttpServer, AGetOnlyServerRefusesABodyBeforeReadingIt) {
  HttpServer server(loopback());
  server.mountHealth();
  server.start();
  for (const char* path : {"/healthz", "/no-such-path"}) {
    RawConn conn(server.port());
    conn.send(std::string("POST ") + path +
              " HTTP/1.1\r\nHost: x\r\nContent-Length: 62000000\r\n\r\n" + std::string(1024, 'x'));
    bool eof = false;
    const std::string reply = conn.readUntilClosed(5s, eof);
    EXPECT_TRUE(eof) << path;
    EXPECT_EQ(reply.rfind("HTTP/1.1 400", 0), 0u) << reply;
    EXPECT_NE(reply.find("exceeds the limit of 0 bytes"), std::string::npos) << reply;
  }
  // Nor in chunks, which declare no length.
  RawConn chunked(server.port());
  chunked.send(
      "POST /no-such-path HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "400\r\n" +
      std::string(1024, 'x') + "\r\n");
  bool eof = false;
  const std::string reply = chunked.readUntilClosed(5s, eof);
  EXPECT_TRUE(eof);
  EXPECT_EQ(reply.rfind("HTTP/1.1 4", 0), 0u) << reply;
  expectServed(server.port(), "/healthz");  // GETs are served as before
}

// One peer address holding more connections than allowed loses its newest ones; another peer
// (a prober) is served meanwhile.
TEST(HttpServer, APeerOverItsConnectionLimitLosesItsNewestConnections) {
  HttpServerOptions opts = loopback();
  opts.bindAddress = "0.0.0.0";
  opts.maxConnectionsPerPeer = 2;
  opts.threads = 4;
  opts.keepAliveTimeout = 30s;
  opts.requestTimeout = 30s;
  opts.readTimeout = 30s;
  HttpServer server(opts);
  server.mountHealth();
  server.start();
  RawConn first(server.port(), "127.0.0.2");
  RawConn second(server.port(), "127.0.0.2");
  std::this_thread::sleep_for(1200ms);  // seen by the watchdog before the next two
  RawConn third(server.port(), "127.0.0.2");
  RawConn fourth(server.port(), "127.0.0.2");
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!(third.closedByPeer() && fourth.closedByPeer()) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(third.closedByPeer());
  EXPECT_TRUE(fourth.closedByPeer());
  EXPECT_FALSE(first.closedByPeer());
  EXPECT_FALSE(second.closedByPeer());
  expectServed(server.port(), "/healthz");
}

// The settings of the components' health and metrics servers: a flood of slow connections
// from one peer leaves the probes served.
TEST(HttpServer, ProbesAreServedWhileOnePeerHoldsSlowConnections) {
  HttpServerOptions opts = probeServerOptions("0.0.0.0", 0);
  HttpServer server(opts);
  server.mountHealth();
  server.start();
  std::vector<std::unique_ptr<RawConn>> slow;
  for (int i = 0; i < 20; ++i) {
    slow.push_back(std::make_unique<RawConn>(server.port(), "127.0.0.3"));
    slow.back()->send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ");
  }
  int served = 0;
  for (int i = 0; i < 10; ++i) {
    httplib::Client cli("127.0.0.1", server.port());
    cli.set_connection_timeout(2s);
    cli.set_read_timeout(2s);
    auto res = cli.Get("/healthz");
    served += res && res->status == 200 ? 1 : 0;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(served, 10);
}

// The most connections the kernel queues for accept() on this process's listener on port
// (TCP_INFO names it tcpi_sacked for a listening socket); -1 when there is no such listener.
int listenBacklog(int port) {
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    const int fd = std::atoi(entry.path().filename().c_str());
    sockaddr_in local{};
    socklen_t len = sizeof local;
    int listening = 0;
    socklen_t optLen = sizeof listening;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0 ||
        local.sin_family != AF_INET || ntohs(local.sin_port) != port ||
        getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &optLen) != 0 || listening == 0) {
      continue;
    }
    tcp_info info{};
    len = sizeof info;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0) {
      return static_cast<int>(info.tcpi_sacked);
    }
  }
  return -1;
}

// A burst of connections (a crowd from one peer, then a probe) must wait in the kernel's queue
// while the accept thread waits for a CPU: a handshake dropped from a full queue costs the
// client a 1 s retransmission, a kubelet probe's whole timeout.
TEST(HttpServer, ItsListenQueueHoldsABurstOfConnections) {
  HttpServer server(probeServerOptions("127.0.0.1", 0));
  server.mountHealth();
  server.start();
  EXPECT_GE(listenBacklog(server.port()), 128);
}

TEST(HttpServer, HealthReadinessAndMetrics) {
  metrics::Registry registry;
  std::atomic<bool> ready{false};
  HttpServer server(loopback());
  server.mountHealth({{"synced",
                       [&]() -> std::optional<std::string> {
                         if (ready)
                           return std::nullopt;
                         return "caches not synced";
                       }},
                      {"other", [] { return std::optional<std::string>(); }}});
  server.mountMetrics(registry);
  server.post("/work", echo);
  server.start();

  httplib::Client cli("127.0.0.1", server.port());
  auto res = cli.Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  res = cli.Get("/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(res->body, "[-]synced failed: caches not synced\n[+]other ok\nreadyz check failed\n");
  ready = true;
  res = cli.Get("/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);

  ASSERT_TRUE(cli.Post("/work", "x", "text/plain"));
  ASSERT_TRUE(cli.Get("/not-a-route"));
  res = cli.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), metrics::Registry::kContentType);
  EXPECT_NE(res->body.find("http_requests_total{path=\"/work\",method=\"POST\",code=\"200\"} 1\n"),
            std::string::npos)
      << res->body;
  EXPECT_NE(res->body.find("http_requests_total{path=\"/readyz\",method=\"GET\",code=\"503\"} 1\n"),
            std::string::npos);
  EXPECT_NE(
      res->body.find("http_request_duration_seconds_count{path=\"/work\",method=\"POST\"} 1\n"),
      std::string::npos);
}

TEST(HttpServer, StopIsPromptWithAnIdleKeepAliveConnection) {
  HttpServerOptions opts = loopback();
  opts.keepAliveTimeout = 30s;
  auto server = std::make_unique<HttpServer>(opts);
  server->get("/ok", echo);
  server->start();
  httplib::Client cli("127.0.0.1", server->port());
  cli.set_keep_alive(true);
  ASSERT_TRUE(cli.Get("/ok"));

  const auto start = std::chrono::steady_clock::now();
  server->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  server->stop();  // idempotent
}

TEST(HttpServer, StopLetsARequestInFlightFinish) {
  auto server = std::make_unique<HttpServer>(loopback());
  std::atomic<bool> entered{false};
  server->get("/slow", [&](const HttpRequest&) {
    entered = true;
    std::this_thread::sleep_for(300ms);
    return HttpResponse{200, "text/plain", "done"};
  });
  server->start();
  int status = 0;
  std::string body;
  std::thread client([&] {
    if (auto res = httplib::Client("127.0.0.1", server->port()).Get("/slow")) {
      status = res->status;
      body = res->body;
    }
  });
  while (!entered) {
    std::this_thread::sleep_for(1ms);
  }
  server->stop();
  client.join();
  EXPECT_EQ(status, 200);
  EXPECT_EQ(body, "done");
}

TEST(HttpServer, StartFailuresAreReported) {
  HttpServer first(loopback());
  first.start();
  HttpServerOptions clash = loopback();
  clash.port = first.port();
  HttpServer second(clash);
  EXPECT_THROW(second.start(), std::runtime_error);

  HttpServerOptions badTls = loopback();
  badTls.certFile = "/nonexistent/tls.crt";
  badTls.keyFile = "/nonexistent/tls.key";
  HttpServer third(badTls);
  try {
    third.start();
    FAIL() << "expected a TLS error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/tls.crt"), std::string::npos);
  }
}

// Deadlines small enough for a test: a connection gets keepAliveTimeout + requestTimeout (2 s)
// to send each request, and requestTimeout to take each response.
HttpServerOptions quickDeadlines() {
  HttpServerOptions opts = loopback();
  opts.keepAliveTimeout = 1s;
  opts.requestTimeout = 1s;
  return opts;
}

double timedOut(metrics::Registry& registry) {
  return registry.counter("http_connections_timed_out_total", "").get().value();
}

TEST(HttpServer, PeerTricklingItsRequestIsCutAtTheDeadline) {
  metrics::Registry registry;
  HttpServer server(quickDeadlines());
  server.mountMetrics(registry);
  server.get("/ok", echo);
  server.start();

  const auto start = std::chrono::steady_clock::now();
  RawConn slow(server.port());
  // A byte every 200 ms, well within the read timeout; the headers never end.
  const std::string request = "GET /ok HTTP/1.1\r\nHost: x\r\nX-Slow: " + std::string(60, 'a');
  bool closed = false;
  for (size_t i = 0; i < request.size() && !closed; ++i) {
    std::this_thread::sleep_for(200ms);
    closed = slow.closedByPeer() || !slow.trySend(request.substr(i, 1));
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(closed) << "still connected after "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()
                      << " ms";
  EXPECT_GE(elapsed, 2s) << "cut before keepAliveTimeout + requestTimeout";

  // Counted just after the cut.
  for (int i = 0; i < 250 && timedOut(registry) < 1; ++i) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(timedOut(registry), 1);

  httplib::Client cli("127.0.0.1", server.port());
  auto res = cli.Get("/ok");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST(HttpServer, RequestHeadersOverTheLimitGetTheConnectionCut) {
  HttpServerOptions opts = loopback();
  opts.maxHeaderBytes = 64 << 10;
  HttpServer server(opts);
  server.get("/ok", echo);
  server.start();

  const std::string line = "X-Pad: " + std::string(4000, 'a') + "\r\n";
  RawConn flood(server.port());
  bool closed = !flood.trySend("GET /ok HTTP/1.1\r\nHost: x\r\n");
  size_t sent = 0;
  // Stops at 64 MiB in any case; then the cut comes at the watchdog's next look (every half
  // second), not at the request deadline (35 s).
  while (!closed && sent < (size_t{64} << 20)) {
    closed = flood.closedByPeer() || !flood.trySend(line);
    sent += line.size();
  }
  bool eof = closed;
  if (!closed) {
    flood.readUntilClosed(5s, eof);
  }
  EXPECT_TRUE(eof) << sent << " bytes of headers accepted";

  std::string within = "GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
  for (int i = 0; i < 8; ++i) {
    within += line;
  }
  RawConn fine(server.port());
  fine.send(within + "\r\n");
  EXPECT_NE(fine.readResponse(5s).find("200 OK"), std::string::npos);
}

// A started server whose header limit is 64 KiB and whose POST /echo answers the size of the
// body it got.
std::unique_ptr<HttpServer> bodySizeServer() {
  HttpServerOptions opts = loopback();
  opts.maxHeaderBytes = 64 << 10;
  auto server = std::make_unique<HttpServer>(opts);
  server->post("/echo", [](const HttpRequest& req) {
    return HttpResponse{200, "text/plain", std::to_string(req.body.size())};
  });
  server->start();
  return server;
}

// A body many times the header limit, sent slowly enough for the watchdog to look several
// times while it arrives, is a body: not counted against the headers.
TEST(HttpServer, ABodyArrivingSlowlyIsNotCountedAsHeaders) {
  auto server = bodySizeServer();

  const std::string piece(64 << 10, 'b');
  constexpr int kPieces = 16;
  RawConn conn(server->port());
  conn.send("POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: " +
            std::to_string(piece.size() * kPieces) + "\r\n\r\n");
  for (int i = 0; i < kPieces; ++i) {
    std::this_thread::sleep_for(100ms);
    ASSERT_TRUE(conn.trySend(piece)) << "cut after " << i << " pieces";
  }
  const std::string reply = conn.readResponse(5s);
  EXPECT_NE(reply.find("200 OK"), std::string::npos) << reply.substr(0, 200);
  EXPECT_NE(reply.find(std::to_string(piece.size() * kPieces)), std::string::npos);
}

// A keep-alive connection whose first request, its body many times the header limit, is
// answered before the watchdog first sees it (a look every 200 ms; the request takes a few)
// is idle after it, not sending headers: it is kept, and its next request answered.
TEST(HttpServer, ALargeRequestAnsweredBeforeTheFirstLookIsNotCountedAsHeaders) {
  auto server = bodySizeServer();

  const std::string body(1 << 20, 'b');
  const std::string request =
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body;
  // Several connections, so that one whose request the watchdog happened to see in flight
  // does not hide the case.
  std::vector<std::unique_ptr<RawConn>> conns;
  for (int i = 0; i < 5; ++i) {
    conns.push_back(std::make_unique<RawConn>(server->port()));
    conns.back()->send(request);
    const std::string reply = conns.back()->readResponse(5s);
    ASSERT_NE(reply.find("200 OK"), std::string::npos) << reply.substr(0, 200);
  }
  std::this_thread::sleep_for(600ms);  // the watchdog looks at each connection at least twice
  for (size_t i = 0; i < conns.size(); ++i) {
    ASSERT_TRUE(conns[i]->trySend(request)) << "connection " << i << " was cut";
    const std::string reply = conns[i]->readResponse(5s);
    EXPECT_NE(reply.find("200 OK"), std::string::npos)
        << "connection " << i << ": " << reply.substr(0, 200);
  }
}

TEST(HttpServer, HandlerSlowerThanTheRequestTimeoutIsNotCut) {
  metrics::Registry registry;
  std::atomic<int> calls{0};
  const std::string body(1 << 20, 'x');
  HttpServer server(quickDeadlines());  // after what its handler uses: it may outlive a failure
  server.mountMetrics(registry);
  server.get("/slow", [&](const HttpRequest&) {
    ++calls;
    // Past both deadlines, over several watchdog rounds.
    std::this_thread::sleep_for(3s);
    return HttpResponse{200, "text/plain", body};
  });
  server.start();

  httplib::Client cli("127.0.0.1", server.port());
  cli.set_read_timeout(20s);
  auto res = cli.Get("/slow");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body.size(), body.size());
  EXPECT_TRUE(res->body == body);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(timedOut(registry), 0);
}

TEST(HttpServer, KeepAliveClientWithinTheDeadlinesKeepsItsConnection) {
  metrics::Registry registry;
  HttpServerOptions opts = loopback();
  opts.keepAliveTimeout = 2s;
  opts.requestTimeout = 500ms;
  HttpServer server(opts);
  server.mountMetrics(registry);
  server.get("/ok", echo);
  server.start();

  // Idle longer than requestTimeout between requests, never longer than keepAliveTimeout, and
  // connected well past keepAliveTimeout + requestTimeout: each response renews the deadline.
  RawConn conn(server.port());
  for (int i = 0; i < 4; ++i) {
    if (i > 0) {
      std::this_thread::sleep_for(1200ms);
    }
    conn.send("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n");
    const std::string reply = conn.readResponse(5s);
    ASSERT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << "request " << i << ": " << reply;
    EXPECT_TRUE(reply.ends_with("\r\n\r\nGET /ok  ")) << reply;
  }
  EXPECT_EQ(timedOut(registry), 0);
}

TEST(HttpServer, NonPositiveRequestTimeoutIsRejected) {
  for (const std::chrono::milliseconds timeout : {0ms, -1000ms}) {
    HttpServerOptions opts = loopback();
    opts.requestTimeout = timeout;
    HttpServer server(opts);
    EXPECT_THROW(server.start(), std::invalid_argument) << timeout.count();
  }
}

// Throwaway PKI made with the openssl CLI: a CA, a server certificate for 127.0.0.1, a client
// certificate from the CA, and one from an unrelated CA.
class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/ker-http-tls-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir = tmpl;
    write("req.cnf", "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = unused\n");
    write("server.ext",
          "basicConstraints = CA:FALSE\nkeyUsage = critical,digitalSignature\n"
          "extendedKeyUsage = serverAuth\nsubjectAltName = IP:127.0.0.1,DNS:localhost\n");
    write("client.ext",
          "basicConstraints = CA:FALSE\nkeyUsage = critical,digitalSignature\n"
          "extendedKeyUsage = clientAuth\n");
    write("named.ext",
          "basicConstraints = CA:FALSE\nkeyUsage = critical,digitalSignature\n"
          "extendedKeyUsage = clientAuth\nsubjectAltName = DNS:scheduler.example\n");
    const std::string script =
        "set -e; cd " + dir +
        "\n"
        "key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out $1.key; }\n"
        "ca() { key $1; openssl req -config req.cnf -new -x509 -days 1 -key $1.key "
        "-subj /CN=$1 -out $1.crt -addext basicConstraints=critical,CA:TRUE "
        "-addext keyUsage=critical,keyCertSign,cRLSign; }\n"
        "leaf() { key $1; openssl req -config req.cnf -new -key $1.key -subj /CN=$1 -out $1.csr; "
        "openssl x509 -req -days 1 -in $1.csr -CA $2.crt -CAkey $2.key -CAcreateserial "
        "-extfile $3 -out $1.crt; }\n"
        "ca ca; ca otherca\n"
        "leaf server ca server.ext; leaf client ca client.ext; leaf stranger otherca client.ext\n"
        "leaf other ca client.ext; leaf named ca named.ext\n";
    write("gen.sh", script);
    const std::string cmd = "bash " + dir + "/gen.sh >" + dir + "/gen.log 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << "openssl failed, see " << dir << "/gen.log";
  }
  static void TearDownTestSuite() { fs::remove_all(dir); }

  static void write(const std::string& name, const std::string& content) {
    std::ofstream(dir + "/" + name) << content;
  }
  static std::string path(const std::string& name) { return dir + "/" + name; }

  std::unique_ptr<HttpServer> startServer(bool mutual, std::vector<std::string> allowed = {}) {
    HttpServerOptions opts = loopback();
    opts.certFile = path("server.crt");
    opts.keyFile = path("server.key");
    if (mutual) {
      opts.clientCaFile = path("ca.crt");
      opts.allowedClientNames = std::move(allowed);
    }
    opts.readTimeout = 1s;
    auto server = std::make_unique<HttpServer>(opts);
    server->get("/ok", echo);
    server->start();
    return server;
  }

  static std::unique_ptr<httplib::SSLClient> client(int port, const std::string& cert = {}) {
    auto cli = cert.empty() ? std::make_unique<httplib::SSLClient>("127.0.0.1", port)
                            : std::make_unique<httplib::SSLClient>(
                                  "127.0.0.1", port, path(cert + ".crt"), path(cert + ".key"));
    cli->set_ca_cert_path(path("ca.crt").c_str());
    cli->enable_server_certificate_verification(true);
    cli->set_connection_timeout(2s);
    cli->set_read_timeout(2s);
    return cli;
  }

  static inline std::string dir;
};

TEST_F(TlsTest, ServesHttps) {
  auto server = startServer(false);
  EXPECT_TRUE(server->tls());
  auto res = client(server->port())->Get("/ok");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);

  // Plain HTTP to the TLS port gets no HTTP answer.
  httplib::Client plain("127.0.0.1", server->port());
  plain.set_read_timeout(2s);
  auto bad = plain.Get("/ok");
  EXPECT_TRUE(!bad || bad->status != 200);
}

TEST_F(TlsTest, MutualTlsRequiresAClientCertificateFromTheCa) {
  auto server = startServer(true);
  auto anonymous = client(server->port())->Get("/ok");
  EXPECT_FALSE(anonymous) << "a client without a certificate must be rejected";

  auto stranger = client(server->port(), "stranger")->Get("/ok");
  EXPECT_FALSE(stranger) << "a certificate from another CA must be rejected";

  auto res = client(server->port(), "client")->Get("/ok");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
}

// The CA signs more than kube-scheduler's certificate: only the names allowed get through,
// by CN or DNS SAN, refused in the handshake before any handler runs.
TEST_F(TlsTest, AllowedClientNamesRefuseOtherCertificatesOfTheSameCa) {
  auto server = startServer(true, {"client", "scheduler.example"});
  auto other = client(server->port(), "other")->Get("/ok");
  EXPECT_FALSE(other) << "a certificate of the CA with another name must be rejected";
  for (const char* cert : {"client", "named"}) {
    auto res = client(server->port(), cert)->Get("/ok");
    ASSERT_TRUE(res) << cert << ": " << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200) << cert;
  }
  // Names without a client CA to check them against are a mistake, not a looser server.
  HttpServerOptions opts = loopback();
  opts.certFile = path("server.crt");
  opts.keyFile = path("server.key");
  opts.allowedClientNames = {"client"};
  HttpServer unchecked(opts);
  EXPECT_THROW(unchecked.start(), std::runtime_error);
}

TEST_F(TlsTest, StalledHandshakeIsDroppedWhileOthersAreServed) {
  auto server = startServer(false);
  RawConn stalled(server->port());
  const auto start = std::chrono::steady_clock::now();
  auto res = client(server->port())->Get("/ok");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  bool eof = false;
  stalled.readUntilClosed(6s, eof);
  EXPECT_TRUE(eof);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

}  // namespace
}  // namespace ker

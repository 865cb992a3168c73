#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace httplib {
class Server;
}

namespace ker {
class HttpServer;
}

namespace ker::bench {

struct Reply {
  int status = 0;
  std::string body;  // as received: gzip-compressed when `gzipped`
  bool gzipped = false;
};

// One HTTP/1.1 keep-alive connection to 127.0.0.1:port that sends what kube-scheduler's Go
// client sends (net/http defaults: TCP_NODELAY, Accept-Encoding: gzip). Reconnects when the
// server closed the connection (the extender ends one after 100 requests). Throws
// std::runtime_error on I/O failures.
class Connection {
 public:
  explicit Connection(int port, bool acceptGzip = true);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  Reply post(const std::string& path, std::string_view body);
  Reply get(const std::string& path);

 private:
  Reply roundTrip(std::string_view head, std::string_view body);
  void open();
  void close();
  bool readMore();

  int port_;
  bool acceptGzip_;
  int fd_ = -1;
  std::string in_;  // bytes received and not yet consumed
  // What recv() writes into, allocated once: growing in_ by a zero-filled megabyte per
  // recv() cost the load generator more CPU than the extender it shares the cores with.
  std::unique_ptr<char[]> chunk_;
};

// The decoded body of a reply.
std::string decodedBody(const Reply& reply);

struct LoadOptions {
  int concurrency = 1;
  size_t minRequests = 5;
  size_t maxRequests = 2000;
  std::chrono::milliseconds duration{1500};  // stop after this once minRequests are done
  size_t warmupPerConnection = 2;
  bool acceptGzip = true;
};

struct LoadResult {
  size_t requests = 0;
  size_t errors = 0;  // replies other than 200
  double p50Ms = 0;
  double p99Ms = 0;
  double rps = 0;
  size_t replyWireBytes = 0;  // of the last reply, as sent on the wire
};

// POSTs `body` to path as fast as `concurrency` connections allow.
LoadResult runLoad(int port, const std::string& path, const std::string& body,
                   const LoadOptions& opts);

// A server that reads each request's body and answers 200 "{}", doing nothing else.
// kTransport: cpp-httplib as the extender uses it (thread pool, keep-alive, body limit) but with
// TCP_NODELAY, so it measures moving the bytes. kExtenderStack: the extender's own
// ker::HttpServer as configured today, so it also shows what that stack adds to every call.
class FloorServer {
 public:
  enum class Stack { kTransport, kExtenderStack };
  explicit FloorServer(Stack stack);
  ~FloorServer();
  int port() const { return port_; }

 private:
  std::unique_ptr<HttpServer> stack_;
  std::unique_ptr<httplib::Server> bare_;
  std::thread thread_;
  int port_ = 0;
};

// Median time of a plain nlohmann::json::parse of body, the naive decoder, in milliseconds.
double domParseMs(const std::string& body, int runs);

// Nearest-rank percentile of unsorted samples (0 when empty).
double percentile(std::vector<double> samples, double p);
// The middle sample, or the mean of the two middle ones for an even count (0 when empty): the
// summary of a few runs, where taking the lower of two would report the slower run alone.
double median(std::vector<double> samples);

}  // namespace ker::bench

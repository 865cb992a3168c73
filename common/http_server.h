#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common/http_message.h"
#include "common/metrics.h"

namespace httplib {
class Server;
}

namespace ker {

// "host:port" or ":port" (any address) split; nullopt when malformed or disabled ("", "0").
std::optional<std::pair<std::string, int>> parseBindAddress(const std::string& address);

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  std::string bindAddress = "0.0.0.0";
  int port = 0;  // 0 = an ephemeral port, see HttpServer::port()
  // Both set: HTTPS. clientCaFile set as well: mutual TLS, a client certificate signed by
  // that CA is required.
  std::string certFile = {};  // `= {}`: designated initializers may omit these
  std::string keyFile = {};
  std::string clientCaFile = {};
  // With clientCaFile: only a client certificate whose CN or a DNS SAN is one of these
  // (exactly, no wildcards) completes the handshake; a CA signs more than one client. Empty:
  // any certificate the CA signed.
  std::vector<std::string> allowedClientNames = {};
  // Larger bodies get 400 with a JSON `Error` as soon as that is known (from Content-Length, or
  // while reading a chunked body) and the connection is closed rather than drained. A server
  // with no POST route takes no body at all (bodyLimit).
  size_t maxBodyBytes = size_t{64} << 20;
  // A connection from which httplib reads more than this (TLS framing included) while no
  // request of it is past its headers is cut: httplib 0.11 limits each header line but not
  // their number.
  // Checked with the request deadlines, so a fast sender gets up to one check's worth more.
  size_t maxHeaderBytes = size_t{1} << 20;
  // Per socket read/write: a peer that stalls this long mid-request is disconnected.
  std::chrono::milliseconds readTimeout{std::chrono::seconds(10)};
  std::chrono::milliseconds writeTimeout{std::chrono::seconds(10)};
  std::chrono::seconds keepAliveTimeout{5};  // idle time before a kept-alive connection closes
  // Per request, for peers that trickle bytes just fast enough to dodge the timeouts above:
  // a connection still receiving a request keepAliveTimeout + requestTimeout after it was
  // accepted or sent its previous response (httplib tells nothing of when the next request
  // starts; an idle connection waits at most keepAliveTimeout for it), or still sending a
  // response requestTimeout after the handler returned, is shut down. Time in a handler never
  // counts. Checked every half second; must be positive.
  std::chrono::milliseconds requestTimeout{std::chrono::seconds(30)};
  size_t keepAliveMaxRequests = 100;
  // How long stop() lets requests in flight finish before cutting their connections.
  std::chrono::milliseconds stopGracePeriod{std::chrono::seconds(5)};
  // Worker threads; each open connection (idle keep-alive ones included) occupies one.
  size_t threads = 8;
  // How many connections one peer address may hold open at once; 0 = no limit. Beyond it the
  // peer's newest connections are cut (within a watchdog period), so no single client can hold
  // every worker and starve the others (the kubelet's probes, the metrics scraper).
  size_t maxConnectionsPerPeer = 0;
};

// A GET-only health and metrics server (the node agent's, the controller's): reachable by any pod
// that is not kept out by a NetworkPolicy, so it takes no body, gives each peer address at most two
// connections, and drops slow peers within seconds, while the probes (one small GET each) fit well
// within those bounds.
HttpServerOptions probeServerOptions(const std::string& address, int port);

// One named condition of /readyz: problem() is empty while it holds, else says why not.
struct ReadyCheck {
  std::string name;
  std::function<std::optional<std::string>()> problem;
};

// A check that passes while ok() holds and otherwise reports `problem`.
ReadyCheck readyWhen(std::string name, std::function<bool()> ok, std::string problem);

// True when no check reports a problem: what /readyz answers 200 for.
bool allReady(const std::vector<ReadyCheck>& checks);

// A small HTTP(S) server over cpp-httplib. Register routes (exact paths), then start(); the
// listener runs on its own thread. A handler that throws yields a 500 with the exception's
// message; it never takes the server down.
class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions opts);
  ~HttpServer();  // stops
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Routes must be added before start() (std::logic_error otherwise).
  void get(const std::string& path, HttpHandler handler);
  void post(const std::string& path, HttpHandler handler);
  // GET /healthz (always 200 "ok" while serving) and GET /readyz: 200 "ok" when every check
  // passes, else 503 with one line per check, kube-apiserver's way ("[+]name ok",
  // "[-]name failed: why").
  void mountHealth(std::vector<ReadyCheck> checks = {});
  // GET /metrics renders the registry, which must outlive the server. Requests to the other
  // routes are counted in it (http_requests_total{path,method,code}) and timed
  // (http_request_duration_seconds{path,method}), and so are connections cut for missing
  // requestTimeout (http_connections_timed_out_total).
  void mountMetrics(metrics::Registry& registry);

  // Binds and starts serving; throws std::runtime_error when the address cannot be bound or
  // the TLS files cannot be loaded (std::invalid_argument for a requestTimeout that is not
  // positive). Returns once the server accepts connections.
  void start();
  // Stops accepting, closes idle connections and joins the threads. Requests in flight
  // finish first, for up to stopGracePeriod. Idempotent.
  void stop();

  int port() const { return port_; }  // the bound port, valid after start()
  bool tls() const { return !opts_.certFile.empty(); }

 private:
  struct Route {
    std::string method;
    std::string path;
    HttpHandler handler;
  };
  using Clock = std::chrono::steady_clock;
  // A connection the watchdog has seen, by socket inode: fds are reused, inodes are not.
  struct Watched {
    Clock::time_point firstSeen;
    bool cut = false;                 // logged and counted once
    uint64_t headerStart = 0;         // bytes read when the current header phase began
    Clock::time_point progress = {};  // the last request deadline seen set
  };

  void addRoute(std::string method, const std::string& path, HttpHandler handler);
  HttpResponse dispatch(const Route& route, const HttpRequest& req, const std::string& peer);
  HttpResponse tooLarge(const std::string& method, const std::string& path);
  // The largest request body taken: opts_.maxBodyBytes where a route takes one (POST), else 0.
  size_t bodyLimit() const;
  void count(const std::string& method, const std::string& path, int status, double seconds);
  // Shuts down the connections past their deadline; watched is the watchdog's memory and
  // previousLook the time of its last call.
  void cutOverdue(std::map<ino_t, Watched>& watched, Clock::time_point previousLook);

  HttpServerOptions opts_;
  std::vector<Route> routes_;
  metrics::CounterFamily* requests_ = nullptr;
  metrics::HistogramFamily* latency_ = nullptr;
  metrics::Counter* timedOut_ = nullptr;
  // Per peer ("addr:port"), as httplib's callbacks see them.
  struct Peers {
    std::mutex mu;
    // From routing until the response is written; stop() spares their connections.
    std::set<std::string> inFlight;
    // Inside a handler; the watchdog spares their connections.
    std::set<std::string> handling;
    // The request deadline set when a handler returned or a response was written, and when.
    struct Deadline {
      Clock::time_point set;
      Clock::time_point at;
    };
    std::map<std::string, Deadline> deadlines;
  };
  std::shared_ptr<Peers> peers_ = std::make_shared<Peers>();
  std::unique_ptr<httplib::Server> server_;
  std::shared_ptr<std::atomic<bool>> exited_;
  std::thread thread_;
  int port_ = 0;
  std::jthread watchdog_;  // cuts connections that miss requestTimeout
};

}  // namespace ker

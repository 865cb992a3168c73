#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>

namespace ker::soak {

// A TCP relay on 127.0.0.1 in front of the API server. The extenders and controllers reach the
// API server through it, so the soak can cut every connection they hold (watches and requests
// in flight alike) at one moment, as a network blip or a load-balancer failover does, while
// the API server itself stays up. TLS passes through untouched.
class TcpProxy {
 public:
  explicit TcpProxy(int targetPort);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  // Severs every open connection; returns how many there were.
  size_t cutAll();
  uint64_t accepted() const { return accepted_.load(); }

 private:
  struct Pair {
    int client;
    int server;
  };
  void acceptLoop();
  void relay(uint64_t id, Pair pair);

  const int targetPort_;
  int listenFd_ = -1;
  int port_ = 0;
  int wakePipe_[2] = {-1, -1};
  std::atomic<uint64_t> accepted_{0};
  std::mutex mu_;
  std::condition_variable idle_;
  std::map<uint64_t, Pair> open_;  // guarded by mu_
  size_t relays_ = 0;              // running relay threads, guarded by mu_
  std::thread acceptor_;
};

}  // namespace ker::soak

#include "test/soak/tcp_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ker::soak {

namespace {

sockaddr_in loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

bool writeAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) {
      continue;
    }
    if (w <= 0) {
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

TcpProxy::TcpProxy(int targetPort) : targetPort_(targetPort) {
  listenFd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = loopback(0);
  socklen_t len = sizeof addr;
  if (listenFd_ < 0 || bind(listenFd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listenFd_, 128) != 0 ||
      getsockname(listenFd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      pipe2(wakePipe_, O_CLOEXEC) != 0) {
    std::string err = std::strerror(errno);
    if (listenFd_ >= 0) {
      close(listenFd_);
    }
    throw std::runtime_error("proxy: cannot listen on 127.0.0.1: " + err);
  }
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { acceptLoop(); });
}

TcpProxy::~TcpProxy() {
  char byte = 0;
  [[maybe_unused]] ssize_t ignored = write(wakePipe_[1], &byte, 1);
  acceptor_.join();
  cutAll();
  std::unique_lock lock(mu_);
  idle_.wait(lock, [this] { return relays_ == 0; });
  close(listenFd_);
  close(wakePipe_[0]);
  close(wakePipe_[1]);
}

void TcpProxy::acceptLoop() {
  uint64_t nextId = 0;
  while (true) {
    pollfd fds[2] = {{listenFd_, POLLIN, 0}, {wakePipe_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      return;
    }
    if (fds[1].revents != 0) {
      return;
    }
    int client = accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      continue;
    }
    int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in target = loopback(targetPort_);
    if (server < 0 || connect(server, reinterpret_cast<sockaddr*>(&target), sizeof target) != 0) {
      // The API server is down (restarting): the client sees the refusal as a reset.
      if (server >= 0) {
        close(server);
      }
      close(client);
      continue;
    }
    int one = 1;
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ++accepted_;
    const uint64_t id = nextId++;
    {
      std::lock_guard lock(mu_);
      open_[id] = {client, server};
      ++relays_;
    }
    std::thread([this, id, client, server] { relay(id, {client, server}); }).detach();
  }
}

void TcpProxy::relay(uint64_t id, Pair pair) {
  char buf[64 * 1024];
  while (true) {
    pollfd fds[2] = {{pair.client, POLLIN, 0}, {pair.server, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;
    }
    bool ok = true;
    for (int i = 0; i < 2 && ok; ++i) {
      if (fds[i].revents == 0) {
        continue;
      }
      ssize_t n = recv(fds[i].fd, buf, sizeof buf, 0);
      ok = n > 0 && writeAll(i == 0 ? pair.server : pair.client, buf, static_cast<size_t>(n));
    }
    if (!ok) {
      break;
    }
  }
  std::lock_guard lock(mu_);
  open_.erase(id);
  close(pair.client);
  close(pair.server);
  --relays_;
  idle_.notify_all();
}

size_t TcpProxy::cutAll() {
  std::lock_guard lock(mu_);
  // shutdown wakes the relay thread, which closes the sockets; closing them here could hand
  // their descriptors to a new connection while the relay still polls them.
  for (const auto& [id, pair] : open_) {
    shutdown(pair.client, SHUT_RDWR);
    shutdown(pair.server, SHUT_RDWR);
  }
  return open_.size();
}

}  // namespace ker::soak

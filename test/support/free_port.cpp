#include "test/support/free_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <set>
#include <stdexcept>

namespace ker::testsupport {
namespace {

int unboundPort() {
  // CLOEXEC: a child forked meanwhile by another thread would otherwise keep the port bound.
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    throw std::runtime_error("socket() failed");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  if (!ok) {
    throw std::runtime_error("no free port on 127.0.0.1");
  }
  return ntohs(addr.sin_port);
}

}  // namespace

int freePort() {
  // The kernel may offer a port it offered a moment ago, since the probe socket is closed
  // before the child binds; two ports asked for back to back (a server's and its health
  // port) then collide. Every port handed out is remembered so none is handed out twice.
  static std::mutex mu;
  static std::set<int> handedOut;
  constexpr int kAttempts = 64;
  const std::lock_guard lock(mu);
  for (int i = 0; i < kAttempts; ++i) {
    const int port = unboundPort();
    if (handedOut.insert(port).second) {
      return port;
    }
  }
  throw std::runtime_error("no port on 127.0.0.1 that was not handed out before");
}

}  // namespace ker::testsupport

// On its own because <linux/tcp.h>, the only header with tcpi_bytes_received, clashes with
// <netinet/tcp.h>, which httplib.h includes.
#include "common/socket_bytes.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>

namespace ker {

std::optional<uint64_t> bytesReceived(int fd) {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
      len < offsetof(tcp_info, tcpi_bytes_received) + sizeof info.tcpi_bytes_received) {
    return std::nullopt;
  }
  return info.tcpi_bytes_received;
}

}  // namespace ker

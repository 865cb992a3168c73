// On its own because <linux/tcp.h>, the only header with tcpi_bytes_received, clashes with
// <netinet/tcp.h>, which httplib.h includes.
#include "common/socket_bytes.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cstddef>

namespace ker {

std::optional<uint64_t> bytesRead(int fd) {
  tcp_info info{};
  socklen_t len = sizeof info;
  int unread = 0;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
      len < offsetof(tcp_info, tcpi_bytes_received) + sizeof info.tcpi_bytes_received ||
      ioctl(fd, FIONREAD, &unread) != 0 || unread < 0 ||
      static_cast<uint64_t>(unread) > info.tcpi_bytes_received) {
    return std::nullopt;
  }
  return info.tcpi_bytes_received - static_cast<uint64_t>(unread);
}

}  // namespace ker

#include "nri/unix_socket.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ker::nri {

Status connectUnix(const std::string& path, int* fd) {
  const std::string what = "connect " + path + ": ";
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    return Status::ioError(what + "socket path too long");
  }
  const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    return Status::ioError(what + std::strerror(errno));
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  if (::connect(s, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    ::close(s);
    return Status::ioError(what + std::strerror(err));
  }
  *fd = s;
  return Status::ok();
}

}  // namespace ker::nri

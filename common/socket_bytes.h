#pragma once

#include <cstdint>
#include <optional>

namespace ker {

// Bytes the owner of a TCP socket has read from it over its lifetime: what the kernel
// received (TCP_INFO's tcpi_bytes_received, Linux 4.1+) less what still waits unread.
// nullopt for a socket that is not TCP or a kernel that does not say.
std::optional<uint64_t> bytesRead(int fd);

}  // namespace ker

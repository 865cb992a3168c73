#pragma once

#include <cstdint>
#include <optional>

namespace ker {

// Bytes a TCP socket has received over its lifetime (TCP_INFO's tcpi_bytes_received, Linux
// 4.1+); nullopt for a socket that is not TCP or a kernel that does not say.
std::optional<uint64_t> bytesReceived(int fd);

}  // namespace ker

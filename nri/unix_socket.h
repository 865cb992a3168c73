#pragma once

#include <string>

#include "nri/status.h"

namespace ker::nri {

// Connects a unix stream socket to `path` (the runtime's NRI socket): its descriptor in *fd,
// else an ioError with errno's text.
Status connectUnix(const std::string& path, int* fd);

}  // namespace ker::nri

#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ker {

// The rules the binaries' flags share, each naming the flag it checks: OK when the value
// keeps the rule, else kInvalid "--<flag> must be ..., got <value>".

// lo <= value <= hi: "--http-threads must be 1 to 1024, got 0".
Status checkFlagRange(std::string_view flag, int64_t value, int64_t lo, int64_t hi);
// value >= lo: "--max-body-bytes must be at least 1, got 0".
Status checkFlagAtLeast(std::string_view flag, int64_t value, int64_t lo);
// value > 0: "--bind-deadline must be positive, got 0s".
Status checkFlagPositive(std::string_view flag, std::chrono::milliseconds value);
// "host:port", ":port", or "" / "0" for none (see parseBindAddress).
Status checkFlagBindAddress(std::string_view flag, const std::string& value);

// Whether a listen address reaches only this machine: an IPv4 address in 127.0.0.0/8, ::1,
// or "localhost". Anything else ("0.0.0.0", "::", a pod IP, "") can be reached from others.
bool isLoopbackAddress(std::string_view address);

}  // namespace ker

#include "common/flag_checks.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "common/flags.h"
#include "common/http_server.h"

namespace ker {

namespace {

Status invalidFlag(std::string_view flag, std::string_view rule, std::string_view got) {
  return Status::invalid("--" + std::string(flag) + " must be " + std::string(rule) + ", got " +
                         std::string(got));
}

}  // namespace

Status checkFlagRange(std::string_view flag, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi) {
    return {};
  }
  return invalidFlag(flag, std::to_string(lo) + " to " + std::to_string(hi), std::to_string(value));
}

Status checkFlagAtLeast(std::string_view flag, int64_t value, int64_t lo) {
  if (value >= lo) {
    return {};
  }
  return invalidFlag(flag, "at least " + std::to_string(lo), std::to_string(value));
}

Status checkFlagPositive(std::string_view flag, std::chrono::milliseconds value) {
  if (value.count() > 0) {
    return {};
  }
  return invalidFlag(flag, "positive", formatDuration(value));
}

Status checkFlagBindAddress(std::string_view flag, const std::string& value) {
  if (value.empty() || value == "0" || parseBindAddress(value)) {
    return {};
  }
  return invalidFlag(flag, "host:port, :port, or 0 for none", "\"" + value + "\"");
}

bool isLoopbackAddress(std::string_view address) {
  if (address == "localhost") {
    return true;
  }
  const std::string text(address);
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  return inet_pton(AF_INET6, text.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

}  // namespace ker

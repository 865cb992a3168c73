#include "model/status_reasons.h"

#include <array>
#include <utility>

#include "model/conditions.h"

namespace ker {

namespace {

constexpr std::array<std::pair<StatusReason, const char*>, 8> kNames{{
    {StatusReason::kBound, "Bound"},
    {StatusReason::kReleased, "Released"},
    {StatusReason::kRecovered, "Recovered"},
    {StatusReason::kRebound, "Rebound"},
    {StatusReason::kOrphaned, "Orphaned"},
    {StatusReason::kInvalid, "Invalid"},
    {StatusReason::kLost, "ExtendedResourceLost"},
    {StatusReason::kDeviceUnhealthy, kDeviceUnhealthyReason},
}};

}  // namespace

const char* toString(StatusReason reason) {
  if (reason == StatusReason::kNone) {
    return "";
  }
  for (const auto& [r, name] : kNames) {
    if (r == reason) {
      return name;
    }
  }
  return "Other";
}

StatusReason parseStatusReason(std::string_view reason) {
  if (reason.empty()) {
    return StatusReason::kNone;
  }
  for (const auto& [r, name] : kNames) {
    if (reason == name) {
      return r;
    }
  }
  return StatusReason::kOther;
}

}  // namespace ker

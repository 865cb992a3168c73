#include "model/status_reasons.h"

#include <array>
#include <utility>

namespace ker {

namespace {

constexpr std::string_view kLostPrefix = "ExtendedResourceLost";

constexpr std::array<std::pair<StatusReason, const char*>, 7> kNames{{
    {StatusReason::kBound, "Bound"},
    {StatusReason::kReleased, "Released"},
    {StatusReason::kRecovered, "Recovered"},
    {StatusReason::kRebound, "Rebound"},
    {StatusReason::kOrphaned, "Orphaned"},
    {StatusReason::kInvalid, "Invalid"},
    {StatusReason::kLost, "ExtendedResourceLost"},
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
  if (reason.starts_with(kLostPrefix)) {
    return StatusReason::kLost;
  }
  for (const auto& [r, name] : kNames) {
    if (reason == name) {
      return r;
    }
  }
  return StatusReason::kOther;
}

}  // namespace ker

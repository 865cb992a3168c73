#include "model/reasons.h"

#include <array>
#include <utility>

namespace ker {

namespace {

constexpr std::array<std::pair<Reason, const char*>, 18> kNames{{
    {Reason::kBound, "Bound"},
    {Reason::kReleased, "Released"},
    {Reason::kLost, "ExtendedResourceLost"},
    {Reason::kRecovered, "Recovered"},
    {Reason::kRebound, "Rebound"},
    {Reason::kOrphaned, "Orphaned"},
    {Reason::kInvalid, "Invalid"},
    {Reason::kDeviceUnhealthy, "DeviceUnhealthy"},
    {Reason::kDeviceNotListed, "DeviceNotListed"},
    {Reason::kNoNodeFile, "NoNodeFile"},
    {Reason::kNodeNotRegistered, "NodeNotRegistered"},
    {Reason::kPending, "Pending"},
    {Reason::kDevicesLost, "DevicesLost"},
    {Reason::kNoDevicesLost, "NoDevicesLost"},
    {Reason::kAvailable, "Available"},
    {Reason::kNotOffered, "NotOffered"},
    {Reason::kNoProblemReported, "NoProblemReported"},
    {Reason::kDeletionWaiting, "DeletionWaiting"},
}};

}  // namespace

const char* toString(Reason reason) {
  if (reason == Reason::kNone) {
    return "";
  }
  for (const auto& [r, name] : kNames) {
    if (r == reason) {
      return name;
    }
  }
  return "Other";
}

Reason parseReason(std::string_view reason) {
  if (reason.empty()) {
    return Reason::kNone;
  }
  for (const auto& [r, name] : kNames) {
    if (reason == name) {
      return r;
    }
  }
  return Reason::kOther;
}

}  // namespace ker

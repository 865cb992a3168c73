#include "controller/plan.h"

namespace ker {

const char* toString(Change change) {
  switch (change) {
    case Change::kReleased:
      return "released";
    case Change::kClaimLost:
      return "claim_lost";
    case Change::kClaimRecovered:
      return "claim_recovered";
    case Change::kClaimInitialized:
      return "claim_initialized";
    case Change::kDeviceRebound:
      return "device_rebound";
    case Change::kDeviceFreed:
      return "device_freed";
    case Change::kDeviceInitialized:
      return "device_initialized";
    case Change::kMarkedInvalid:
      return "marked_invalid";
    case Change::kValidAgain:
      return "valid_again";
    case Change::kProtected:
      return "protected";
    case Change::kUnprotected:
      return "unprotected";
  }
  return "unknown";
}

StatusWrite protectionWrite(const Resource& resource, const ObjectMeta& meta,
                            const std::string& finalizer, bool on) {
  std::vector<std::string> finalizers = meta.finalizers;
  std::erase(finalizers, finalizer);
  if (on) {
    finalizers.push_back(finalizer);
  }
  return {&resource,
          meta.ns,
          meta.name,
          {{"metadata", {{"resourceVersion", meta.resourceVersion}, {"finalizers", finalizers}}}},
          true,
          ""};
}

ExtendedResource freed(ExtendedResource device, const FreedStatus& status) {
  device.phase = DevicePhase::kAvailable;
  device.claimRef.reset();
  device.releasedFrom = status.releasedFrom;
  device.reason = toString(status.reason);
  device.message = status.message;
  return device;
}

}  // namespace ker

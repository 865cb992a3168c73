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
  }
  return "unknown";
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

#include "agent/health.h"

namespace ker::agent {

HealthAction decideHealth(const ExtendedResource& device, const HealthObservation& seen) {
  using namespace health_action;
  if (!device.invalid.empty() || device.meta.deleting) {
    return Nothing{};
  }
  if (seen.healthy) {
    if (device.phase == DevicePhase::kPending && device.reason == kUnhealthyReason &&
        !device.claimRef) {
      return MarkHealthy{};
    }
    return Nothing{};
  }
  if (device.phase == DevicePhase::kAvailable && !device.claimRef) {
    return MarkUnhealthy{seen.problem};
  }
  if (device.phase == DevicePhase::kPending && device.reason == kUnhealthyReason &&
      device.message != seen.problem) {
    return MarkUnhealthy{seen.problem};  // a different problem now: keep the message current
  }
  if (device.phase == DevicePhase::kBound && seen.wasHealthy) {
    return WarnHolder{"device " + device.meta.name + " is unhealthy: " + seen.problem};
  }
  return Nothing{};
}

}  // namespace ker::agent

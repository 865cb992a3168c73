#include "agent/health.h"

#include "model/reasons.h"

namespace ker::agent {

HealthAction decideHealth(const ExtendedResource& device, const HealthObservation& seen) {
  using namespace health_action;
  if (!device.invalid.empty() || device.meta.deleting) {
    return Nothing{};
  }
  const bool bound = device.phase == DevicePhase::kBound;
  const bool marked = parseReason(device.reason) == Reason::kDeviceUnhealthy;
  if (seen.healthy) {
    // A Pending set by anyone else is not the agent's to undo, nor one naming a claim.
    if (marked && (bound || (device.phase == DevicePhase::kPending && !device.claimRef))) {
      return MarkHealthy{};
    }
    return Nothing{};
  }
  const std::string warning = "device " + device.meta.name + " is unhealthy: " + seen.problem;
  if (bound) {
    if (!marked || device.message != seen.problem) {
      return MarkUnhealthy{seen.problem, seen.wasHealthy ? std::optional(warning) : std::nullopt};
    }
    return seen.wasHealthy ? HealthAction{WarnHolder{warning}} : HealthAction{Nothing{}};
  }
  if (device.phase == DevicePhase::kAvailable && !device.claimRef) {
    return MarkUnhealthy{seen.problem};
  }
  if (device.phase == DevicePhase::kPending && marked && device.message != seen.problem) {
    return MarkUnhealthy{seen.problem};  // a different problem now: keep the message current
  }
  return Nothing{};
}

}  // namespace ker::agent

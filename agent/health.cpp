#include "agent/health.h"

#include "model/device_transitions.h"

namespace ker::agent {

HealthAction decideHealth(const ExtendedResource& device, const HealthObservation& seen,
                          const std::optional<ClaimAllocation>& named) {
  using namespace health_action;
  if (!device.invalid.empty() || device.meta.deleting) {
    return Nothing{};
  }
  // Which devices each mark may start from is the transitions' rule, asked on a copy: a Pending
  // set by anyone else is not the agent's to undo, nor one naming a claim.
  ExtendedResource next = device;
  if (seen.healthy) {
    return markDeviceHealthy(next).ok() ? HealthAction{MarkHealthy{}} : HealthAction{Nothing{}};
  }
  if (!markDeviceUnhealthy(next, seen.mark, seen.problem).ok()) {
    return Nothing{};
  }
  // Already written as it would be (a different problem since is written again, to keep the
  // message current).
  const bool written =
      next.phase == device.phase && next.reason == device.reason && next.message == device.message;
  const bool held = device.phase == DevicePhase::kBound && !(named && freedByClaim(device, *named));
  if (!held) {
    return written ? HealthAction{Nothing{}} : HealthAction{MarkUnhealthy{seen.mark, seen.problem}};
  }
  // The event's reason is the mark; the text names the device and the problem.
  const std::string warning = "device " + device.meta.name + ": " + seen.problem;
  if (!written) {
    return MarkUnhealthy{seen.mark, seen.problem,
                         seen.wasHealthy ? std::optional(warning) : std::nullopt};
  }
  return seen.wasHealthy ? HealthAction{WarnHolder{seen.mark, warning}} : HealthAction{Nothing{}};
}

}  // namespace ker::agent

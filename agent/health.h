#pragma once

#include <optional>
#include <string>
#include <variant>

#include "model/objects.h"
#include "model/suitability.h"

// Device health as the agent reports it in the API: the pure decision, given what the agent
// observed on the host and what the device's status says.
namespace ker::agent {

namespace health_action {
struct Nothing {};
// Unhealthy and the status does not say so (or not this problem): status.reason the
// observation's mark with the problem as message, which makes its Healthy condition False. A
// free device becomes Pending as well, so the extender stops offering it; a Bound one stays
// with its pod (taking it away is the user's call), and when it just turned unhealthy its claim
// and pod get a Warning event, unless its claim's release freed it (freedByClaim): then it is
// kept from the next bind by the mark alone (offerable), and nobody holds it to be warned.
struct MarkUnhealthy {
  Reason mark;
  std::string message;
  std::optional<std::string> warning;  // for the claim and pod of a Bound device
};
// Marked by the agent and healthy again: the mark goes (a Pending device becomes Available).
// Only a device with one of its marks is put back to Available by the agent: a Pending set by
// anyone else is not its to undo.
struct MarkHealthy {};
// Bound, marked unhealthy already and just seen to turn unhealthy (the agent restarted): the
// warning alone.
struct WarnHolder {
  Reason mark;
  std::string message;
};
}  // namespace health_action

using HealthAction = std::variant<health_action::Nothing, health_action::MarkUnhealthy,
                                  health_action::MarkHealthy, health_action::WarnHolder>;

struct HealthObservation {
  bool healthy = true;
  // When unhealthy, the agent's mark (isAgentMark, model/device_transitions.h) and the problem.
  Reason mark = Reason::kDeviceUnhealthy;
  std::string problem;
  // The agent's previous observation of this device (true before the first): a Bound
  // device's holder is warned once per turn to unhealthy, not on every check.
  bool wasHealthy = true;
};

// Which devices may be marked is decided by markDeviceUnhealthy and markDeviceHealthy
// (model/device_transitions.h), the transitions the agent then writes with.
// `named` is the claim the device names as the agent's cache has it (namedAllocation).
HealthAction decideHealth(const ExtendedResource& device, const HealthObservation& seen,
                          const std::optional<ClaimAllocation>& named = std::nullopt);

}  // namespace ker::agent

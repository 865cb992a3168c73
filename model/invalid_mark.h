#pragma once

#include "common/status.h"
#include "model/objects.h"

// The Invalid mark both kinds share, a status transition like those of claim_transitions.h:
// set or cleared to match the object's `invalid` (the parse error), with reason Invalid and the
// error as message, or, once it parses again, both cleared. Whatever else the status holds
// stays, but for a device left Pending and naming no claim: the mark overwrote the reason it was
// Pending for (DeviceUnhealthy, NodeNotRegistered), and Pending with none is nobody's to undo.
// One its node agent published (kNodeLabel) keeps out of offer, marked as the agent marks an
// unhealthy device, until the agent's next check finds it healthy (markDeviceHealthy); any
// other becomes Available, and the controller parks it again if its node is not registered. From an
// object that is invalid, or marked and valid again (FailedPrecondition, the object untouched,
// otherwise).
namespace ker {

Status markInvalid(ExtendedResourceClaim& claim);
Status markInvalid(ExtendedResource& device);

}  // namespace ker

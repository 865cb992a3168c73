#pragma once

#include "common/status.h"
#include "model/objects.h"

// The Invalid mark both kinds share, a status transition like those of claim_transitions.h:
// set or cleared to match the object's `invalid` (the parse error), with reason Invalid and the
// error as message, or, once it parses again, both cleared. Whatever else the status holds
// stays, but for a device left Pending and naming no claim: the mark overwrote the reason it was
// Pending for (DeviceUnhealthy, NodeNotRegistered), which nobody else would then undo, so it
// becomes Available, and its agent or the controller takes it out of offer again if it still
// must be. From an object that is invalid, or marked and valid again (FailedPrecondition, the
// object untouched, otherwise).
namespace ker {

Status markInvalid(ExtendedResourceClaim& claim);
Status markInvalid(ExtendedResource& device);

}  // namespace ker

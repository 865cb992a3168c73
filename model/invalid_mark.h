#pragma once

#include "common/status.h"
#include "model/objects.h"

// The Invalid mark both kinds share, a status transition like those of claim_transitions.h:
// set or cleared to match the object's `invalid` (the parse error), with reason Invalid and the
// error as message, or, once it parses again, both cleared. Whatever else the status holds
// stays. From an object that is invalid, or marked and valid again (FailedPrecondition, the
// object untouched, otherwise).
namespace ker {

Status markInvalid(ExtendedResourceClaim& claim);
Status markInvalid(ExtendedResource& device);

}  // namespace ker

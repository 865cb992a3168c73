#pragma once

#include <vector>

#include "common/clocks.h"
#include "model/condition.h"
#include "model/objects.h"

// The one rule per kind that turns an object's typed status into its conditions. Pure: the
// previous conditions and the time are passed in. A condition keeps its lastTransitionTime
// while its status stays the same (reason and message may change meanwhile); `now` stamps a
// flip. Applied by toJson, so every status write carries conditions that agree with it.
namespace ker {

// Allocated (True while Bound or Lost; reason DeletionWaiting once deleted), Lost (True while
// Lost).
std::vector<Condition> claimConditions(const ExtendedResourceClaim& claim,
                                       const std::vector<Condition>& previous, SystemTime now);

// Allocated (True while Bound; reason DeletionWaiting once deleted), Healthy (False while the
// node agent marks it unhealthy: Pending when free, still Bound when allocated).
std::vector<Condition> deviceConditions(const ExtendedResource& device,
                                        const std::vector<Condition>& previous, SystemTime now);

}  // namespace ker

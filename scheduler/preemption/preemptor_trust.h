#pragma once

#include <optional>
#include <string>

#include "common/status.h"
#include "model/objects.h"
#include "scheduler/preemption/preemption.h"

namespace ker {

// OK when `live`, the preemptor as the API server has it now (nullopt: not found), is the
// pod the order was decided for: same UID, unbound, not being deleted, served by this
// extender, with the priority the decision assumed and allowed to preempt. Else why not
// (kFailedPrecondition): a filter request's pod is only the caller's word, and no victim is
// touched on it. Pure: the caller reads the pod.
Status checkPreemptorTrust(const std::optional<Pod>& live, const PreemptionOrder& order,
                           const std::string& schedulerName);

}  // namespace ker

#pragma once

#include <optional>
#include <string>

#include "controller/plan.h"

namespace ker {

// What to do about a pod's claims annotations (claims, claim-templates, generated-claims): warn
// once per problem, not on every update.
struct PodPlan {
  std::optional<PlannedEvent> warning;
  std::string problem;  // the problem to remember as warned of; "" when there is none
};

// `warned`: the problem this pod (same UID) was last warned of, "" for none.
PodPlan planPod(const Pod& pod, const std::string& warned);

}  // namespace ker

#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ker {

// One node where preemption would make room (a planPreemption outcome of kVictims).
struct NodePreemption {
  std::string node;
  int64_t pdbViolations = 0;
  std::vector<int32_t> victimPriorities;  // one per victim pod
};

// The node to preempt on, in kube-scheduler's own order between candidate nodes, so a pod is
// preempted for the same reasons whichever side decides: fewest PDB violations, then the
// lowest highest victim priority, then the smallest sum of victim priorities (each shifted to
// be non-negative, so more pods of negative priority never win), then the fewest victims, then
// the first node name (kube-scheduler looks at start times here, which the plans do not
// carry). Nodes without victims are skipped; nullopt when none is left. Pure.
std::optional<size_t> pickPreemptionNode(std::span<const NodePreemption> nodes);

}  // namespace ker

#include "scheduler/preemption/preemption_node.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace ker {

namespace {

// What ranks a node, smallest first.
auto rank(const NodePreemption& n) {
  const int32_t highest = *std::max_element(n.victimPriorities.begin(), n.victimPriorities.end());
  int64_t sum = 0;
  for (const int32_t p : n.victimPriorities) {
    sum += int64_t{p} + int64_t{std::numeric_limits<int32_t>::max()} + 1;
  }
  return std::tuple(n.pdbViolations, highest, sum, n.victimPriorities.size(),
                    std::string_view(n.node));
}

}  // namespace

std::optional<size_t> pickPreemptionNode(std::span<const NodePreemption> nodes) {
  std::optional<size_t> best;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].victimPriorities.empty()) {
      continue;
    }
    if (!best || rank(nodes[i]) < rank(nodes[*best])) {
      best = i;
    }
  }
  return best;
}

}  // namespace ker

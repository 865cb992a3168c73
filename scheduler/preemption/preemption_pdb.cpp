#include "scheduler/preemption/preemption_pdb.h"

#include <cstdint>

#include "common/label_selector.h"

namespace ker {

std::vector<bool> pdbViolations(std::span<const PdbSubject> victims,
                                std::span<const PdbPtr> budgets) {
  std::vector<int64_t> allowed;
  allowed.reserve(budgets.size());
  for (const auto& b : budgets) {
    allowed.push_back(b ? b->disruptionsAllowed : 0);
  }
  std::vector<bool> out(victims.size(), false);
  for (size_t v = 0; v < victims.size(); ++v) {
    const PdbSubject& pod = victims[v];
    if (pod.labels.empty()) {
      continue;
    }
    for (size_t i = 0; i < budgets.size(); ++i) {
      const auto& b = budgets[i];
      if (!b || b->selectsNothing || b->meta.ns != pod.ns || !matches(b->selector, pod.labels) ||
          b->disruptedPods.contains(pod.name)) {
        continue;
      }
      // As upstream, the first budget found exhausted decides, and the budgets after it are
      // not charged for this pod.
      if (--allowed[i] < 0) {
        out[v] = true;
        break;
      }
    }
  }
  return out;
}

}  // namespace ker

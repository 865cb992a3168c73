#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "scheduler/preemption/disruption_budget.h"

namespace ker {

using PdbPtr = std::shared_ptr<const PodDisruptionBudget>;

// One potential victim as a PodDisruptionBudget sees it.
struct PdbSubject {
  std::string ns;
  std::string name;
  std::map<std::string, std::string> labels;
};

// Which of a node's potential victims would violate a PodDisruptionBudget if deleted, counted
// exactly as kube-scheduler's FilterVictimsWithPDBViolation does: `victims` come most important
// first, and each one a budget selects (same namespace, its selector matches the pod's labels,
// the pod not among the budget's status.disruptedPods) uses up one of the budget's
// status.disruptionsAllowed; a pod violates once some budget selecting it has none left. A pod
// without labels, or a budget with a nil, empty or invalid selector, never counts. Pure.
std::vector<bool> pdbViolations(std::span<const PdbSubject> victims,
                                std::span<const PdbPtr> budgets);

}  // namespace ker

#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scheduler/preemption/preemption.h"
#include "scheduler/wire/extender_wire.h"

namespace ker {

// One node of kube-scheduler's preempt verb request, with what the extender knows of it.
struct VerbCandidate {
  NodeVictims asked;  // kube-scheduler's victims there, and its count of PDB violations
  // Non-empty: why the extender cannot judge the node (it needs the node's labels and does
  // not know it yet); the node is dropped.
  std::string unknown;
  PreemptionCandidate at;  // labels, devices and their holders
};

// The devices to keep for the preemptor where kube-scheduler is expected to preempt.
struct VerbNomination {
  std::string node;
  std::vector<std::string> devices;
  std::chrono::seconds ttl{0};
};

struct VerbDecision {
  std::vector<NodeVictims> kept;                             // in the request's order
  std::vector<std::pair<std::string, std::string>> dropped;  // node, why
  std::optional<VerbNomination> nomination;
};

// The preempt verb's answer. kube-scheduler's victims free CPU and the like; on each node their
// claims' devices count as released, and where the preemptor's claims still do not fit, the
// smallest set of further lower-priority holders on the node is added, chosen by
// planPreemption with the same rules as the filter's own preemption (never equal or higher
// priority, never a shared claim's holders, PodDisruptionBudgets spared first and counted).
// A node where no such set exists is dropped; NumPDBViolations is kube-scheduler's count plus
// the added victims that violate a budget. Victims are listed most important first, as
// kube-scheduler reads the first one as the node's highest priority (an added one goes before
// the first of kube-scheduler's known to be of lower priority). While the preemptor already
// waits on victims of `nominatedNode` (an unexpired nomination), every other node is dropped,
// so no second set of pods is preempted for it. The nomination is on the kept node first in
// kube-scheduler's order between nodes (pickPreemptionNode), victims of unknown priority
// counted as 0, or one below the preemptor's when that is lower. Pure.
VerbDecision decideVerbPreemption(const PodClaims& claims, const Pod& preemptor,
                                  const std::vector<VerbCandidate>& candidates,
                                  std::span<const PdbPtr> budgets = {},
                                  std::string_view nominatedNode = {}, const Scoring& scoring = {});

}  // namespace ker

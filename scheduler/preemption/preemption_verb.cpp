#include "scheduler/preemption/preemption_verb.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "scheduler/preemption/preemption_node.h"

namespace ker {

namespace {

constexpr int32_t kUnknownPriority = std::numeric_limits<int32_t>::max();

// A victim in the reply, with the priority known for it (kUnknownPriority when none is).
struct Listed {
  std::string uid;
  int32_t priority = kUnknownPriority;
};

// kube-scheduler's victims in its order, then the added ones (lowest priority first from the
// plan), each put before the first listed victim known to be of lower priority.
std::vector<Listed> merged(std::vector<Listed> asked, const std::vector<Listed>& added) {
  for (auto it = added.rbegin(); it != added.rend(); ++it) {
    auto before = std::find_if(asked.begin(), asked.end(), [&](const Listed& v) {
      return v.priority != kUnknownPriority && v.priority < it->priority;
    });
    asked.insert(before, *it);
  }
  return asked;
}

}  // namespace

VerbDecision decideVerbPreemption(const PodClaims& claims, const Pod& preemptor,
                                  const std::vector<VerbCandidate>& candidates,
                                  std::span<const PdbPtr> budgets, std::string_view nominatedNode,
                                  const Scoring& scoring) {
  VerbDecision decision;
  // What ranks a victim whose priority is not known: kube-scheduler chose it, so it is below
  // the preemptor's.
  const int32_t unknownRank = std::min<int32_t>(0, preemptor.priority - 1);
  std::vector<NodePreemption> ranked;
  std::vector<VerbNomination> nominations;  // parallel to ranked
  for (const auto& c : candidates) {
    const std::string& node = c.asked.node;
    if (!c.unknown.empty()) {
      decision.dropped.emplace_back(node, c.unknown);
      continue;
    }
    if (!nominatedNode.empty() && node != nominatedNode) {
      decision.dropped.emplace_back(node, "the pod waits for the pods preempted for it on node " +
                                              std::string(nominatedNode));
      continue;
    }
    const Holders& holders = c.at.holders;
    std::unordered_map<std::string_view, size_t> holderOf;
    for (size_t h = 0; h < holders.holders.size(); ++h) {
      holderOf.emplace(holders.holders[h].uid, h);
    }
    std::vector<size_t> released;
    std::vector<Listed> asked;
    std::vector<PreemptionVictim> leaving;  // every victim known, for the nomination's TTL
    for (const auto& v : c.asked.pods) {
      Listed listed{v.uid, v.priority.value_or(kUnknownPriority)};
      PreemptionVictim who;
      who.uid = v.uid;
      if (auto h = holderOf.find(v.uid); h != holderOf.end()) {
        released.push_back(h->second);
        who = holders.pods[h->second];
        if (!v.priority && who.priority < preemptor.priority) {
          listed.priority = who.priority;  // the extender's cache knows it
        }
      }
      asked.push_back(std::move(listed));
      leaving.push_back(std::move(who));
    }
    PreemptionRequest request{.claims = claims,
                              .podUid = preemptor.meta.uid,
                              .priority = preemptor.priority,
                              .preemptNever = preemptor.preemptNever,
                              .nodeName = node,
                              .nodeLabels = c.at.labels,
                              .devices = c.at.devices,
                              .holders = withPdbViolations(holders, preemptor.priority, budgets),
                              .released = std::move(released),
                              .scoring = scoring};
    const PreemptionPlan plan = planPreemption(request);
    if (plan.outcome == PreemptionPlan::Outcome::kNone) {
      decision.dropped.emplace_back(node, plan.message);
      continue;
    }
    std::vector<Listed> added;
    for (const size_t v : plan.victims) {
      added.push_back(Listed{holders.holders[v].uid, holders.holders[v].priority});
      leaving.push_back(holders.pods[v]);
    }
    NodeVictims kept{.node = node, .pods = {}, .numPdbViolations = c.asked.numPdbViolations};
    kept.numPdbViolations += plan.pdbViolations;
    NodePreemption rank{node, kept.numPdbViolations, {}};
    for (auto& v : merged(std::move(asked), added)) {
      rank.victimPriorities.push_back(v.priority == kUnknownPriority ? unknownRank : v.priority);
      kept.pods.push_back(VictimPod{std::move(v.uid), std::nullopt});
    }
    decision.kept.push_back(std::move(kept));
    VerbNomination nomination{node, {}, nominationTtl(leaving)};
    for (const auto& [claim, devices] : plan.assignment) {
      nomination.devices.insert(nomination.devices.end(), devices.begin(), devices.end());
    }
    ranked.push_back(std::move(rank));
    nominations.push_back(std::move(nomination));
  }
  if (const auto best = pickPreemptionNode(ranked); best && !nominations[*best].devices.empty()) {
    decision.nomination = std::move(nominations[*best]);
  }
  return decision;
}

}  // namespace ker

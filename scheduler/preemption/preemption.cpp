#include "scheduler/preemption/preemption.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "scheduler/preemption/preemption_node.h"

namespace ker {

void addHolders(const std::map<std::string, DeviceIndex::Holds>& held, const ClaimLookup& claims,
                const HolderPodLookup& pods, const std::string& preemptorUid,
                const std::optional<std::string>& victimsOn, Holders& out) {
  std::unordered_map<std::string, size_t> byUid;
  for (size_t i = 0; i < out.pods.size(); ++i) {
    byUid.emplace(out.pods[i].uid, i);
  }
  for (const auto& [key, devices] : held) {
    PreemptionVictim who;
    who.priority = std::numeric_limits<int32_t>::max();
    const ClaimPtr claim = claims ? claims(key) : nullptr;
    // A claim without one known pod stands alone, as does a shared one (preempting one of its
    // pods frees nothing) and one on a node whose pods may not be victims.
    std::string holderKey = key;
    const auto holders = claim ? claim->holders() : std::vector<PodRef>{};
    if (holders.size() == 1 && !claim->shareable && !holders.front().uid.empty() &&
        (!victimsOn || claim->nodeName == *victimsOn)) {
      who.ns = claim->meta.ns;
      who.name = holders.front().name;
      who.uid = holders.front().uid;
      holderKey = objectKey(who.ns, who.name);
      const PodPtr pod = pods ? pods(holderKey) : nullptr;
      if (pod && pod->meta.uid == who.uid && who.uid != preemptorUid) {
        who.priority = pod->priority;
        who.terminating = pod->meta.deleting;
        who.gracePeriodSeconds = pod->gracePeriodSeconds;
        who.labels = pod->meta.labels;
      }
    }
    const std::string group = who.uid.empty() ? "claim:" + key : who.uid;
    auto [it, added] = byUid.emplace(group, out.holders.size());
    if (added) {
      PreemptionHolder h;
      h.uid = group;
      h.key = holderKey;
      h.priority = who.priority;
      out.holders.push_back(std::move(h));
      out.pods.push_back(std::move(who));
    }
    auto& claimsOf = out.holders[it->second].claims;
    if (std::none_of(claimsOf.begin(), claimsOf.end(),
                     [&](const HeldClaim& c) { return c.key == key; })) {
      claimsOf.push_back(HeldClaim{key, devices});
    }
  }
}

bool anyLowerPriority(const Holders& holders, int32_t priority) {
  return std::any_of(holders.holders.begin(), holders.holders.end(),
                     [&](const PreemptionHolder& h) { return h.priority < priority; });
}

std::vector<PreemptionHolder> withPdbViolations(const Holders& holders, int32_t priority,
                                                std::span<const PdbPtr> budgets) {
  std::vector<PreemptionHolder> out = holders.holders;
  if (budgets.empty()) {
    return out;
  }
  std::vector<size_t> lower;
  for (size_t h = 0; h < out.size(); ++h) {
    if (out[h].priority < priority) {
      lower.push_back(h);
    }
  }
  // kube-scheduler orders by priority, then start time, which the cache does not keep: the key
  // stands in for it, so the count is reproducible.
  std::stable_sort(lower.begin(), lower.end(), [&](size_t a, size_t b) {
    return out[a].priority != out[b].priority ? out[a].priority > out[b].priority
                                              : out[a].key < out[b].key;
  });
  std::vector<PdbSubject> subjects;
  subjects.reserve(lower.size());
  for (const size_t h : lower) {
    const PreemptionVictim& pod = holders.pods[h];
    subjects.push_back(PdbSubject{pod.ns, pod.name, pod.labels});
  }
  const std::vector<bool> violates = pdbViolations(subjects, budgets);
  for (size_t i = 0; i < lower.size(); ++i) {
    out[lower[i]].violatesPdb = violates[i];
  }
  return out;
}

PreemptionDecision decidePreemption(const PodClaims& claims, const Pod& preemptor,
                                    const std::vector<PreemptionCandidate>& candidates,
                                    std::span<const PdbPtr> budgets, std::string_view nominatedNode,
                                    const Scoring& scoring) {
  PreemptionDecision decision;
  decision.unresolvable.resize(candidates.size());
  std::vector<PreemptionPlan> plans;
  std::vector<NodePreemption> ranked;
  std::vector<size_t> rankedIndex;
  plans.reserve(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    const auto& c = candidates[i];
    std::vector<PreemptionHolder> holders =
        withPdbViolations(c.holders, preemptor.priority, budgets);
    PreemptionRequest request{.claims = claims,
                              .podUid = preemptor.meta.uid,
                              .priority = preemptor.priority,
                              .preemptNever = preemptor.preemptNever,
                              .nodeName = c.node,
                              .nodeLabels = c.labels,
                              .devices = c.devices,
                              .holders = std::move(holders),
                              .scoring = scoring};
    plans.push_back(planPreemption(request));
    const PreemptionPlan& plan = plans.back();
    if (plan.outcome == PreemptionPlan::Outcome::kNone) {
      decision.unresolvable[i] = plan.message;
    } else if (plan.outcome == PreemptionPlan::Outcome::kVictims) {
      NodePreemption n{c.node, plan.pdbViolations, {}};
      for (const size_t v : plan.victims) {
        n.victimPriorities.push_back(c.holders.holders[v].priority);
      }
      ranked.push_back(std::move(n));
      rankedIndex.push_back(i);
    }
  }
  auto best = pickPreemptionNode(ranked);
  for (size_t r = 0; r < rankedIndex.size() && !nominatedNode.empty(); ++r) {
    const auto& c = candidates[rankedIndex[r]];
    const auto& victims = plans[rankedIndex[r]].victims;
    if (c.node == nominatedNode && std::all_of(victims.begin(), victims.end(), [&](size_t v) {
          return c.holders.pods[v].terminating;
        })) {
      best = r;
      decision.resumed = true;
    }
  }
  if (!best) {
    return decision;
  }
  const size_t i = rankedIndex[*best];
  const PreemptionPlan& plan = plans[i];
  PreemptionOrder order;
  order.preemptorUid = preemptor.meta.uid;
  order.preemptorNs = preemptor.meta.ns;
  order.preemptorName = preemptor.meta.name;
  order.preemptorPriority = preemptor.priority;
  order.node = candidates[i].node;
  for (const auto& [claim, devices] : plan.assignment) {
    order.devices.insert(order.devices.end(), devices.begin(), devices.end());
  }
  for (const size_t v : plan.victims) {
    order.victims.push_back(candidates[i].holders.pods[v]);
  }
  order.ttl = nominationTtl(order.victims);
  decision.order = std::move(order);
  return decision;
}

std::chrono::seconds nominationTtl(const std::vector<PreemptionVictim>& victims) {
  int64_t grace = 0;
  for (const auto& v : victims) {
    grace = std::max(grace, v.gracePeriodSeconds);
  }
  return std::chrono::seconds(grace) + kNominationMargin;
}

void PriorityFloor::set(const std::string& podUid, int32_t priority) {
  std::lock_guard lock(mu_);
  auto [it, added] = byPod_.try_emplace(podUid, priority);
  if (!added) {
    if (it->second == priority) {
      return;
    }
    priorities_.erase(priorities_.find(it->second));
    it->second = priority;
  }
  priorities_.insert(priority);
}

void PriorityFloor::erase(const std::string& podUid) {
  std::lock_guard lock(mu_);
  if (auto it = byPod_.find(podUid); it != byPod_.end()) {
    priorities_.erase(priorities_.find(it->second));
    byPod_.erase(it);
  }
}

std::optional<int32_t> PriorityFloor::lowest() const {
  std::lock_guard lock(mu_);
  if (priorities_.empty()) {
    return std::nullopt;
  }
  return *priorities_.begin();
}

std::string waitingMessage(size_t victims, const std::string& node) {
  return "waiting for " + std::to_string(victims) + " lower-priority pod" +
         (victims == 1 ? "" : "s") + " preempted on node " + node + " to release devices";
}

}  // namespace ker

#include "scheduler/extender.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "common/logging.h"
#include "model/device_transitions.h"

namespace ker {

Extender::Extender(DeviceIndex& index, ClaimLookup claims, CachedNode nodes, Binder& binder,
                   Scoring scoring, ClaimLookup cachedClaims)
    : index_(index),
      claims_(std::move(claims)),
      cachedClaims_(std::move(cachedClaims)),
      nodes_(std::move(nodes)),
      binder_(binder),
      scoring_(std::move(scoring)) {}

template <class Fn>
void Extender::planEach(const ExtenderArgs& args, NodeFitter& fitter, bool withMessage, Fn&& fn) {
  if (!fitter.needsNodeLabels()) {
    // Every device of these resources names its nodes: a node the cache has not seen yet
    // is answered from the devices placed on it, like any other.
    fitter.planAll(args.nodeNames, withMessage, [&](size_t i, NodePlan& plan) { fn(i, &plan); });
    return;
  }
  for (size_t i = 0; i < args.nodeNames.size(); ++i) {
    const std::string_view name = args.nodeNames[i];
    if (args.hasNodeList) {
      NodePlan plan = fitter.plan(name, args.nodeLabels(i), false, withMessage);
      fn(i, &plan);
    } else if (auto node = nodes_(std::string(name))) {
      NodePlan plan = fitter.plan(name, node->meta.labels, false, withMessage);
      fn(i, &plan);
    } else {
      fn(i, nullptr);
    }
  }
}

const char* toString(FilterRefusal refusal) {
  switch (refusal) {
    case FilterRefusal::kClaimsUnresolvable:
      return "claims_unresolvable";
    case FilterRefusal::kAwaitingClaims:
      return "awaiting_claims";
    case FilterRefusal::kPinnedElsewhere:
      return "pinned_elsewhere";
    case FilterRefusal::kNoFreeDevice:
      return "no_free_device";
  }
  return "";
}

std::optional<FilterRefusal> filterRefusal(const PodClaims& claims, const FilterReply& reply) {
  if (!reply.passing.empty() || (reply.failed.empty() && reply.failedUnresolvable.empty())) {
    return std::nullopt;
  }
  if (claims.unresolvable()) {
    return FilterRefusal::kClaimsUnresolvable;
  }
  if (claims.awaiting()) {
    return FilterRefusal::kAwaitingClaims;
  }
  return claims.fixedNode.empty() ? FilterRefusal::kNoFreeDevice : FilterRefusal::kPinnedElsewhere;
}

FilterDecision Extender::filter(const ExtenderArgs& args, Clock::time_point now) {
  FilterCycle cycle(args, now);
  switch (preFilter(cycle)) {
    case PreFilterResult::kSkip:
      stats_.podsWithoutClaims++;
      return FilterDecision{std::move(cycle.reply), std::nullopt};
    case PreFilterResult::kAnswered:
      break;
    case PreFilterResult::kFilterNodes:
      filterNodes(cycle);
      if (!cycle.reply.passing.empty()) {
        reserve(cycle);
      } else {
        postFilter(cycle);
      }
      break;
  }
  FilterDecision decision{std::move(cycle.reply), std::nullopt};
  decision.refusal = filterRefusal(cycle.claims, decision.reply);
  stats_.nodesPassed += decision.reply.passing.size();
  stats_.nodesFailed += args.nodeNames.size() - decision.reply.passing.size();
  return decision;
}

Extender::PreFilterResult Extender::preFilter(FilterCycle& cycle) const {
  const ExtenderArgs& args = cycle.args;
  FilterReply& reply = cycle.reply;
  const ClassRequests classes = classRequestsOf(args.pod, classes_);
  if (withoutClaims(args.pod, classes)) {
    reply.passing.assign(args.nodeNames.begin(), args.nodeNames.end());
    return PreFilterResult::kSkip;
  }
  cycle.claims = resolveClaims(args.pod, claims_, classes, cachedClaims_);
  const PodClaims& claims = cycle.claims;
  if (claims.unresolvable()) {
    reply.failedUnresolvable.reserve(args.nodeNames.size());
    for (const auto node : args.nodeNames) {
      reply.failedUnresolvable.emplace_back(node, claims.blockMessage);
    }
    return PreFilterResult::kAnswered;
  }
  if (claims.awaiting()) {
    reply.failed.reserve(args.nodeNames.size());
    for (const auto node : args.nodeNames) {
      reply.failed.emplace_back(node, claims.blockMessage);
    }
    return PreFilterResult::kAnswered;
  }
  return PreFilterResult::kFilterNodes;
}

void Extender::filterNodes(FilterCycle& cycle) {
  const ExtenderArgs& args = cycle.args;
  FilterReply& reply = cycle.reply;
  NodeFitter& fitter = cycle.fitter.emplace(cycle.claims, args.pod.meta.uid, index_, scoring_);
  reply.passing.reserve(args.nodeNames.size());
  planEach(args, fitter, true, [&](size_t i, NodePlan* plan) {
    const std::string_view node = args.nodeNames[i];
    if (!plan) {
      reply.failed.emplace_back(node,
                                "node " + std::string(node) + " is not yet known to the extender");
      cycle.failedIdx.push_back(-1);
    } else if (plan->fits) {
      reply.passing.push_back(node);
      cycle.fitting.push_back(i);
      cycle.costs.emplace_back(plan->cost);
    } else if (plan->unresolvable) {
      reply.failedUnresolvable.emplace_back(node, std::move(plan->message));
    } else {
      reply.failed.emplace_back(node, std::move(plan->message));
      cycle.failedIdx.push_back(static_cast<ptrdiff_t>(i));
    }
  });
}

// kube-scheduler picks the next pods' nodes before the earlier pods' binds reach the extender
// (its binding cycle runs apart from the scheduling cycle), so devices given out only at bind
// let binpack send pod after pod to the one device left on the fullest node. The filter
// therefore decides the node itself and holds its devices for the pod: with a single node
// left after filtering, kube-scheduler takes it without scoring (schedulePod), so the bind
// names the node the hold is on, and the pods filtered before it see those devices taken.
// Scoring in prioritize could not promise that: kube-scheduler adds the extender's weighted
// score to its own plugins' scores and breaks ties at random, so a hold on the extender's best
// node might be on a node other than the one bound. The reply then names the chosen node
// alone: kube-scheduler reads failed nodes only when none passes (to explain a FitError and to
// pick preemption candidates), and answering thousands of them made up most of the reply.
void Extender::reserve(FilterCycle& cycle) {
  const ExtenderArgs& args = cycle.args;
  const Clock::time_point now = cycle.now;
  FilterReply& reply = cycle.reply;
  const std::string& uid = args.pod.meta.uid;
  if (uid.empty()) {
    return;  // holds are by pod UID; kube-scheduler always sends it
  }
  if (cycle.claims.pending.empty()) {
    // Claims already allocated (to the pod, or shared) pin it to their node: no device to
    // hold, but the bind binds only where the filter chose (checkBindTrust).
    if (reply.passing.size() == 1) {
      index_.holdForFilter(std::string(reply.passing.front()), {}, uid, now, kHoldTtl);
    }
    return;
  }
  const bool needsNodeLabels = cycle.fitter->needsNodeLabels();
  const std::vector<size_t>& fitting = cycle.fitting;
  std::optional<size_t> held;
  if (const std::string node = index_.filterHoldNode(uid, now); !node.empty()) {
    for (size_t k = 0; k < fitting.size() && !held; ++k) {
      if (args.nodeNames[fitting[k]] == node) {
        held = k;
      }
    }
  }
  // The first choice nearly always holds; a bind in flight may have just taken its devices.
  constexpr size_t kMaxTries = 8;
  for (const size_t k : rankNodes(cycle.costs, scoring_.strategy, held, kMaxTries)) {
    const size_t i = fitting[k];
    const std::string node(args.nodeNames[i]);
    std::map<std::string, std::string> labels;
    if (needsNodeLabels) {
      if (args.hasNodeList) {
        labels = args.nodeLabels(i);
      } else if (auto cached = nodes_(node)) {
        labels = cached->meta.labels;
      }
    }
    const NodePlan plan = planNode(cycle.claims, uid, node, labels, index_, scoring_);
    if (!plan.fits) {
      continue;
    }
    std::vector<std::string> names;
    for (const auto& [claim, devices] : plan.assignment) {
      names.insert(names.end(), devices.begin(), devices.end());
    }
    if (index_.holdForFilter(node, names, uid, now, kHoldTtl)) {
      reply.passing.assign(1, args.nodeNames[i]);
      reply.failed.clear();
      reply.failedUnresolvable.clear();
      return;
    }
  }
  // Nothing could be held: the nodes go back as they are. A bind on a node no filter chose
  // for the pod in the last DeviceIndex::kChoiceTtl is refused (checkBindTrust), and one on an
  // earlier choice plans again: either way a device taken meanwhile stays with its pod.
}

// kube-scheduler's own preemption never helps a node only the extender rejects (see
// docs/preemption.md), so the extender preempts for devices itself, with the same matching as
// the filter (planPreemption). Everything decided here is pure (decidePreemption); the
// deletions happen on the worker, out of the request path. The node stays failed: the pod does
// not fit yet. The victims' deletions and their claims' release requeue it, and its next
// filter finds the nominated devices free for it alone.
void Extender::postFilter(FilterCycle& cycle) {
  const ExtenderArgs& args = cycle.args;
  const PodClaims& claims = cycle.claims;
  const Clock::time_point now = cycle.now;
  FilterReply& reply = cycle.reply;
  const std::vector<ptrdiff_t>& failedIdx = cycle.failedIdx;
  const std::string& uid = args.pod.meta.uid;
  // Only a pod whose pending claims fit nowhere, with no claim allocated or joined already (its
  // node is fixed), may preempt.
  if (!preemption_ || reply.failed.empty() || claims.pending.empty() ||
      !claims.boundToPod.empty() || !claims.joining.empty() || uid.empty()) {
    return;
  }
  const bool needsNodeLabels = cycle.fitter->needsNodeLabels();
  if (const std::string node = index_.nominatedNode(uid, now); !node.empty()) {
    // Its victims are on their way out: no second set is chosen meanwhile.
    for (auto& [name, message] : reply.failed) {
      if (name == node) {
        message = "waiting for the lower-priority pods preempted on node " + node +
                  " to release devices; " + message;
      }
    }
    return;
  }
  if (args.pod.preemptNever) {
    return;
  }
  if (preemption_->lowestPriority) {
    // Nobody bound is of lower priority (the usual case without PriorityClasses): nothing to
    // plan, and the reply stays as it is.
    if (const auto lowest = preemption_->lowestPriority();
        !lowest || *lowest >= args.pod.priority) {
      return;
    }
  }
  std::set<std::string> resources;
  for (const auto& c : claims.pending) {
    for (auto& resource : c->resourceNames()) {
      resources.insert(std::move(resource));
    }
  }
  std::vector<PreemptionCandidate> candidates;
  std::vector<size_t> replyIndex;  // candidate -> its entry in reply.failed
  for (size_t f = 0; f < reply.failed.size() && candidates.size() < kMaxPreemptionNodes; ++f) {
    if (failedIdx[f] < 0) {
      continue;
    }
    const auto i = static_cast<size_t>(failedIdx[f]);
    PreemptionCandidate c;
    c.node = std::string(args.nodeNames[i]);
    if (needsNodeLabels) {
      if (args.hasNodeList) {
        c.labels = args.nodeLabels(i);
      } else if (auto cached = nodes_(c.node)) {
        c.labels = cached->meta.labels;
      }
    }
    candidates.push_back(std::move(c));
    replyIndex.push_back(f);
  }
  std::vector<PreemptionCandidate*> each;
  for (auto& c : candidates) {
    each.push_back(&c);
  }
  gatherHolders(resources, uid, false, now, each);
  const bool lower = std::any_of(candidates.begin(), candidates.end(), [&](const auto& c) {
    return anyLowerPriority(c.holders, args.pod.priority);
  });
  if (!lower) {
    return;  // nobody to preempt anywhere: the answers stay as they are
  }
  const std::vector<PdbPtr> budgets =
      preemption_->budgets ? preemption_->budgets() : std::vector<PdbPtr>{};
  PreemptionDecision decision =
      decidePreemption(claims, args.pod, candidates, budgets, args.nominatedNodeName, scoring_);
  // Nodes where no victim set makes room: kube-scheduler's preemption cannot help there
  // either (it cannot free devices), so they are answered as unresolvable.
  std::vector<bool> unresolvable(reply.failed.size(), false);
  for (size_t k = 0; k < candidates.size(); ++k) {
    if (!decision.unresolvable[k].empty()) {
      unresolvable[replyIndex[k]] = true;
      auto& entry = reply.failed[replyIndex[k]];
      entry.second += "; preemption cannot help: " + decision.unresolvable[k];
    }
  }
  if (decision.order) {
    PreemptionOrder& order = *decision.order;
    const size_t victims = order.victims.size();
    const std::string node = order.node;
    const std::string pod = objectKey(args.pod.meta.ns, args.pod.meta.name);
    if (!index_.nominate(node, order.devices, uid, now, order.ttl)) {
      log::info("preemption deferred: the devices it would free are taken",
                {{"pod", pod}, {"node", node}});
    } else if (decision.resumed) {
      // Its victims are already leaving: keep their devices again, delete nobody.
      log::info("preemption resumed: the nominated node's victims are terminating",
                {{"pod", pod}, {"node", node}, {"ttlSeconds", order.ttl.count()}});
      for (auto& [name, message] : reply.failed) {
        if (name == node) {
          message = waitingMessage(victims, node) + "; " + message;
        }
      }
    } else {
      std::string names;
      for (const auto& v : order.victims) {
        if (!names.empty()) {
          names += ',';
        }
        names += objectKey(v.ns, v.name);
      }
      log::info("preempting", {{"pod", pod},
                               {"priority", args.pod.priority},
                               {"node", node},
                               {"victims", names},
                               {"ttlSeconds", order.ttl.count()}});
      if (preemption_->submit(std::move(order))) {
        stats_.preemptions++;
        for (auto& [name, message] : reply.failed) {
          if (name == node) {
            message = waitingMessage(victims, node) + "; " + message;
          }
        }
      } else {
        log::warn("preemption dropped: the worker's queue is full", {{"pod", pod}});
        index_.dropNomination(uid);
      }
    }
  }
  std::vector<std::pair<std::string_view, std::string>> failed;
  failed.reserve(reply.failed.size());
  for (size_t f = 0; f < reply.failed.size(); ++f) {
    (unresolvable[f] ? reply.failedUnresolvable : failed).push_back(std::move(reply.failed[f]));
  }
  reply.failed = std::move(failed);
}

void Extender::gatherHolders(const std::set<std::string>& resources,
                             const std::string& preemptorUid, bool victimsOnTheNode,
                             Clock::time_point now,
                             std::span<PreemptionCandidate* const> candidates) const {
  std::map<std::string, std::set<std::string>> namesByResource;
  std::vector<std::map<std::string, std::vector<std::string>>> deviceNames(candidates.size());
  for (size_t k = 0; k < candidates.size(); ++k) {
    PreemptionCandidate& c = *candidates[k];
    for (const auto& res : resources) {
      for (auto& d : index_.reachable(res, c.node, c.labels, preemptorUid, now)) {
        if (d->phase == DevicePhase::kBound && index_.offerable(*d)) {
          // Freed by its claim's release: the simulation sees it as the controller writes it.
          auto freed = std::make_shared<ExtendedResource>(*d);
          if (freeDevice(*freed, {}, freed->claimRef).ok()) {
            d = std::move(freed);
          }
        }
        deviceNames[k][res].push_back(d->meta.name);
        namesByResource[res].insert(d->meta.name);
        c.devices.push_back(std::move(d));
      }
    }
  }
  const HolderPodLookup pods = preemption_ ? preemption_->pods : HolderPodLookup{};
  for (const auto& [res, all] : namesByResource) {
    const auto held = index_.claimsHolding(res, all);
    // Device -> the claims holding it, so each candidate looks only at its own devices.
    std::unordered_map<std::string_view, std::vector<const decltype(held)::value_type*>> holding;
    for (const auto& entry : held) {
      for (const auto& [resource, names] : entry.second) {
        for (const auto& d : names) {
          holding[d].push_back(&entry);
        }
      }
    }
    for (size_t k = 0; k < candidates.size(); ++k) {
      auto mine = deviceNames[k].find(res);
      if (mine == deviceNames[k].end()) {
        continue;
      }
      std::map<std::string, DeviceIndex::Holds> heldHere;
      for (const auto& d : mine->second) {
        if (auto h = holding.find(d); h != holding.end()) {
          for (const auto* entry : h->second) {
            heldHere.emplace(entry->first, entry->second);
          }
        }
      }
      addHolders(heldHere, claims_, pods, preemptorUid,
                 victimsOnTheNode ? std::optional<std::string>(candidates[k]->node) : std::nullopt,
                 candidates[k]->holders);
    }
  }
}

// kube-scheduler calls the verb only for nodes where its own dry run found victims, i.e. where
// an in-tree filter (CPU, memory) fails too (see docs/preemption.md). Those victims free that;
// the verb makes sure the pod's claims then fit on the node's devices too, adding the holders
// of devices where they do not. The decision is decideVerbPreemption's; kube-scheduler deletes
// the victims and sets the pod's nominatedNodeName.
std::vector<NodeVictims> Extender::preemptVerb(const PreemptionArgs& args, Clock::time_point now) {
  const ClassRequests classes = classRequestsOf(args.pod, classes_);
  if (withoutClaims(args.pod, classes)) {
    return args.nodes;
  }
  const std::string& uid = args.pod.meta.uid;
  const PodClaims claims = resolveClaims(args.pod, claims_, classes, cachedClaims_);
  std::set<std::string> resources;
  for (const auto& c : claims.pending) {
    for (auto& resource : c->resourceNames()) {
      resources.insert(std::move(resource));
    }
  }
  const bool needsNodeLabels = NodeFitter(claims, uid, index_).needsNodeLabels();
  std::vector<VerbCandidate> candidates;
  candidates.reserve(args.nodes.size());
  std::vector<PreemptionCandidate*> known;
  for (const auto& asked : args.nodes) {
    VerbCandidate& c = candidates.emplace_back();
    c.asked = asked;
    c.at.node = asked.node;
    if (needsNodeLabels) {
      if (auto cached = nodes_(asked.node)) {
        c.at.labels = cached->meta.labels;
      } else {
        c.unknown = "node " + asked.node + " is not yet known to the extender";
        continue;
      }
    }
    known.push_back(&c.at);
  }
  gatherHolders(resources, uid, true, now, known);
  const std::vector<PdbPtr> budgets =
      preemption_ && preemption_->budgets ? preemption_->budgets() : std::vector<PdbPtr>{};
  VerbDecision decision =
      decideVerbPreemption(claims, args.pod, candidates, budgets,
                           uid.empty() ? "" : index_.nominatedNode(uid, now), scoring_);
  const std::string pod = objectKey(args.pod.meta.ns, args.pod.meta.name);
  for (const auto& [node, why] : decision.dropped) {
    log::info("preempt verb: node dropped", {{"pod", pod}, {"node", node}, {"reason", why}});
  }
  if (decision.nomination && !uid.empty()) {
    const VerbNomination& n = *decision.nomination;
    if (index_.nominate(n.node, n.devices, uid, now, n.ttl)) {
      log::info("preempt verb: devices nominated",
                {{"pod", pod}, {"node", n.node}, {"ttlSeconds", n.ttl.count()}});
    } else {
      // Promised to another pod since the candidates were gathered: the victims there would
      // be deleted for nothing.
      log::info("preempt verb: node dropped, the devices it would free are taken",
                {{"pod", pod}, {"node", n.node}});
      std::erase_if(decision.kept, [&](const NodeVictims& v) { return v.node == n.node; });
    }
  }
  return std::move(decision.kept);
}

std::vector<std::pair<std::string_view, int>> Extender::prioritize(const ExtenderArgs& args) {
  std::vector<std::pair<std::string_view, int>> out;
  out.reserve(args.nodeNames.size());
  std::vector<int> scores(args.nodeNames.size(), 0);
  if (const ClassRequests classes = classRequestsOf(args.pod, classes_);
      !withoutClaims(args.pod, classes)) {
    const PodClaims claims = resolveClaims(args.pod, claims_, classes, cachedClaims_);
    NodeFitter fitter(claims, args.pod.meta.uid, index_, scoring_);
    std::vector<std::optional<NodeCost>> costs(args.nodeNames.size());
    planEach(args, fitter, false, [&](size_t i, NodePlan* plan) {
      if (plan && plan->fits) {
        costs[i] = plan->cost;
      }
    });
    scores = scoreNodes(costs, scoring_.strategy);
  }
  for (size_t i = 0; i < args.nodeNames.size(); ++i) {
    out.emplace_back(args.nodeNames[i], scores[i]);
  }
  return out;
}

}  // namespace ker

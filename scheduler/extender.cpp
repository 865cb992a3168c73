#include "scheduler/extender.h"

namespace ker {

Extender::Extender(DeviceIndex& index, ClaimLookup claims, CachedNode nodes, Binder& binder,
                   ScoringStrategy scoring)
    : index_(index),
      claims_(std::move(claims)),
      nodes_(std::move(nodes)),
      binder_(binder),
      scoring_(scoring) {}

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

FilterReply Extender::filter(const ExtenderArgs& args) {
  FilterReply reply;
  if (args.pod.claims.empty() && args.pod.invalid.empty()) {
    stats_.podsWithoutClaims++;
    reply.passing.assign(args.nodeNames.begin(), args.nodeNames.end());
    return reply;
  }
  const PodClaims claims = resolveClaims(args.pod, claims_);
  if (!claims.unresolvable.empty()) {
    reply.failedUnresolvable.reserve(args.nodeNames.size());
    for (const auto node : args.nodeNames) {
      reply.failedUnresolvable.emplace_back(node, claims.unresolvable);
    }
  } else {
    NodeFitter fitter(claims, args.pod.meta.uid, index_);
    reply.passing.reserve(args.nodeNames.size());
    planEach(args, fitter, true, [&](size_t i, NodePlan* plan) {
      const std::string_view node = args.nodeNames[i];
      if (!plan) {
        reply.failed.emplace_back(
            node, "node " + std::string(node) + " is not yet known to the extender");
      } else if (plan->fits) {
        reply.passing.push_back(node);
      } else if (plan->unresolvable) {
        reply.failedUnresolvable.emplace_back(node, std::move(plan->message));
      } else {
        reply.failed.emplace_back(node, std::move(plan->message));
      }
    });
  }
  stats_.nodesPassed += reply.passing.size();
  stats_.nodesFailed += args.nodeNames.size() - reply.passing.size();
  return reply;
}

std::vector<std::pair<std::string_view, int>> Extender::prioritize(const ExtenderArgs& args) {
  std::vector<std::pair<std::string_view, int>> out;
  out.reserve(args.nodeNames.size());
  std::vector<int> scores(args.nodeNames.size(), 0);
  if (!args.pod.claims.empty()) {
    const PodClaims claims = resolveClaims(args.pod, claims_);
    NodeFitter fitter(claims, args.pod.meta.uid, index_);
    std::vector<std::optional<size_t>> leftover(args.nodeNames.size());
    planEach(args, fitter, false, [&](size_t i, NodePlan* plan) {
      if (plan && plan->fits) {
        leftover[i] = plan->leftover;
      }
    });
    scores = scoreNodes(leftover, scoring_);
  }
  for (size_t i = 0; i < args.nodeNames.size(); ++i) {
    out.emplace_back(args.nodeNames[i], scores[i]);
  }
  return out;
}

}  // namespace ker

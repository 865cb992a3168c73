#include "scheduler/extender.h"

namespace ker {

Extender::Extender(DeviceIndex& index, ClaimLookup claims, CachedNodeLabels nodeLabels,
                   Binder& binder, ScoringStrategy scoring)
    : index_(index),
      claims_(std::move(claims)),
      nodeLabels_(std::move(nodeLabels)),
      binder_(binder),
      scoring_(scoring) {}

std::optional<std::map<std::string, std::string>> Extender::labelsOf(const ExtenderArgs& args,
                                                                     size_t i) {
  if (args.hasNodeList) {
    return Node::fromJson(args.nodeItems[i]).meta.labels;
  }
  return nodeLabels_(args.nodeNames[i]);
}

FilterReply Extender::filter(const ExtenderArgs& args) {
  FilterReply reply;
  if (args.pod.claims.empty() && args.pod.invalid.empty()) {
    stats_.podsWithoutClaims++;
    reply.passing = args.nodeNames;
    return reply;
  }
  const PodClaims claims = resolveClaims(args.pod, claims_);
  for (size_t i = 0; i < args.nodeNames.size(); ++i) {
    const auto& node = args.nodeNames[i];
    if (!claims.unresolvable.empty()) {
      reply.failedUnresolvable[node] = claims.unresolvable;
      continue;
    }
    auto labels = labelsOf(args, i);
    if (!labels) {
      reply.failed[node] = "node " + node + " is not yet known to the extender";
      continue;
    }
    NodePlan plan = planNode(claims, args.pod.meta.uid, node, *labels, index_);
    if (plan.fits) {
      reply.passing.push_back(node);
    } else if (plan.unresolvable) {
      reply.failedUnresolvable[node] = plan.message;
    } else {
      reply.failed[node] = plan.message;
    }
  }
  stats_.nodesPassed += reply.passing.size();
  stats_.nodesFailed += args.nodeNames.size() - reply.passing.size();
  return reply;
}

std::vector<std::pair<std::string, int>> Extender::prioritize(const ExtenderArgs& args) {
  std::vector<std::pair<std::string, int>> out;
  out.reserve(args.nodeNames.size());
  if (args.pod.claims.empty()) {
    for (const auto& node : args.nodeNames) {
      out.emplace_back(node, 0);
    }
    return out;
  }
  const PodClaims claims = resolveClaims(args.pod, claims_);
  std::map<std::string, size_t> leftover;
  for (size_t i = 0; i < args.nodeNames.size(); ++i) {
    auto labels = labelsOf(args, i);
    if (!labels) {
      continue;
    }
    NodePlan plan = planNode(claims, args.pod.meta.uid, args.nodeNames[i], *labels, index_);
    if (plan.fits) {
      leftover[args.nodeNames[i]] = plan.leftover;
    }
  }
  auto scores = scoreNodes(leftover, scoring_);
  for (const auto& node : args.nodeNames) {
    auto it = scores.find(node);
    out.emplace_back(node, it == scores.end() ? 0 : it->second);
  }
  return out;
}

}  // namespace ker

#include "scheduler/planner.h"

#include <set>

#include "common/label_selector.h"

namespace ker {

PodClaims resolveClaims(const Pod& pod, const ClaimLookup& lookup) {
  PodClaims out;
  if (!pod.invalid.empty()) {
    out.unresolvable = "pod " + objectKey(pod.meta.ns, pod.meta.name) + ": " + pod.invalid;
    return out;
  }
  for (const auto& name : pod.claims) {
    const std::string key = objectKey(pod.meta.ns, name);
    ClaimPtr claim = lookup(key);
    if (!claim) {
      out.unresolvable = "claim " + key + " not found";
      return out;
    }
    if (!claim->invalid.empty()) {
      out.unresolvable = "claim " + key + " is invalid: " + claim->invalid;
      return out;
    }
    if (std::string why = validate(claim->metadataRequirements); !why.empty()) {
      out.unresolvable = "claim " + key + " has an invalid metadataRequirements: " + why;
      return out;
    }
    if (claim->meta.deleting) {
      out.unresolvable = "claim " + key + " is being deleted";
      return out;
    }
    switch (claim->phase) {
      case ClaimPhase::kLost:
        out.unresolvable = "claim " + key + " is Lost" +
                           (claim->message.empty() ? std::string() : ": " + claim->message);
        return out;
      case ClaimPhase::kBound:
        if (claim->podRef && claim->podRef->uid == pod.meta.uid) {
          if (!out.fixedNode.empty() && out.fixedNode != claim->nodeName) {
            out.unresolvable = "claims of this pod are bound on two nodes (" + out.fixedNode +
                               ", " + claim->nodeName + ")";
            return out;
          }
          out.fixedNode = claim->nodeName;
          out.boundToPod.push_back(claim);
          break;
        }
        out.unresolvable = "claim " + key + " is held by pod " +
                           (claim->podRef ? claim->podRef->name : std::string("<unknown>"));
        return out;
      case ClaimPhase::kPending:
        out.pending.push_back(claim);
        break;
    }
  }
  return out;
}

NodePlan planNode(const PodClaims& claims, const std::string& podUid, const std::string& nodeName,
                  const std::map<std::string, std::string>& nodeLabels, const DeviceIndex& index) {
  NodePlan plan;
  if (!claims.unresolvable.empty()) {
    plan.unresolvable = true;
    plan.message = claims.unresolvable;
    return plan;
  }
  if (!claims.fixedNode.empty() && claims.fixedNode != nodeName) {
    plan.unresolvable = true;
    plan.message =
        "claim " +
        objectKey(claims.boundToPod.front()->meta.ns, claims.boundToPod.front()->meta.name) +
        " is already bound to this pod on node " + claims.fixedNode;
    return plan;
  }
  if (claims.pending.empty()) {
    plan.fits = true;
    return plan;
  }
  std::set<std::string> resources;
  for (const auto& c : claims.pending) {
    resources.insert(c->rawResourceName);
  }
  std::vector<DevicePtr> free;
  for (const auto& res : resources) {
    auto some = index.freeOnNode(res, nodeName, nodeLabels, podUid);
    free.insert(free.end(), std::make_move_iterator(some.begin()),
                std::make_move_iterator(some.end()));
  }
  std::vector<const ExtendedResource*> devices;
  devices.reserve(free.size());
  for (const auto& d : free) {
    devices.push_back(d.get());
  }
  std::vector<const ExtendedResourceClaim*> pending;
  size_t wanted = 0;
  for (const auto& c : claims.pending) {
    pending.push_back(c.get());
    wanted += static_cast<size_t>(c->extendedResourceNum);
  }
  Fit fit = fitClaims(pending, devices);
  plan.fits = fit.fits;
  plan.message = std::move(fit.message);
  plan.assignment = std::move(fit.assignment);
  plan.leftover = fit.matchingFree > wanted ? fit.matchingFree - wanted : 0;
  return plan;
}

}  // namespace ker

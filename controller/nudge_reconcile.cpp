// The nudge of pods kube-scheduler parked, once devices free up or a claim becomes usable.
#include <optional>

#include "controller/reconciler.h"
#include "model/resource_class.h"

namespace ker {

void Reconciler::requestNudge(const NudgeTarget& target) {
  memory_.triggerNudge(target, opts_.clock());
}

ReconcileResult Reconciler::nudge(const NudgeTarget& target) {
  return guarded([&] {
    NudgeView v;
    v.now = opts_.clock();
    const auto triggeredAt = memory_.nudgeTriggeredAt(target);
    if (!triggeredAt) {
      return ReconcileResult{};
    }
    v.triggeredAt = *triggeredAt;
    v.lastNudged = memory_.recentNudges(v.now);
    if (target.kind == NudgeTarget::Kind::kClaim) {
      v.claimKey = target.name;
    } else {
      v.rawResourceName = target.name;
    }
    v.schedulerName = opts_.schedulerName;
    v.minInterval = opts_.nudgeMinInterval;
    v.limit = opts_.nudgeLimit;
    const auto pods = caches_.pods();
    std::vector<CachedClaim> keep;      // owns what v.claims points to
    std::optional<ClassTable> classes;  // read once some parked pod asks in its resources
    for (const auto& p : pods) {
      // Only pods kube-scheduler parked are candidates; their claims and the classes of what
      // they ask in their resources are all the view needs.
      if (!p->unschedulable) {
        continue;
      }
      v.pods.push_back({p.get(), true});
      for (const auto& [name, shares] : p->extendedRequests) {
        if (!classes) {
          classes.emplace(caches_.classes());
        }
        if (ClassPtr cls = classes->serving(name); cls && !v.classResources.count(name)) {
          v.classResources[name] = cls->rawResourceName;
        }
      }
      for (const auto& name : p->claims) {
        const std::string key = objectKey(p->meta.ns, name);
        if (!v.claims.count(key)) {
          keep.push_back(caches_.claim(key));
          v.claims[key] = keep.back().get();
        }
      }
    }
    const NudgePlan plan = podsToNudge(v);
    for (const Pod* pod : plan.pods) {
      executor_.nudgePod(*pod);
      memory_.setNudged(pod->meta.uid, v.now);
    }
    ReconcileResult r;
    r.requeueAfter = plan.again;
    return r;
  });
}

}  // namespace ker

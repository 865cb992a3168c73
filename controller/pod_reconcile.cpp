// The pod's reconcile: the warning of its claims annotation, then the claims its template
// entries call for, recorded on the pod.
#include <stdexcept>

#include "controller/pod_plan.h"
#include "controller/reconciler.h"
#include "controller/template_claims_plan.h"

namespace ker {

ReconcileResult Reconciler::reconcilePod(const std::string& key) {
  return guarded([&] {
    const CachedPod pod = caches_.pod(key);
    if (!pod) {
      memory_.forgetPod(key);
      caches_.forgetPod(key);
      return ReconcileResult{};
    }
    const PodPlan plan = planPod(*pod, memory_.warnedPodProblem(key, pod->meta.uid));
    // While writes are gated the warning is left for a later update.
    if (!plan.warning || executor_.record({*plan.warning})) {
      memory_.setWarnedPodProblem(key, pod->meta.uid, plan.problem);
    }
    reconcileTemplateClaims(*pod);
    return ReconcileResult{};
  });
}

void Reconciler::reconcileTemplateClaims(const Pod& pod) {
  const std::string podKey = objectKey(pod.meta.ns, pod.meta.name);
  TemplateClaimsInputs in;
  in.pod = &pod;
  in.warned = memory_.warnedTemplateProblem(podKey, pod.meta.uid);
  in.protect = opts_.protectInUse;
  std::vector<CachedTemplate> keepTemplates;  // own what in.templates points to
  for (const auto& entry : pod.claimTemplates) {
    if (!in.templates.count(entry.templateName)) {
      keepTemplates.push_back(caches_.claimTemplate(objectKey(pod.meta.ns, entry.templateName)));
      in.templates[entry.templateName] = keepTemplates.back().get();
    }
  }
  if (!pod.claimTemplates.empty()) {  // most pods need no class table
    in.classes = ClassTable(caches_.classes());
  }
  std::vector<CachedClaim> keepClaims;  // own what in.existing points to
  auto learn = [&](const std::string& name, CachedClaim claim) {
    keepClaims.push_back(claim);
    in.existing[name] = claim.get();
  };
  TemplateClaimsPlan plan = planTemplateClaims(in);
  // The lookups, the creates (and a live read for each name found taken), then the record: each
  // step's result is the next plan's input.
  for (int step = 0; step < 3; ++step) {
    if (!plan.lookups.empty()) {
      for (const auto& name : plan.lookups) {
        learn(name, caches_.claim(objectKey(pod.meta.ns, name)));
      }
    } else if (!plan.creates.empty()) {
      for (const auto& create : plan.creates) {
        nlohmann::json created;
        if (unlessAlreadyExists([&] { created = executor_.createClaim(create.claim); })) {
          learn(create.name, std::make_shared<const ExtendedResourceClaim>(
                                 ExtendedResourceClaim::fromJson(created)));
          continue;
        }
        learn(create.name, liveGet<ExtendedResourceClaim>(pod.meta.ns, create.name));
      }
    } else {
      break;
    }
    plan = planTemplateClaims(in);
  }
  // While writes are gated the warning is left for a later update.
  if (plan.warnings.empty() || executor_.record(plan.warnings)) {
    memory_.setWarnedTemplateProblem(podKey, pod.meta.uid, plan.problem);
  }
  if (!plan.lookups.empty() || !plan.creates.empty()) {
    throw std::runtime_error("the claims of the pod's template entries did not settle");
  }
  if (plan.recordPatch) {
    caches_.assume(executor_.patchPod(pod, *plan.recordPatch, plan.events));
  }
}

}  // namespace ker

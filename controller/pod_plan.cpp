#include "controller/pod_plan.h"

#include "model/event_reasons.h"

namespace ker {

PodPlan planPod(const Pod& pod, const std::string& warned) {
  PodPlan p;
  const auto& a = pod.meta.annotations;
  if (pod.invalid.empty() ||
      (a.count(kClaimsAnnotation) == 0 && a.count(kClaimTemplatesAnnotation) == 0 &&
       a.count(kGeneratedClaimsAnnotation) == 0)) {
    return p;
  }
  p.problem = pod.invalid;
  if (warned != pod.invalid) {
    // pod.invalid names the annotation at fault.
    p.warning = PlannedEvent{referenceTo(pod), EventType::kWarning, event_reason::kInvalidClaims,
                             "the pod's claims cannot be used: " + pod.invalid};
  }
  return p;
}

}  // namespace ker

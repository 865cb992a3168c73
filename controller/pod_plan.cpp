#include "controller/pod_plan.h"

namespace ker {

PodPlan planPod(const Pod& pod, const std::string& warned) {
  PodPlan p;
  if (pod.invalid.empty() || pod.meta.annotations.count(kClaimsAnnotation) == 0) {
    return p;
  }
  p.problem = pod.invalid;
  if (warned != pod.invalid) {
    p.warning = PlannedEvent{
        referenceTo(pod), EventType::kWarning, "InvalidClaims",
        std::string("annotation ") + kClaimsAnnotation + " cannot be used: " + pod.invalid};
  }
  return p;
}

}  // namespace ker

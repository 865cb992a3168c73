#include "scheduler/preemption/preemptor_trust.h"

#include "model/served_pods.h"

namespace ker {

Status checkPreemptorTrust(const std::optional<Pod>& live, const PreemptionOrder& order,
                           const std::string& schedulerName) {
  if (!live) {
    return Status::failedPrecondition("the preemptor does not exist");
  }
  if (live->meta.uid != order.preemptorUid) {
    return Status::failedPrecondition("the preemptor has UID " + live->meta.uid + ", not " +
                                      order.preemptorUid);
  }
  if (!live->nodeName.empty()) {
    return Status::failedPrecondition("the preemptor is bound to node " + live->nodeName);
  }
  if (live->meta.deleting) {
    return Status::failedPrecondition("the preemptor is being deleted");
  }
  if (!servedPod(*live, schedulerName)) {
    return Status::failedPrecondition("the preemptor has schedulerName \"" + live->schedulerName +
                                      "\", not \"" + schedulerName + "\"");
  }
  if (live->priority != order.preemptorPriority) {
    return Status::failedPrecondition(
        "the preemptor has priority " + std::to_string(live->priority) + ", not " +
        std::to_string(order.preemptorPriority) + " as the preemption was decided for");
  }
  if (live->preemptNever) {
    return Status::failedPrecondition("the preemptor has preemptionPolicy Never");
  }
  return {};
}

}  // namespace ker

#include "scheduler/bind/bind_trust.h"

#include "model/served_pods.h"
#include "scheduler/fit/planner.h"

namespace ker {

Status checkBindTrust(const Pod& pod, const ClassRequests& classes, const std::string& node,
                      const std::string& schedulerName, const std::string& filterChoice) {
  const std::string key = objectKey(pod.meta.ns, pod.meta.name);
  if (!servedPod(pod, schedulerName)) {
    return Status::failedPrecondition("pod " + key + " has schedulerName \"" + pod.schedulerName +
                                      "\": this extender binds only pods of \"" + schedulerName +
                                      "\"");
  }
  if (withoutClaims(pod, classes)) {
    return {};
  }
  if (filterChoice.empty()) {
    return Status::failedPrecondition("the extender's filter holds no node for pod " + key +
                                      " (none came, it expired, or the extender restarted)");
  }
  if (filterChoice != node) {
    return Status::failedPrecondition("the extender's filter chose node " + filterChoice +
                                      " for pod " + key + ", not " + node);
  }
  return {};
}

}  // namespace ker

#pragma once

#include <string>

#include "common/status.h"
#include "model/objects.h"
#include "model/resource_class.h"

namespace ker {

// What the extender checks before a bind writes on kube-scheduler's word. Whoever reaches the
// verbs is taken for kube-scheduler (they listen on loopback, or behind mutual TLS with allowed
// client names); this keeps a call from reaching past what the extender itself decided. Pure:
// the caller reads the pod and the filter's choice.

// OK when a bind of `pod` to `node` may write, else why not (kFailedPrecondition, nothing
// written; kube-scheduler schedules the pod again, and its new filter makes a new choice).
// `filterChoice` is the node this extender's filter chose for the pod (DeviceIndex::filterChoice;
// "" none: the extender restarted, the choice expired, or no filter came). A pod with claims (or
// asking for a class's resource, `classes`) binds only on its filter's node. A pod without claims
// (withoutClaims, as the filter decides it) binds wherever asked: the filter passes it on
// every node and holds nothing, so no choice of the extender's exists to check (the node is
// kube-scheduler's), and its bind writes only the Binding, no device or claim; what vouches
// for the caller is the transport alone.
Status checkBindTrust(const Pod& pod, const ClassRequests& classes, const std::string& node,
                      const std::string& schedulerName, const std::string& filterChoice);

}  // namespace ker

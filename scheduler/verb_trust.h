#pragma once

#include <optional>
#include <string>

#include "common/status.h"
#include "model/objects.h"
#include "scheduler/preemption.h"

namespace ker {

// What the extender checks before it writes on a verb's word. Whoever reaches the verbs is
// taken for kube-scheduler (they listen on loopback, or behind mutual TLS with allowed client
// names), and these checks keep a call from reaching past what the extender itself decided:
// a bind only where its filter chose, a preemption only for the pod the API server has.
// Pure: the caller reads the pod and the filter's choice.

// OK when a bind of `pod` to `node` may write, else why not (kFailedPrecondition, nothing
// written; kube-scheduler schedules the pod again, and its new filter makes a new choice).
// `filterChoice` is the node this extender's filter chose and holds for the pod ("" none:
// the extender restarted, the hold expired, or no filter came). A pod with claims binds only
// on its filter's node. A pod without claims binds wherever asked: the filter passes it on
// every node and holds nothing, so no choice of the extender's exists to check (the node is
// kube-scheduler's), and its bind writes only the Binding, no device or claim; what vouches
// for the caller is the transport alone.
Status checkBindTrust(const Pod& pod, const std::string& node, const std::string& schedulerName,
                      const std::string& filterChoice);

// OK when `live`, the preemptor as the API server has it now (nullopt: not found), is the
// pod the order was decided for: same UID, unbound, not being deleted, served by this
// extender, with the priority the decision assumed and allowed to preempt. Else why not
// (kFailedPrecondition): a filter request's pod is only the caller's word.
Status checkPreemptorTrust(const std::optional<Pod>& live, const PreemptionOrder& order,
                           const std::string& schedulerName);

}  // namespace ker

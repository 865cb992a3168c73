#pragma once

#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/spliced_body.h"
#include "model/objects.h"

namespace ker {

// A request body kube-scheduler (k8s.io/kube-scheduler/extender/v1) could not have sent.
class WireError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// ExtenderArgs for filter and prioritize. Keys match as Go's encoding/json does: the exact
// field name first, then case-insensitively.
struct ExtenderArgs {
  Pod pod;
  std::string nominatedNodeName;  // the Pod's status.nominatedNodeName, left by a preemption
  // nodeCacheCapable: false sends the candidate Node objects. Only their names are read up
  // front; their bytes are kept so the filter can return the passing ones unchanged, and
  // their labels are parsed only if some device is placed by labels. The views point into
  // the request body, which must outlive the args: a NodeList body can be tens of MB.
  bool hasNodeList = false;
  std::string_view body;  // the request the views below point into
  // Names in request order, from NodeNames or from the Node objects' metadata.name: views
  // into the body, or into decodedNames for the rare name written with escapes.
  std::vector<std::string_view> nodeNames;
  std::deque<std::string> decodedNames;  // a deque: its strings never move
  // Parallel to nodeNames (NodeList mode): each Node object's bytes as they came, and the
  // text of its metadata.labels value (empty when absent).
  std::vector<std::string_view> nodeObjects;
  std::vector<std::string_view> nodeLabelsText;

  // The i-th Node's metadata.labels as Node::fromJson reads them: labels that are not all
  // strings read as none.
  std::map<std::string, std::string> nodeLabels(size_t i) const;
};

struct BindingArgs {
  std::string podName;
  std::string podNamespace;
  std::string podUid;
  std::string node;
};

// A victim in the preempt verb's request: a MetaPod's UID (nodeCacheCapable: true), or a whole
// Pod's UID and spec.priority (nodeCacheCapable: false).
struct VictimPod {
  std::string uid;
  std::optional<int32_t> priority;  // known only from whole Pods
};

// One node's victims, as ExtenderPreemptionArgs and ExtenderPreemptionResult carry them.
struct NodeVictims {
  std::string node;
  std::vector<VictimPod> pods;  // kube-scheduler lists them most important first
  int64_t numPdbViolations = 0;
};

// ExtenderPreemptionArgs: the preemptor and kube-scheduler's candidate nodes with their
// victims, from NodeNameToMetaVictims, else NodeNameToVictims; nodes in name order.
struct PreemptionArgs {
  Pod pod;
  std::vector<NodeVictims> nodes;
};

// Both throw WireError with a message naming the offending field. parseExtenderArgs reads
// the body in one pass and builds a document only for the Pod; of each Node object it keeps
// the name and labels, so neither mode allocates much more than what the decision reads.
ExtenderArgs parseExtenderArgs(std::string_view body);
BindingArgs parseBindingArgs(std::string_view body);
// Throws WireError for a body kube-scheduler could not have sent: not JSON, no Pod, a map
// that is not one, a victim without a UID.
PreemptionArgs parsePreemptionArgs(std::string_view body);

struct FilterReply {
  // Node names in request order: views of the request's names, which outlive the reply.
  std::vector<std::string_view> passing;
  // Failed nodes in request order with why; the names are views like passing's. (A name
  // asked twice is answered twice; Go's decoder keeps the last of duplicate keys.)
  std::vector<std::pair<std::string_view, std::string>> failed;
  std::vector<std::pair<std::string_view, std::string>> failedUnresolvable;
  std::string error;
};

// Answers in the mode the request used: NodeNames, or the passing Node objects whole, as
// slices of args.body inserted into the reply rather than copies.
SplicedBody renderFilterReply(const FilterReply& reply, const ExtenderArgs& args);
// verbatimHosts: every host is a name as it stood in a request without escapes (as when
// args.decodedNames is empty), so its bytes are already its JSON text.
std::string renderPriorities(const std::vector<std::pair<std::string_view, int>>& scores,
                             bool verbatimHosts = false);
std::string renderBindingReply(const std::string& error);
// ExtenderPreemptionResult: NodeNameToMetaVictims, UIDs only.
std::string renderPreemptionResult(const std::vector<NodeVictims>& nodes);
// A filter-shaped error body (also valid for bind: only Error is read).
std::string renderError(const std::string& error);

}  // namespace ker

#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/objects.h"
#include "scheduler/allocator.h"
#include "scheduler/device_index.h"

namespace ker {

using ClaimPtr = std::shared_ptr<const ExtendedResourceClaim>;
using ClaimLookup = std::function<ClaimPtr(const std::string& key)>;

// A pod's claims as the extender must treat them, resolved once per request.
struct PodClaims {
  std::vector<ClaimPtr> pending;     // still to be allocated
  std::vector<ClaimPtr> boundToPod;  // already allocated to this pod (a retried bind)
  // Non-empty when some claim is already bound to this pod: only that node can pass.
  std::string fixedNode;
  // Non-empty when no node can pass whatever happens to devices (missing, invalid, Lost or
  // held claims): reported as unresolvable so preemption does not try.
  std::string unresolvable;
  bool empty() const { return pending.empty() && boundToPod.empty() && unresolvable.empty(); }
};

PodClaims resolveClaims(const Pod& pod, const ClaimLookup& lookup);

struct NodePlan {
  bool fits = false;
  bool unresolvable = false;  // no change of devices on this node can make it fit
  std::string message;
  // claim key -> devices, for the pending claims; bound claims keep theirs.
  std::map<std::string, std::vector<std::string>> assignment;
  size_t leftover = 0;  // matching free devices left after this allocation (for scoring)
};

// Decides whether the pod's claims fit on one node, from the index's current state.
NodePlan planNode(const PodClaims& claims, const std::string& podUid, const std::string& nodeName,
                  const std::map<std::string, std::string>& nodeLabels, const DeviceIndex& index);

}  // namespace ker

#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/objects.h"
#include "model/reasons.h"
#include "model/suitability.h"

// Every change of a device's status, one function each, in the shape of claim_transitions.h:
// each checks the state it starts from (FailedPrecondition, the device untouched, when it is not
// in it) and applies the change with its reason.
namespace ker {

// Free (Available, naming no claim, or freedByClaim by `named`, the claim it names as the caller
// read it) -> Bound to `claim` for `holders`, as the claim's `allocation`: the count its bind
// writes on the claim next (one above the claim's as read; bindClaim), or the claim's own for a
// device put back under a claim already bound.
Status bindDevice(ExtendedResource& device, const ClaimRef& claim, int64_t allocation,
                  std::vector<PodRef> holders,
                  const std::optional<ClaimAllocation>& named = std::nullopt);

// Bound to the claim with `claimUid` -> the same, held also by every pod of `holders`: the
// claim's holders as read, with the pod joining it (ExtendedResourceClaim::holdersWith). The pods
// the device names already stay, though the claim as read may not name them (one whose join went
// through after that read): a device names every holder of its claim, so that it outlives the
// claim object while any of them may use it. Over kMaxClaimHolders, the earliest of the pods only
// the device names are dropped first.
Status joinDevice(ExtendedResource& device, const std::string& claimUid,
                  const std::vector<PodRef>& holders);

// Bound -> Available without a reason: a bind undone before its pod was bound.
Status undoDeviceBind(ExtendedResource& device);

// Naming a claim (Bound, or Available but still naming one) -> Available, naming none (nor an
// allocation). Reason
// Released with `releasedFrom`, the claim whose release freed it (what tells a freed device from
// one coming back), or Orphaned without: the claim it named no longer holds it. A device its
// agent marked unhealthy is freed Pending with the mark instead, not offered until the agent
// finds it healthy.
Status freeDevice(ExtendedResource& device, const std::string& message,
                  std::optional<ClaimRef> releasedFrom);

// Free (Available) -> Bound again to `claim`, which still lists it for `holders` as its
// `allocation` (a device recreated under a name its claim holds). Reason Rebound.
Status rebindDevice(ExtendedResource& device, const ClaimRef& claim, int64_t allocation,
                    std::vector<PodRef> holders, const std::string& message);

// A status without a phase -> Available, naming no claim.
Status initializeDevice(ExtendedResource& device);

// Whether the reason is one of the node agent's marks (DeviceUnhealthy, DeviceNotListed,
// NoNodeFile, model/reasons.h): a device it will not give a container.
bool isAgentMark(Reason reason);

// Marked by its node agent (`mark`, one of isAgentMark's) with the problem as message. A free
// device becomes Pending too, so nobody is offered it; a Bound one stays with its pod. From any
// state but Pending for another reason (someone else's to undo); a device already marked may be
// marked again, with another mark.
Status markDeviceUnhealthy(ExtendedResource& device, Reason mark, const std::string& problem);

// Marked by its agent -> healthy: the mark goes, and a Pending device is Available again.
Status markDeviceHealthy(ExtendedResource& device);

// Whether a claim may hold it: Bound, or naming a claim in any phase. A pod may be running with
// it or about to start with it.
bool heldForClaim(const ExtendedResource& device);
// Whether one of its node agent's marks is on it (whatever its phase).
bool markedUnhealthy(const ExtendedResource& device);

// Free (Available) -> Pending, reason NodeNotRegistered: the node it is on (kNodeLabel) has no
// Node object, so no pod can run there and the device is not offered. Only a free device: one
// Bound stays with its pod, whose own end (the pod garbage collector deletes the pods of a
// deleted Node) frees it.
Status parkDeviceOffNode(ExtendedResource& device, const std::string& message);

// Pending for NodeNotRegistered -> Available: its node is registered (again).
Status unparkDevice(ExtendedResource& device);

// Whether it is Pending because its node has no Node object.
bool parkedOffNode(const ExtendedResource& device);

// The Invalid mark: model/invalid_mark.h.

}  // namespace ker

#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "model/objects.h"

// Every change of a claim's status, one function each: nothing else in the project sets a
// claim's phase, allocation, node, holders, reason or message. Each checks the state it starts
// from and answers FailedPrecondition, leaving the claim as it was, when the claim is not in
// it; otherwise it applies the change and the reason (Reason) that goes with it. Pure:
// the caller writes the result with the resourceVersion it read, so a change in between fails
// with a Conflict instead of being written over.
namespace ker {

// Pending -> Bound: the devices of `allocations` on `node`, allocated to `pod`, its first holder
// (in podRef, or in the holders list when the claim is shareable). `allocations` has one entry
// per request (request "" for a claim without spec.requests, else one per spec.requests
// entry), each as the alternative of that request's firstAvailable it names (one exactly when
// it has any). Reason Bound; allocation one up, the value the bind wrote on the devices first
// (bindDevice). A claim with requests keeps them in status.allocations, listing every device
// in status.extendedResourceNames too (what the node agent and the release read).
Status bindRequests(ExtendedResourceClaim& claim, const PodRef& pod, const std::string& node,
                    std::vector<RequestAllocation> allocations);
// bindRequests for a claim without spec.requests: one allocation, of `devices`.
Status bindClaim(ExtendedResourceClaim& claim, const PodRef& pod, const std::string& node,
                 std::vector<std::string> devices, const std::string& alternative = "");

// Bound to `podUid` -> the same with bindRewrites one up: a bind that reuses the claim another
// call bound to the pod rewrites it, so the write moves its resourceVersion and the status never
// returns to an earlier form.
Status rewriteClaimBind(ExtendedResourceClaim& claim, const std::string& podUid);

// Bound, shareable, not held by `pod`, fewer than kMaxClaimHolders holders -> `pod` added to
// the holders; the allocation stays as it is.
Status joinClaim(ExtendedResourceClaim& claim, const PodRef& pod);

// Bound or Lost, each of `gone` a holder, at least one other holder -> without them: the devices
// stay allocated to the claim for the holders left. (The last holder leaves by releaseClaim.)
Status leaveClaim(ExtendedResourceClaim& claim, const std::vector<PodRef>& gone);

// Bound or Lost -> Pending, holding nothing (no allocation, lost devices, node, holders or
// rewrites). Reason Released with `message`, or, for a claim whose spec is invalid, Invalid
// with the parse error: it is still unusable as it stands and keeps saying why.
Status releaseClaim(ExtendedResourceClaim& claim, const std::string& message);

// Bound -> Pending holding nothing, without a reason: a bind undone before its pod was bound,
// as if it had never been written.
Status undoClaimBind(ExtendedResourceClaim& claim);

// Bound or Lost, `missing` a non-empty subset of its allocation -> Lost, those devices moved to
// the lost list (remembered, so a device that comes back under that name is held for the same
// pod). Reason ExtendedResourceLost with `message`; the names are in the lost list.
Status markClaimLost(ExtendedResourceClaim& claim, const std::vector<std::string>& missing,
                     const std::string& message);

// Lost, `recovered` a non-empty subset of its lost devices -> those back in the allocation;
// Bound with reason Recovered once none is lost, else still Lost. The message is
// recoveredMessage (and which are still lost).
Status recoverClaim(ExtendedResourceClaim& claim, const std::vector<std::string>& recovered);
// "extended resources a, b came back and are bound to the claim again".
std::string recoveredMessage(const std::vector<std::string>& recovered);

// A status without a phase (none any bind wrote) -> Pending holding nothing: whatever it names
// by hand goes.
Status initializeClaim(ExtendedResourceClaim& claim);

// The Invalid mark: model/invalid_mark.h.

}  // namespace ker

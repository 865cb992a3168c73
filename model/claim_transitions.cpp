#include "model/claim_transitions.h"

#include <algorithm>

#include "common/comma_list.h"
#include "model/reasons.h"

namespace ker {

namespace {

Status notFrom(const ExtendedResourceClaim& claim, const std::string& transition,
               const std::string& why) {
  return Status::failedPrecondition("claim " + objectKey(claim.meta.ns, claim.meta.name) +
                                    " cannot be " + transition + ": " + why);
}

bool allocatedOrLost(const ExtendedResourceClaim& claim) {
  return claim.phase == ClaimPhase::kBound || claim.phase == ClaimPhase::kLost;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Every name of `part` is in `whole`, and there is at least one.
bool nonEmptySubset(const std::vector<std::string>& part, const std::vector<std::string>& whole) {
  return !part.empty() && std::all_of(part.begin(), part.end(), [&](const std::string& name) {
    return contains(whole, name);
  });
}

// Pending holds nothing.
void emptyAllocation(ExtendedResourceClaim& claim) {
  claim.alternative.clear();
  claim.allocations.clear();
  claim.phase = ClaimPhase::kPending;
  claim.allocated.clear();
  claim.lost.clear();
  claim.nodeName.clear();
  claim.podRef.reset();
  claim.sharedHolders.clear();
  claim.bindRewrites = 0;
}

void setReason(ExtendedResourceClaim& claim, Reason reason, std::string message) {
  claim.reason = toString(reason);
  claim.message = std::move(message);
}

}  // namespace

Status bindRequests(ExtendedResourceClaim& claim, const PodRef& pod, const std::string& node,
                    std::vector<RequestAllocation> allocations) {
  if (claim.phase != ClaimPhase::kPending) {
    return notFrom(claim, "bound", std::string("it is ") + toString(claim.phase));
  }
  const size_t requests = std::max<size_t>(claim.requests.size(), 1);
  if (allocations.size() != requests) {
    return notFrom(claim, "bound with " + std::to_string(allocations.size()) + " allocations",
                   "it has " + std::to_string(requests) + " requests");
  }
  std::vector<std::string> devices;
  for (size_t i = 0; i < requests; ++i) {
    const RequestAllocation& a = allocations[i];
    const std::string& request = claim.requests.empty() ? "" : claim.requests[i].name;
    const auto& alternatives =
        claim.requests.empty() ? claim.firstAvailable : claim.requests[i].firstAvailable;
    if (a.request != request) {
      return notFrom(claim, "bound for request \"" + a.request + "\"",
                     "its request " + std::to_string(i) + " is \"" + request + "\"");
    }
    if (alternatives.empty() ? !a.alternative.empty()
                             : alternativeIn(alternatives, a.alternative) == nullptr) {
      return notFrom(claim, "bound as alternative \"" + a.alternative + "\"",
                     "that is none of its firstAvailable");
    }
    devices.insert(devices.end(), a.devices.begin(), a.devices.end());
  }
  if (claim.requests.empty()) {
    claim.alternative = allocations[0].alternative;
    claim.allocations.clear();
  } else {
    claim.alternative.clear();
    claim.allocations = std::move(allocations);
  }
  claim.allocated = std::move(devices);
  claim.phase = ClaimPhase::kBound;
  claim.lost.clear();
  claim.nodeName = node;
  if (claim.shareable) {
    claim.podRef.reset();
    claim.sharedHolders = {pod};
  } else {
    claim.podRef = pod;
    claim.sharedHolders.clear();
  }
  claim.bindRewrites = 0;
  ++claim.allocation;
  setReason(claim, Reason::kBound, "allocated to pod " + pod.name + " on node " + node);
  return {};
}

Status bindClaim(ExtendedResourceClaim& claim, const PodRef& pod, const std::string& node,
                 std::vector<std::string> devices, const std::string& alternative) {
  return bindRequests(claim, pod, node, {RequestAllocation{"", std::move(devices), alternative}});
}

Status rewriteClaimBind(ExtendedResourceClaim& claim, const std::string& podUid) {
  if (claim.phase != ClaimPhase::kBound || !claim.heldBy(podUid)) {
    return notFrom(claim, "rewritten for pod uid " + podUid, "it is not Bound to that pod");
  }
  ++claim.bindRewrites;
  return {};
}

Status joinClaim(ExtendedResourceClaim& claim, const PodRef& pod) {
  if (claim.phase != ClaimPhase::kBound || !claim.shareable) {
    return notFrom(claim, "joined by pod " + pod.name, "it is not a Bound shareable claim");
  }
  if (claim.heldBy(pod.uid, pod.name)) {
    return notFrom(claim, "joined by pod " + pod.name, "the pod holds it already");
  }
  if (claim.holders().size() >= kMaxClaimHolders) {
    return notFrom(claim, "joined by pod " + pod.name,
                   "it has " + std::to_string(kMaxClaimHolders) + " holders, the most it may");
  }
  claim.sharedHolders.push_back(pod);
  return {};
}

Status leaveClaim(ExtendedResourceClaim& claim, const std::vector<PodRef>& gone) {
  const auto holders = claim.holders();
  auto isGone = [&](const PodRef& ref) {
    return std::find(gone.begin(), gone.end(), ref) != gone.end();
  };
  if (!allocatedOrLost(claim) || gone.empty()) {
    return notFrom(claim, "left", "it is not allocated, or nobody leaves");
  }
  for (const auto& ref : gone) {
    if (std::find(holders.begin(), holders.end(), ref) == holders.end()) {
      return notFrom(claim, "left by pod " + ref.name, "the pod does not hold it");
    }
  }
  if (std::all_of(holders.begin(), holders.end(), isGone)) {
    return notFrom(claim, "left", "no holder would be left (that is a release)");
  }
  std::erase_if(claim.sharedHolders, isGone);
  if (claim.podRef && isGone(*claim.podRef)) {
    claim.podRef.reset();
  }
  return {};
}

Status releaseClaim(ExtendedResourceClaim& claim, const std::string& message) {
  if (!allocatedOrLost(claim)) {
    return notFrom(claim, "released", "it holds nothing");
  }
  emptyAllocation(claim);
  if (claim.invalid.empty()) {
    setReason(claim, Reason::kReleased, message);
  } else {
    setReason(claim, Reason::kInvalid, claim.invalid);
  }
  return {};
}

Status undoClaimBind(ExtendedResourceClaim& claim) {
  if (claim.phase != ClaimPhase::kBound) {
    return notFrom(claim, "unbound", std::string("it is ") + toString(claim.phase));
  }
  emptyAllocation(claim);
  setReason(claim, Reason::kNone, "");
  return {};
}

Status markClaimLost(ExtendedResourceClaim& claim, const std::vector<std::string>& missing,
                     const std::string& message) {
  if (!allocatedOrLost(claim) || !nonEmptySubset(missing, claim.allocated)) {
    return notFrom(claim, "marked Lost", "the devices missing are not of its allocation");
  }
  claim.phase = ClaimPhase::kLost;
  std::erase_if(claim.allocated, [&](const std::string& name) { return contains(missing, name); });
  for (const auto& name : missing) {
    if (!contains(claim.lost, name)) {
      claim.lost.push_back(name);
    }
  }
  setReason(claim, Reason::kLost, message);
  return {};
}

Status recoverClaim(ExtendedResourceClaim& claim, const std::vector<std::string>& recovered) {
  if (claim.phase != ClaimPhase::kLost || !nonEmptySubset(recovered, claim.lost)) {
    return notFrom(claim, "recovered", "the devices back are not among those it lost");
  }
  std::erase_if(claim.lost, [&](const std::string& name) { return contains(recovered, name); });
  claim.allocated.insert(claim.allocated.end(), recovered.begin(), recovered.end());
  const std::string message = recoveredMessage(recovered);
  if (claim.lost.empty()) {
    claim.phase = ClaimPhase::kBound;
    setReason(claim, Reason::kRecovered, message);
  } else {
    setReason(claim, Reason::kLost, message + "; still lost: " + joinNames(claim.lost));
  }
  return {};
}

std::string recoveredMessage(const std::vector<std::string>& recovered) {
  const bool many = recovered.size() > 1;
  return std::string("extended resource") + (many ? "s " : " ") + joinNames(recovered) +
         " came back and " + (many ? "are" : "is") + " bound to the claim again";
}

Status initializeClaim(ExtendedResourceClaim& claim) {
  if (claim.phaseWritten) {
    return notFrom(claim, "initialized", "its status has a phase");
  }
  emptyAllocation(claim);
  return {};
}

}  // namespace ker

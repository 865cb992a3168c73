#include "model/device_transitions.h"

#include <algorithm>

#include "model/suitability.h"

namespace ker {

namespace {

Status notFrom(const ExtendedResource& device, const std::string& transition,
               const std::string& why) {
  return Status::failedPrecondition("device " + device.meta.name + " cannot be " + transition +
                                    ": " + why);
}

bool isFree(const ExtendedResource& device) {
  return device.phase == DevicePhase::kAvailable && !heldForClaim(device);
}

void setReason(ExtendedResource& device, Reason reason, std::string message) {
  device.reason = toString(reason);
  device.message = std::move(message);
}

// Available, naming no claim nor holders.
void makeFree(ExtendedResource& device, std::optional<ClaimRef> releasedFrom) {
  device.phase = DevicePhase::kAvailable;
  device.claimRef.reset();
  device.holders.clear();
  device.allocation = 0;
  device.releasedFrom = std::move(releasedFrom);
}

void makeBound(ExtendedResource& device, const ClaimRef& claim, int64_t allocation,
               std::vector<PodRef> holders) {
  device.phase = DevicePhase::kBound;
  device.claimRef = claim;
  device.allocation = allocation;
  device.holders = std::move(holders);
  device.releasedFrom.reset();
}

}  // namespace

Status bindDevice(ExtendedResource& device, const ClaimRef& claim, int64_t allocation,
                  std::vector<PodRef> holders, const std::optional<ClaimAllocation>& named) {
  if (!isFree(device) && !(named && freedByClaim(device, *named))) {
    return notFrom(device, "bound to claim " + objectKey(claim.ns, claim.name), "it is not free");
  }
  makeBound(device, claim, allocation, std::move(holders));
  setReason(device, Reason::kNone, "");
  return {};
}

Status joinDevice(ExtendedResource& device, const std::string& claimUid,
                  const std::vector<PodRef>& holders) {
  if (device.phase != DevicePhase::kBound || !device.claimRef || device.claimRef->uid != claimUid) {
    return notFrom(device, "given holders", "it is not Bound to claim uid " + claimUid);
  }
  auto names = [](const std::vector<PodRef>& refs, const PodRef& ref) {
    return std::any_of(refs.begin(), refs.end(), [&](const PodRef& r) { return r.uid == ref.uid; });
  };
  const std::vector<PodRef>& wanted = holders;
  std::vector<PodRef> onlyHere;
  for (const auto& ref : device.holders) {
    if (!names(wanted, ref)) {
      onlyHere.push_back(ref);
    }
  }
  const size_t room = wanted.size() < kMaxClaimHolders ? kMaxClaimHolders - wanted.size() : 0;
  if (onlyHere.size() > room) {
    onlyHere.erase(onlyHere.begin(), onlyHere.end() - static_cast<std::ptrdiff_t>(room));
  }
  std::vector<PodRef> next;
  for (const auto& ref : device.holders) {
    if (names(wanted, ref) || names(onlyHere, ref)) {
      next.push_back(ref);
    }
  }
  for (const auto& ref : wanted) {
    if (!names(next, ref)) {
      next.push_back(ref);
    }
  }
  device.holders = std::move(next);
  return {};
}

Status undoDeviceBind(ExtendedResource& device) {
  if (device.phase != DevicePhase::kBound) {
    return notFrom(device, "unbound", std::string("it is ") + toString(device.phase));
  }
  makeFree(device, std::nullopt);
  setReason(device, Reason::kNone, "");
  return {};
}

Status freeDevice(ExtendedResource& device, const std::string& message,
                  std::optional<ClaimRef> releasedFrom) {
  if (!device.claimRef && device.phase != DevicePhase::kBound) {
    return notFrom(device, "freed", "it names no claim");
  }
  const Reason reason = releasedFrom ? Reason::kReleased : Reason::kOrphaned;
  makeFree(device, std::move(releasedFrom));
  if (markedUnhealthy(device)) {
    // Free and not offered: the agent's mark stays until it finds the device healthy again
    // (or withdraws it), so nobody is offered it in between.
    device.phase = DevicePhase::kPending;
  } else {
    setReason(device, reason, message);
  }
  return {};
}

Status rebindDevice(ExtendedResource& device, const ClaimRef& claim, int64_t allocation,
                    std::vector<PodRef> holders, const std::string& message) {
  if (device.phase != DevicePhase::kAvailable) {
    return notFrom(device, "bound back to claim " + objectKey(claim.ns, claim.name),
                   std::string("it is ") + toString(device.phase));
  }
  makeBound(device, claim, allocation, std::move(holders));
  setReason(device, Reason::kRebound, message);
  return {};
}

Status initializeDevice(ExtendedResource& device) {
  if (device.phaseWritten) {
    return notFrom(device, "initialized", "its status has a phase");
  }
  makeFree(device, std::nullopt);
  setReason(device, Reason::kNone, "");
  return {};
}

bool isAgentMark(Reason reason) {
  return reason == Reason::kDeviceUnhealthy || reason == Reason::kDeviceNotListed ||
         reason == Reason::kNoNodeFile;
}

Status markDeviceUnhealthy(ExtendedResource& device, Reason mark, const std::string& problem) {
  if (!isAgentMark(mark)) {
    return notFrom(device, std::string("marked ") + toString(mark), "that is no node agent's mark");
  }
  const bool bound = device.phase == DevicePhase::kBound;
  if (!bound && !isFree(device) &&
      !(device.phase == DevicePhase::kPending && markedUnhealthy(device))) {
    return notFrom(device, "marked unhealthy", "it is Pending for another reason");
  }
  if (!bound) {
    device.phase = DevicePhase::kPending;
  }
  setReason(device, mark, problem);
  return {};
}

Status markDeviceHealthy(ExtendedResource& device) {
  const bool bound = device.phase == DevicePhase::kBound;
  if (!markedUnhealthy(device) ||
      !(bound || (device.phase == DevicePhase::kPending && !device.claimRef))) {
    return notFrom(device, "marked healthy", "it is not marked unhealthy by its agent");
  }
  if (!bound) {
    device.phase = DevicePhase::kAvailable;
  }
  setReason(device, Reason::kNone, "");
  return {};
}

bool heldForClaim(const ExtendedResource& device) {
  return device.phase == DevicePhase::kBound || device.claimRef.has_value();
}

bool markedUnhealthy(const ExtendedResource& device) {
  return isAgentMark(parseReason(device.reason));
}

Status parkDeviceOffNode(ExtendedResource& device, const std::string& message) {
  if (!isFree(device)) {
    return notFrom(device, "taken out of offer for its node", "it is not free");
  }
  device.phase = DevicePhase::kPending;
  device.releasedFrom.reset();
  setReason(device, Reason::kNodeNotRegistered, message);
  return {};
}

Status unparkDevice(ExtendedResource& device) {
  if (!parkedOffNode(device)) {
    return notFrom(device, "offered again", "it is not Pending for its node");
  }
  makeFree(device, std::nullopt);
  setReason(device, Reason::kNone, "");
  return {};
}

bool parkedOffNode(const ExtendedResource& device) {
  return device.phase == DevicePhase::kPending && !device.claimRef &&
         parseReason(device.reason) == Reason::kNodeNotRegistered;
}

}  // namespace ker

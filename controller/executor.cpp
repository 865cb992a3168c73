#include "controller/executor.h"

#include <algorithm>

#include "common/api_error.h"
#include "common/api_time.h"
#include "common/logging.h"

namespace ker {

namespace {

ExtendedResource available(ExtendedResource d, const std::string& reason,
                           const std::string& message) {
  d.phase = DevicePhase::kAvailable;
  d.claimRef.reset();
  d.reason = reason;
  d.message = message;
  return d;
}

ExtendedResourceClaim pending(ExtendedResourceClaim c) {
  c.makePending();
  return c;
}

std::string key(const ExtendedResourceClaim& c) {
  return objectKey(c.meta.ns, c.meta.name);
}

// The contract: a reason naming the device (kubectl's Reason column shows it). A few
// names at most; the message lists them all.
std::string lostReason(const std::vector<std::string>& lost) {
  constexpr size_t kNamed = 3;
  std::vector<std::string> named(lost.begin(), lost.begin() + std::min(lost.size(), kNamed));
  std::string reason = "ExtendedResourceLost: " + joinNames(named);
  if (lost.size() > kNamed) {
    reason += " and " + std::to_string(lost.size() - kNamed) + " more";
  }
  return reason;
}

}  // namespace

Executor::Executor(ApiClient& api, EventRecorder* events, ControllerMetrics* metrics,
                   WriteGate mayWrite, SystemClock clock)
    : api_(api),
      events_(events),
      metrics_(metrics),
      mayWrite_(std::move(mayWrite)),
      clock_(std::move(clock)) {}

void Executor::gate() const {
  if (!mayWrite()) {
    throw NotLeading();
  }
}

void Executor::record(const ObjectReference& ref, EventType type, const std::string& reason,
                      const std::string& message) {
  if (events_) {
    events_->record(ref, type, reason, message);
  }
}

Executor::ReleaseOutcome Executor::releaseClaim(const ExtendedResourceClaim& claim,
                                                const action::ReleaseClaim& a,
                                                const DeviceLookup& cached) {
  ExtendedResourceClaim next = pending(claim);
  // An invalid claim is still unusable as it stands: it keeps saying why (the Released event
  // records the release).
  const bool invalid = !claim.invalid.empty();
  next.reason = invalid ? kInvalidReason : "Released";
  next.message = invalid ? claim.invalid : a.message;
  gate();
  bool claimDeleted = false;
  try {
    api_.updateStatus(resources::kExtendedResourceClaims, claim.meta.ns, next.toJson());
  } catch (const ApiError& e) {
    // Deleted with its pod: nothing left to release on the claim, but its devices still
    // point at it.
    if (!e.isNotFound()) {
      throw;
    }
    claimDeleted = true;
  }
  if (claimDeleted) {
    log::info("claim to release was deleted; freeing its devices",
              {{"claim", key(claim)}, {"devices", claim.allocated}});
  } else {
    if (metrics_) {
      metrics_->releases.labels({toString(a.cause)}).inc();
    }
    log::info("released claim", {{"claim", key(claim)},
                                 {"cause", toString(a.cause)},
                                 {"devices", claim.allocated},
                                 {"why", a.message}});
    record(referenceTo(claim), EventType::kNormal, "Released", a.message);
    // On the holder too, gone or not (#5: events on pods whose claims it releases): an event
    // outlives its object, and `kubectl get events` shows it for a deleted pod.
    if (claim.podRef) {
      record({"v1", "Pod", claim.meta.ns, claim.podRef->name, claim.podRef->uid},
             EventType::kNormal, "ClaimReleased",
             "claim " + claim.meta.name + " released: " + a.message);
    }
  }

  ReleaseOutcome out;
  const std::string reason = claimDeleted ? "Orphaned" : kReleasedReason;
  const std::string message =
      claimDeleted ? "claim " + key(claim) + " was deleted" : releasedMessage(key(claim));
  for (const auto& name : claim.listedDevices()) {
    std::string triedVersion;
    switch (freeReleasedDevice(name, claim, cached(name), reason, message, triedVersion)) {
      case FreeResult::kFreed:
        out.freed.push_back(name);
        break;
      case FreeResult::kFailed:
        out.failed[name] = triedVersion;
        break;
      case FreeResult::kNothingToDo:
        break;
    }
  }
  return out;
}

Executor::FreeResult Executor::freeReleasedDevice(
    const std::string& name, const ExtendedResourceClaim& claim, const CachedDevice& cached,
    const std::string& reason, const std::string& message, std::string& triedVersion) {
  std::optional<ExtendedResource> device;
  if (cached && isBoundTo(*cached, claim)) {
    device = *cached;
  }
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (!device) {
      // The cache may lag behind the extender's write, or a write just conflicted: the API
      // server decides.
      try {
        if (metrics_) {
          metrics_->liveReads.inc();
        }
        device = ExtendedResource::fromJson(api_.get(resources::kExtendedResources, "", name));
      } catch (const ApiError& e) {
        if (e.isNotFound()) {
          return FreeResult::kNothingToDo;
        }
        log::warn("reading a released device failed", {{"device", name}, {"error", e.what()}});
        triedVersion.clear();
        return FreeResult::kFailed;
      }
      if (!isBoundTo(*device, claim)) {
        return FreeResult::kNothingToDo;
      }
    }
    gate();
    triedVersion = device->meta.resourceVersion;
    try {
      api_.updateStatus(resources::kExtendedResources, "",
                        available(*device, reason, message).toJson());
      return FreeResult::kFreed;
    } catch (const ApiError& e) {
      if (e.isNotFound()) {
        return FreeResult::kNothingToDo;
      }
      if (!e.isConflict()) {
        log::warn("freeing a released device failed", {{"device", name}, {"error", e.what()}});
        return FreeResult::kFailed;
      }
      device.reset();
    }
  }
  return FreeResult::kFailed;
}

void Executor::markClaimLost(const ExtendedResourceClaim& claim, const action::MarkClaimLost& a) {
  ExtendedResourceClaim next = claim;
  next.phase = ClaimPhase::kLost;
  std::erase_if(next.allocated, [&](const std::string& name) {
    return std::find(a.missing.begin(), a.missing.end(), name) != a.missing.end();
  });
  // Remembered, not dropped: a device that comes back under that name is held for this pod.
  for (const auto& name : a.missing) {
    if (std::find(next.lost.begin(), next.lost.end(), name) == next.lost.end()) {
      next.lost.push_back(name);
    }
  }
  next.reason = lostReason(next.lost);
  next.message = a.message;
  gate();
  api_.updateStatus(resources::kExtendedResourceClaims, claim.meta.ns, next.toJson());
  if (metrics_) {
    metrics_->repairs.labels({"claim_lost"}).inc();
  }
  log::warn("claim lost", {{"claim", key(claim)}, {"devices", a.missing}, {"why", a.message}});
  record(referenceTo(claim), EventType::kWarning, "Lost", a.message);
  if (claim.podRef) {
    record({"v1", "Pod", claim.meta.ns, claim.podRef->name, claim.podRef->uid}, EventType::kWarning,
           "ClaimLost", "claim " + claim.meta.name + " lost: " + a.message);
  }
}

void Executor::recoverClaim(const ExtendedResourceClaim& claim, const action::RecoverClaim& a) {
  ExtendedResourceClaim next = claim;
  std::erase_if(next.lost, [&](const std::string& name) {
    return std::find(a.recovered.begin(), a.recovered.end(), name) != a.recovered.end();
  });
  next.allocated.insert(next.allocated.end(), a.recovered.begin(), a.recovered.end());
  const std::string message = "extended resource" +
                              std::string(a.recovered.size() > 1 ? "s " : " ") +
                              joinNames(a.recovered) + " came back and " +
                              (a.recovered.size() > 1 ? "are" : "is") + " bound to the claim again";
  if (next.lost.empty()) {
    next.phase = ClaimPhase::kBound;
    next.reason = "Recovered";
    next.message = message;
  } else {
    next.reason = lostReason(next.lost);
    next.message = message + "; still lost: " + joinNames(next.lost);
  }
  gate();
  api_.updateStatus(resources::kExtendedResourceClaims, claim.meta.ns, next.toJson());
  if (metrics_) {
    metrics_->repairs.labels({"claim_recovered"}).inc();
  }
  log::info("claim recovered devices",
            {{"claim", key(claim)}, {"devices", a.recovered}, {"phase", toString(next.phase)}});
  record(referenceTo(claim), EventType::kNormal, "Recovered", message);
  if (claim.podRef) {
    record({"v1", "Pod", claim.meta.ns, claim.podRef->name, claim.podRef->uid}, EventType::kNormal,
           "ClaimRecovered", "claim " + claim.meta.name + ": " + message);
  }
}

bool Executor::rebindDevice(const ExtendedResource& device, const ExtendedResourceClaim& claim) {
  // The cache may not have seen the claim released yet: binding the device to a claim that
  // no longer waits for it would keep it from everyone until the orphan repair.
  if (metrics_) {
    metrics_->liveReads.inc();
  }
  const ExtendedResourceClaim live = ExtendedResourceClaim::fromJson(
      api_.get(resources::kExtendedResourceClaims, claim.meta.ns, claim.meta.name));
  const auto held = live.heldDevices();
  if (live.meta.uid != claim.meta.uid || !live.podRef ||
      std::find(held.begin(), held.end(), device.meta.name) == held.end()) {
    return false;
  }
  ExtendedResource next = device;
  next.phase = DevicePhase::kBound;
  next.claimRef = ClaimRef{claim.meta.ns, claim.meta.name, claim.meta.uid};
  next.reason = kReboundReason;
  next.message = "claim " + key(claim) + " still lists a device of this name for its pod";
  gate();
  api_.updateStatus(resources::kExtendedResources, "", next.toJson());
  if (metrics_) {
    metrics_->repairs.labels({"device_rebound"}).inc();
  }
  log::info("rebound returning device to the claim that lost it",
            {{"device", device.meta.name}, {"claim", key(claim)}});
  return true;
}

void Executor::freeDevice(const ExtendedResource& device, const action::FreeDevice& a) {
  gate();
  api_.updateStatus(resources::kExtendedResources, "",
                    available(device, "Orphaned", a.message).toJson());
  if (metrics_) {
    metrics_->repairs.labels({"device_freed"}).inc();
  }
  log::warn("freed orphaned device", {{"device", device.meta.name}, {"why", a.message}});
}

void Executor::initDeviceStatus(const ExtendedResource& device) {
  gate();
  api_.updateStatus(resources::kExtendedResources, "", available(device, "", "").toJson());
  if (metrics_) {
    metrics_->repairs.labels({"device_initialized"}).inc();
  }
  if (log::v(2)) {
    log::info("initialized device status", {{"device", device.meta.name}});
  }
}

void Executor::initClaimStatus(const ExtendedResourceClaim& claim) {
  // A status without a phase is not one any bind wrote: whatever allocation it names (by
  // hand) goes, as Pending means; devices Bound to the claim are then orphans to repair.
  gate();
  api_.updateStatus(resources::kExtendedResourceClaims, claim.meta.ns, pending(claim).toJson());
  if (metrics_) {
    metrics_->repairs.labels({"claim_initialized"}).inc();
  }
  if (log::v(2)) {
    log::info("initialized claim status", {{"claim", key(claim)}});
  }
}

template <class Object>
void Executor::patchInvalid(const Object& obj, const Resource& res, nlohmann::json status) {
  // A merge patch of just these fields: whatever else the object holds (a Bound device's
  // claimRef, a claim's allocation) stays as it is, parsable or not. The resourceVersion makes
  // it conditional on the object the decision was made on.
  const nlohmann::json patch = {{"metadata", {{"resourceVersion", obj.meta.resourceVersion}}},
                                {"status", std::move(status)}};
  gate();
  api_.patch(res, obj.meta.ns, obj.meta.name, PatchType::kMerge, patch, "status");
}

template <class Object>
void Executor::markInvalid(const Object& obj, const Resource& res, const char* initPhase) {
  nlohmann::json status = {{"reason", kInvalidReason}, {"message", obj.invalid}};
  if (initPhase) {
    status["phase"] = initPhase;
  }
  patchInvalid(obj, res, std::move(status));
  if (metrics_) {
    metrics_->repairs.labels({"marked_invalid"}).inc();
  }
  log::warn("invalid object", {{"kind", res.plural},
                               {"object", objectKey(obj.meta.ns, obj.meta.name)},
                               {"why", obj.invalid}});
}

template <class Object>
void Executor::clearInvalid(const Object& obj, const Resource& res) {
  patchInvalid(obj, res, {{"reason", nullptr}, {"message", nullptr}});
  log::info("object is valid again",
            {{"kind", res.plural}, {"object", objectKey(obj.meta.ns, obj.meta.name)}});
}

void Executor::markDeviceInvalid(const ExtendedResource& device) {
  markInvalid(device, resources::kExtendedResources,
              device.phaseWritten ? nullptr : toString(DevicePhase::kAvailable));
}

void Executor::markClaimInvalid(const ExtendedResourceClaim& claim) {
  markInvalid(claim, resources::kExtendedResourceClaims,
              claim.phaseWritten ? nullptr : toString(ClaimPhase::kPending));
  record(referenceTo(claim), EventType::kWarning, kInvalidReason, claim.invalid);
}

void Executor::clearDeviceInvalid(const ExtendedResource& device) {
  clearInvalid(device, resources::kExtendedResources);
}

void Executor::clearClaimInvalid(const ExtendedResourceClaim& claim) {
  clearInvalid(claim, resources::kExtendedResourceClaims);
}

bool Executor::recordInvalidPod(const Pod& pod) {
  if (!mayWrite()) {
    return false;
  }
  record(referenceTo(pod), EventType::kWarning, "InvalidClaims",
         std::string("annotation ") + kClaimsAnnotation + " cannot be used: " + pod.invalid);
  return true;
}

void Executor::recordClaimDeletedUnderPod(const ExtendedResourceClaim& claim, const Pod& pod) {
  if (mayWrite()) {
    record(referenceTo(pod), EventType::kWarning, "ClaimDeleted",
           "claim " + claim.meta.name + " was deleted while this pod held it: its devices (" +
               joinNames(claim.allocated) + ") are freed and may be given to another pod");
  }
}

bool Executor::nudgePod(const Pod& pod) {
  const nlohmann::json patch = {
      {"metadata", {{"annotations", {{kRequeueAtAnnotation, formatMicroTime(clock_())}}}}}};
  gate();
  try {
    api_.patch(resources::kPods, pod.meta.ns, pod.meta.name, PatchType::kMerge, patch);
  } catch (const ApiError& e) {
    if (e.isNotFound()) {
      return false;
    }
    throw;
  }
  if (metrics_) {
    metrics_->podNudges.inc();
  }
  if (log::v(2)) {
    log::info("nudged pending pod", {{"pod", objectKey(pod.meta.ns, pod.meta.name)}});
  }
  return true;
}

void Executor::recordBound(const ExtendedResourceClaim& claim) {
  if (!mayWrite()) {
    return;
  }
  std::string devices;
  for (const auto& d : claim.allocated) {
    devices += (devices.empty() ? "" : ", ") + d;
  }
  record(referenceTo(claim), EventType::kNormal, "Bound",
         "allocated " + devices + " on node " + claim.nodeName + " to pod " +
             (claim.podRef ? claim.podRef->name : std::string("?")));
}

}  // namespace ker

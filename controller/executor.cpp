#include "controller/executor.h"

#include <algorithm>

#include "common/api_error.h"
#include "common/leader_election.h"
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

std::string key(const ExtendedResourceClaim& c) {
  return objectKey(c.meta.ns, c.meta.name);
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
  ExtendedResourceClaim next = claim;
  next.phase = ClaimPhase::kPending;
  next.allocated.clear();
  next.nodeName.clear();
  next.podRef.reset();
  next.reason = "Released";
  next.message = a.message;
  gate();
  api_.updateStatus(resources::kExtendedResourceClaims, claim.meta.ns, next.toJson());
  if (metrics_) {
    metrics_->releases.labels({toString(a.cause)}).inc();
  }
  log::info("released claim", {{"claim", key(claim)},
                               {"cause", toString(a.cause)},
                               {"devices", claim.allocated},
                               {"why", a.message}});
  record(referenceTo(claim), EventType::kNormal, "Released", a.message);
  if (claim.podRef) {
    record({"v1", "Pod", claim.meta.ns, claim.podRef->name, claim.podRef->uid}, EventType::kNormal,
           "ClaimReleased", "claim " + claim.meta.name + " released: " + a.message);
  }

  ReleaseOutcome out;
  const std::string message = "claim " + key(claim) + " was released";
  for (const auto& name : claim.allocated) {
    switch (freeReleasedDevice(name, claim, cached(name), message)) {
      case FreeResult::kFreed:
        out.freed.push_back(name);
        break;
      case FreeResult::kFailed:
        out.failed.push_back(name);
        break;
      case FreeResult::kNothingToDo:
        break;
    }
  }
  return out;
}

Executor::FreeResult Executor::freeReleasedDevice(const std::string& name,
                                                  const ExtendedResourceClaim& claim,
                                                  const CachedDevice& cached,
                                                  const std::string& message) {
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
        return FreeResult::kFailed;
      }
      if (!isBoundTo(*device, claim)) {
        return FreeResult::kNothingToDo;
      }
    }
    gate();
    try {
      api_.updateStatus(resources::kExtendedResources, "",
                        available(*device, "Released", message).toJson());
      return FreeResult::kFreed;
    } catch (const ApiError& e) {
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
  next.reason = "ExtendedResourceLost";
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

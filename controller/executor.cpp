#include "controller/executor.h"

#include "common/api_time.h"
#include "common/logging.h"
#include "common/status.h"
#include "controller/write_request.h"
#include "model/device_transitions.h"
#include "model/objects.h"
#include "model/resource_class.h"
#include "model/typed_client.h"

namespace ker {

namespace {

std::string objectOf(const StatusWrite& w) {
  return objectKey(w.ns, w.name);
}

// One line per applied write, at the level its change deserves.
void logChange(const Plan& plan, const StatusWrite& w, const std::vector<std::string>& devices) {
  const std::string object = objectOf(w);
  switch (*plan.change) {
    case Change::kReleased:
      log::info("released claim", {{"claim", object},
                                   {"cause", toString(*plan.cause)},
                                   {"devices", devices},
                                   {"why", plan.why}});
      return;
    case Change::kHoldersLeft:
      log::info("holders left shared claim",
                {{"claim", object}, {"cause", toString(*plan.cause)}, {"why", plan.why}});
      return;
    case Change::kClaimLost:
      log::warn("claim lost", {{"claim", object}, {"why", plan.why}});
      return;
    case Change::kClaimRecovered:
      log::info("claim recovered devices", {{"claim", object}, {"why", plan.why}});
      return;
    case Change::kDeviceRebound:
      log::info("rebound returning device to the claim that lost it",
                {{"device", object}, {"why", plan.why}});
      return;
    case Change::kDeviceFreed:
      log::warn("freed orphaned device", {{"device", object}, {"why", plan.why}});
      return;
    case Change::kDeviceParked:
      log::warn("device not offered: its node is not registered",
                {{"device", object}, {"why", plan.why}});
      return;
    case Change::kDeviceUnparked:
      log::info("device offered again: its node is registered", {{"device", object}});
      return;
    case Change::kMarkedInvalid:
      log::warn("invalid object",
                {{"kind", w.resource->plural}, {"object", object}, {"why", plan.why}});
      return;
    case Change::kValidAgain:
      log::info("object is valid again", {{"kind", w.resource->plural}, {"object", object}});
      return;
    case Change::kUnprotected:
      log::info("nothing holds the deleting object any more; its deletion completes",
                {{"kind", w.resource->plural}, {"object", object}});
      return;
    case Change::kDeletionWaiting:
      log::info("deleting object in use: its deletion waits for the release",
                {{"kind", w.resource->plural}, {"object", object}, {"why", plan.why}});
      return;
    case Change::kProtected:
      if (log::v(2)) {
        log::info("added the in-use protection finalizer",
                  {{"kind", w.resource->plural}, {"object", object}});
      }
      return;
    case Change::kClaimInitialized:
    case Change::kDeviceInitialized:
      if (log::v(2)) {
        log::info("initialized status", {{"kind", w.resource->plural}, {"object", object}});
      }
      return;
  }
}

// The object a write's reply holds; nullptr when it does not read as one (logged): the write
// happened all the same, and the watch brings the object.
template <class T>
std::shared_ptr<const T> stored(const nlohmann::json& reply) {
  try {
    return std::make_shared<const T>(T::fromJson(reply));
  } catch (const std::exception& e) {
    log::warn("a write's reply does not read",
              {{"kind", resourceOf<T>().plural}, {"error", e.what()}});
    return nullptr;
  }
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

void Executor::write(const StatusWrite& w, Outcome& out) {
  gate();
  const WriteRequest request = renderWrite(w);
  const nlohmann::json written = request.mergePatch
                                     ? api_.patch(*w.resource, w.ns, w.name, PatchType::kMerge,
                                                  request.body, request.subresource)
                                     : api_.updateStatus(*w.resource, w.ns, request.body);
  if (w.resource == &resourceOf<ExtendedResourceClaim>()) {
    out.writtenClaim = stored<ExtendedResourceClaim>(written);
  } else if (w.resource == &resourceOf<ExtendedResource>()) {
    out.writtenDevice = stored<ExtendedResource>(written);
  }
}

void Executor::count(const Plan& plan) {
  if (!metrics_ || !plan.change) {
    return;
  }
  if (*plan.change == Change::kReleased || *plan.change == Change::kHoldersLeft) {
    metrics_->releases.labels({toString(*plan.cause)}).inc();
  } else if (*plan.change != Change::kValidAgain && *plan.change != Change::kProtected &&
             *plan.change != Change::kUnprotected && *plan.change != Change::kDeletionWaiting) {
    metrics_->repairs.labels({toString(*plan.change)}).inc();
  }
}

bool Executor::record(const std::vector<PlannedEvent>& events) {
  if (!mayWrite()) {
    return false;
  }
  if (events_) {
    for (const auto& e : events) {
      events_->record(e.about, e.type, e.reason, e.message);
    }
  }
  return true;
}

Executor::Outcome Executor::apply(const Plan& plan, const DeviceLookup& cached) {
  Outcome out;
  if (!plan.refused.ok()) {
    // A decision at odds with the object it was made on: a fault of ours, never the cluster's.
    log::error("status transition refused: nothing written", {{"error", plan.refused.message()}});
  }
  bool claimGone = false;
  if (plan.write && !plan.frees) {
    write(*plan.write, out);
  } else if (plan.write && !unlessNotFound([&] { write(*plan.write, out); })) {
    claimGone = true;
    log::info("claim to release was deleted; freeing its devices",
              {{"claim", objectOf(*plan.write)}, {"devices", plan.frees->names}});
  }
  if (!claimGone) {
    if (plan.write) {
      count(plan);
      logChange(plan, *plan.write, plan.frees ? plan.frees->names : std::vector<std::string>{});
    }
    record(plan.events);
  }
  if (!plan.frees) {
    return out;
  }
  for (const auto& name : plan.frees->names) {
    std::string triedVersion;
    CachedDevice freed;
    switch (freeReleasedDevice(name, *plan.frees, claimGone, cached(name), triedVersion, freed)) {
      case FreeResult::kFreed:
        if (freed) {
          out.freed.push_back(std::move(freed));
        }
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

Executor::FreeResult Executor::freeReleasedDevice(const std::string& name, const DeviceFrees& frees,
                                                  bool claimGone, const CachedDevice& cached,
                                                  std::string& triedVersion, CachedDevice& freed) {
  const ClaimRef& claim = frees.from;
  const FreedStatus& status = claimGone ? frees.statusIfClaimGone : frees.status;
  std::optional<ExtendedResource> device;
  if (cached && isBoundTo(*cached, claim)) {
    device = *cached;
  }
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (!device) {
      // The cache may lag behind the extender's write, or a write just conflicted: the API
      // server decides.
      if (metrics_) {
        metrics_->liveReads.inc();
      }
      ExtendedResource live;
      if (Status read = getObject(api_, name, live); !read.ok()) {
        if (classify(read) == Failure::kGone) {
          return FreeResult::kNothingToDo;
        }
        log::warn("reading a released device failed",
                  {{"device", name}, {"error", read.message()}});
        triedVersion.clear();
        return FreeResult::kFailed;
      }
      device = std::move(live);
      if (!isBoundTo(*device, claim)) {
        return FreeResult::kNothingToDo;
      }
    }
    if (!claimGone && frees.freedByRelease(*device)) {
      return FreeResult::kNothingToDo;  // written Available later by its own reconcile
    }
    if (!frees.freesAllowed(*device, claimGone)) {
      log::info("released device names another holder: left to it",
                {{"device", name}, {"claim", objectKey(claim.ns, claim.name)}});
      return FreeResult::kNothingToDo;
    }
    ExtendedResource next = *device;
    if (!freeDevice(next, status.message, status.releasedFrom).ok()) {
      return FreeResult::kNothingToDo;
    }
    gate();
    triedVersion = device->meta.resourceVersion;
    nlohmann::json reply;
    const Status sent = callApi([&] {
      reply = api_.updateStatus(resources::kExtendedResources, "", next.toJson(clock_()));
    });
    switch (classify(sent)) {
      case Failure::kNone:
        freed = stored<ExtendedResource>(reply);
        return FreeResult::kFreed;
      case Failure::kGone:
        return FreeResult::kNothingToDo;
      case Failure::kConflict:
        device.reset();  // read it again
        break;
      case Failure::kTransient:
      case Failure::kPermanent:
        log::warn("freeing a released device failed",
                  {{"device", name}, {"error", sent.message()}});
        return FreeResult::kFailed;
    }
  }
  return FreeResult::kFailed;
}

nlohmann::json Executor::createClaim(const nlohmann::json& claim) {
  gate();
  const std::string ns = claim["metadata"].value("namespace", "");
  nlohmann::json created = api_.create(resources::kExtendedResourceClaims, ns, claim);
  const nlohmann::json& labels = claim["metadata"]["labels"];
  log::info("created claim for pod",
            {{"claim", objectKey(ns, created["metadata"].value("name", ""))},
             {"entry", labels.value(kTemplateEntryLabel, "")},
             {"class", labels.value(kClassLabel, "")}});
  return created;
}

CachedPod Executor::patchPod(const Pod& pod, const nlohmann::json& patch,
                             const std::vector<PlannedEvent>& events) {
  gate();
  const nlohmann::json reply =
      api_.patch(resources::kPods, pod.meta.ns, pod.meta.name, PatchType::kJson, patch);
  record(events);
  return stored<WatchedPod>(reply);
}

bool Executor::nudgePod(const Pod& pod) {
  const nlohmann::json patch = {
      {"metadata", {{"annotations", {{kRequeueAtAnnotation, formatMicroTime(clock_())}}}}}};
  gate();
  if (!unlessNotFound([&] {
        api_.patch(resources::kPods, pod.meta.ns, pod.meta.name, PatchType::kMerge, patch);
      })) {
    return false;
  }
  if (metrics_) {
    metrics_->podNudges.inc();
  }
  if (log::v(2)) {
    log::info("nudged pending pod", {{"pod", objectKey(pod.meta.ns, pod.meta.name)}});
  }
  return true;
}

}  // namespace ker

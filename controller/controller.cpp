#include "controller/controller.h"

#include <algorithm>

#include "common/logging.h"

namespace ker {

namespace {

constexpr const char* kClaimPrefix = "claim:";
constexpr const char* kDevicePrefix = "device:";
constexpr const char* kNudgePrefix = "nudge:";
constexpr const char* kRenudgePrefix = "renudge:";

// Available to the extender in a status the API holds (an absent status is not: the
// reconciler writes it, and that write is the event that counts; nor is one still naming a
// claim, until the reconciler clears it).
bool writtenAvailable(const ExtendedResource& d) {
  return d.phase == DevicePhase::kAvailable && !d.claimRef && d.phaseWritten;
}

// What a waiting pod needs of its claim before the extender can place it.
bool allocatable(const ExtendedResourceClaim& c) {
  return c.phase == ClaimPhase::kPending && c.invalid.empty() && !c.meta.deleting;
}

// The spec as stored: an edit of it (fewer devices, a looser selector) may let a waiting
// pod fit.
nlohmann::json specOf(const ExtendedResourceClaim& c) {
  const nlohmann::json raw = c.raw.parse();
  return raw.is_object() ? raw.value("spec", nlohmann::json()) : nlohmann::json();
}

const char* resultLabel(const ReconcileResult& r) {
  switch (r.status) {
    case ReconcileResult::Status::kDone:
      return r.requeueAfter ? "requeue" : "success";
    case ReconcileResult::Status::kRetry:
      return r.conflict ? "conflict" : "error";
    case ReconcileResult::Status::kAborted:
      return "aborted";
  }
  return "unknown";
}

}  // namespace

Controller::Controller(ApiClient& api, Informer<WatchedPod>& pods,
                       Informer<ExtendedResourceClaim>& claims, Informer<ExtendedResource>& devices,
                       EventRecorder* events, metrics::Registry& registry, WriteGate mayWrite,
                       ControllerOptions opts)
    : devices_(devices),
      opts_(std::move(opts)),
      metrics_(registry),
      caches_(pods, claims, devices),
      executor_(api, events, &metrics_, std::move(mayWrite)),
      reconciler_(api, caches_, executor_, &metrics_, opts_.reconciler) {
  registry.gaugeFunc("extended_resource_controller_queue_depth",
                     "Keys waiting in the work queues, ready to be processed.",
                     [this] { return static_cast<double>(queueLength()); });

  pods.addHandlers({
      .onAdd = [this](const auto& p) { onPodChange(*p); },
      .onUpdate = [this](const auto&, const auto& p) { onPodChange(*p); },
      .onDelete = [this](const auto& p) { onPodDelete(*p); },
  });
  claims.addHandlers({
      .onAdd = [this, &claims](const auto& c) { onClaimChange(nullptr, *c, !claims.hasSynced()); },
      .onUpdate = [this](const auto& old, const auto& c) { onClaimChange(old.get(), *c); },
      .onDelete = [this](const auto& c) { onClaimDelete(*c); },
  });
  devices.addHandlers({
      .onAdd = [this](const auto& d) { onDeviceChange(nullptr, *d); },
      .onUpdate = [this](const auto& old, const auto& d) { onDeviceChange(old.get(), *d); },
      .onDelete =
          [this](const auto& d) {
            enqueueDevice(d->meta.name);
            if (d->claimRef) {
              enqueueClaim(d->claimRef->ns, d->claimRef->name);
            }
          },
  });
}

Controller::~Controller() {
  stop();
}

void Controller::start() {
  std::lock_guard lock(runMu_);
  if (started_) {
    return;
  }
  started_ = true;
  const int claimWorkers = std::max(1, opts_.workers);
  const int deviceWorkers = std::max(1, opts_.deviceWorkers);
  for (int i = 0; i < claimWorkers; ++i) {
    workers_.emplace_back([this] { worker(queue_); });
  }
  for (int i = 0; i < deviceWorkers; ++i) {
    workers_.emplace_back([this] { worker(deviceQueue_); });
  }
  log::info("controller started", {{"workers", claimWorkers}, {"deviceWorkers", deviceWorkers}});
}

void Controller::stop() {
  queue_.shutDown();
  deviceQueue_.shutDown();
  std::lock_guard lock(runMu_);
  for (auto& t : workers_) {
    t.join();
  }
  workers_.clear();
}

void Controller::enqueueClaim(const std::string& ns, const std::string& name) {
  queue_.add(kClaimPrefix + objectKey(ns, name));
}

void Controller::enqueueDevice(const std::string& name) {
  deviceQueue_.add(kDevicePrefix + name);
}

void Controller::enqueueHeldClaims(const std::string& podUid) {
  std::lock_guard lock(indexMu_);
  auto it = claimsByHolder_.find(podUid);
  if (it == claimsByHolder_.end()) {
    return;
  }
  for (const auto& key : it->second) {
    queue_.add(kClaimPrefix + key);
  }
}

void Controller::onPodChange(const WatchedPod& p) {
  enqueueHeldClaims(p.meta.uid);
  const bool garbled = !p.invalid.empty() && p.meta.annotations.count(kClaimsAnnotation) > 0;
  std::lock_guard lock(indexMu_);
  auto it = invalidPodsWarned_.find(p.meta.uid);
  if (!garbled) {
    if (it != invalidPodsWarned_.end()) {
      invalidPodsWarned_.erase(it);
    }
    return;
  }
  // Once per problem, not on every update of the pod; while writes are gated the warning is
  // left for a later update.
  if ((it == invalidPodsWarned_.end() || it->second != p.invalid) &&
      executor_.recordInvalidPod(p)) {
    invalidPodsWarned_[p.meta.uid] = p.invalid;
  }
}

void Controller::onPodDelete(const WatchedPod& p) {
  {
    std::lock_guard lock(indexMu_);
    invalidPodsWarned_.erase(p.meta.uid);
    if (claimsByHolder_.count(p.meta.uid)) {
      caches_.setPodDeleted(p.meta.uid, true);
    }
  }
  enqueueHeldClaims(p.meta.uid);
}

void Controller::indexHolder(const ExtendedResourceClaim* old, const ExtendedResourceClaim* cur) {
  std::lock_guard lock(indexMu_);
  // Unchanged: removing and re-adding it would forget that the holder was seen deleted.
  if (old && cur && old->podRef && cur->podRef && old->podRef->uid == cur->podRef->uid) {
    return;
  }
  if (old && old->podRef) {
    auto it = claimsByHolder_.find(old->podRef->uid);
    if (it != claimsByHolder_.end()) {
      it->second.erase(objectKey(old->meta.ns, old->meta.name));
      if (it->second.empty()) {
        claimsByHolder_.erase(it);
        caches_.setPodDeleted(old->podRef->uid, false);
      }
    }
  }
  if (cur && cur->podRef) {
    claimsByHolder_[cur->podRef->uid].insert(objectKey(cur->meta.ns, cur->meta.name));
  }
}

void Controller::onClaimChange(const ExtendedResourceClaim* old, const ExtendedResourceClaim& c,
                               bool listing) {
  indexHolder(old, &c);
  caches_.indexListed(old, &c);
  // A pod applied before its claim, waiting on one that was Lost, invalid or held, or on one
  // whose spec was edited, was parked by kube-scheduler: no device freeing would wake it.
  // (Claims found by the first list are not news.)
  if (!listing && allocatable(c) && (!old || !allocatable(*old) || specOf(*old) != specOf(c))) {
    scheduleNudge(claimNudgeTarget(objectKey(c.meta.ns, c.meta.name)));
  }
  enqueueClaim(c.meta.ns, c.meta.name);
  // Devices waiting out the grace period for this claim to list them can stop waiting; a
  // device back under a lost name is taken back, or freed once the claim no longer waits.
  for (const auto& name : c.listedDevices()) {
    enqueueDevice(name);
  }
  if (old) {
    nudgeForDroppedHolds(*old, &c);
    for (const auto& name : old->listedDevices()) {
      enqueueDevice(name);
    }
    // A bind of the extender's: not a Lost claim Bound again for the same pod (that one got
    // its own Recovered). A watch that skipped the release in between still counts.
    const bool recovered = old->phase == ClaimPhase::kLost && old->podRef && c.podRef &&
                           old->podRef->uid == c.podRef->uid;
    if (old->phase != ClaimPhase::kBound && c.phase == ClaimPhase::kBound && !recovered) {
      executor_.recordBound(c);
    }
  }
}

void Controller::onClaimDelete(const ExtendedResourceClaim& c) {
  if (c.podRef) {
    const CachedPod holder = caches_.pod(objectKey(c.meta.ns, c.podRef->name));
    if (warnOfDeletedClaim(c, holder.get())) {
      executor_.recordClaimDeletedUnderPod(c, *holder);
    }
  }
  indexHolder(&c, nullptr);
  caches_.indexListed(&c, nullptr);
  nudgeForDroppedHolds(c, nullptr);
  enqueueClaim(c.meta.ns, c.meta.name);
  for (const auto& name : c.listedDevices()) {
    enqueueDevice(name);
  }
  // Devices a bind in flight wrote before the claim listed them.
  for (const auto& d : devices_.list()) {
    if (d->claimRef && d->claimRef->ns == c.meta.ns && d->claimRef->name == c.meta.name) {
      enqueueDevice(d->meta.name);
    }
  }
}

void Controller::nudgeForDroppedHolds(const ExtendedResourceClaim& old,
                                      const ExtendedResourceClaim* cur) {
  if (old.phase != ClaimPhase::kLost || !old.statusReadable) {
    return;
  }
  const std::vector<std::string> still = cur ? cur->heldDevices() : std::vector<std::string>{};
  std::set<std::string> resources;
  // Only lost names: an allocated device that is Available is being freed by the release
  // (its own event nudges) or is lost, and listed so, by the time the claim lets go.
  for (const auto& name : old.lost) {
    if (std::find(still.begin(), still.end(), name) != still.end()) {
      continue;
    }
    if (const auto d = devices_.get(name); d && writtenAvailable(*d)) {
      resources.insert(d->rawResourceName);
    }
  }
  for (const auto& resource : resources) {
    scheduleNudge(resource);
  }
}

void Controller::onDeviceChange(const ExtendedResource* old, const ExtendedResource& d) {
  enqueueDevice(d.meta.name);
  if (d.claimRef) {
    enqueueClaim(d.claimRef->ns, d.claimRef->name);
  }
  if (old && old->claimRef && !(d.claimRef && *old->claimRef == *d.claimRef)) {
    enqueueClaim(old->claimRef->ns, old->claimRef->name);
  }
  if (writtenAvailable(d) && !(old && writtenAvailable(*old))) {
    scheduleNudge(d.rawResourceName);
  }
}

void Controller::scheduleNudge(const std::string& target) {
  reconciler_.requestNudge(target);
  queue_.addAfter(kNudgePrefix + target, opts_.nudgeDelay);
  queue_.addAfter(kRenudgePrefix + target, opts_.nudgeFollowUp);
}

void Controller::worker(WorkQueue& queue) {
  while (auto key = queue.get()) {
    process(queue, *key);
    queue.done(*key);
  }
}

void Controller::process(WorkQueue& queue, const std::string& key) {
  const size_t colon = key.find(':');
  const std::string kind = key.substr(0, colon);
  const std::string rest = key.substr(colon + 1);
  const auto started = std::chrono::steady_clock::now();
  ReconcileResult r;
  if (kind == "claim") {
    r = reconciler_.reconcileClaim(rest);
  } else if (kind == "device") {
    r = reconciler_.reconcileDevice(rest);
  } else {
    if (kind == "renudge") {
      reconciler_.requestNudge(rest);
    }
    r = reconciler_.nudge(rest);
  }
  metrics_.reconcileLatency.labels({kind}).observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  metrics_.reconciles.labels({kind, resultLabel(r)}).inc();

  switch (r.status) {
    case ReconcileResult::Status::kDone:
      queue.forget(key);
      if (r.requeueAfter) {
        queue.addAfter(key, *r.requeueAfter);
      }
      break;
    case ReconcileResult::Status::kRetry:
      metrics_.reconcileErrors.labels({kind}).inc();
      if (r.conflict) {
        if (log::v(2)) {
          log::info("reconcile conflict, retrying", {{"key", key}, {"error", r.error}});
        }
      } else {
        log::warn("reconcile failed, retrying", {{"key", key}, {"error", r.error}});
      }
      queue.addRateLimited(key);
      break;
    case ReconcileResult::Status::kAborted:
      // Writes were refused because leadership was in doubt (e.g. a renewal outlasting the
      // renew deadline during an API outage); the work is still owed if leadership holds.
      queue.addRateLimited(key);
      break;
  }
  for (const auto& name : r.devicesToRetry) {
    deviceQueue_.addRateLimited(kDevicePrefix + name);
  }
}

}  // namespace ker

#include "controller/controller.h"

#include <algorithm>

#include "common/logging.h"

namespace ker {

namespace {

const char* resultLabel(const ReconcileResult& r) {
  switch (r.status) {
    case ReconcileResult::Status::kDone:
      return r.requeueAfter ? "requeue" : "success";
    case ReconcileResult::Status::kRetry:
      return classify(r.error) == Failure::kConflict ? "conflict" : "error";
    case ReconcileResult::Status::kAborted:
      return "aborted";
  }
  return "unknown";
}

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

}  // namespace

Controller::Controller(ApiClient& api, Informer<WatchedPod>& pods,
                       Informer<ExtendedResourceClaim>& claims, Informer<ExtendedResource>& devices,
                       EventRecorder* events, metrics::Registry& registry, WriteGate mayWrite,
                       ControllerOptions opts)
    : pods_(pods),
      claims_(claims),
      devices_(devices),
      opts_(std::move(opts)),
      metrics_(registry),
      caches_(pods, claims, devices),
      executor_(api, events, &metrics_, mayWrite),
      reconciler_(api, caches_, executor_, &metrics_, opts_.reconciler),
      classParams_(api, std::move(mayWrite), opts_.classParamsNamespace) {
  registry.gaugeFunc("extended_resource_controller_queue_depth",
                     "Keys waiting in the work queues, ready to be processed.",
                     [this] { return static_cast<double>(queueLength()); });

  const DeviceGetter device = [this](const std::string& name) { return devices_.get(name); };
  pods.addHandlers({
      .onAdd =
          [this](const auto& p) {
            apply(podChanged(*p, caches_.claimsHeldBy(p->meta.uid), false));
          },
      .onUpdate =
          [this](const auto&, const auto& p) {
            apply(podChanged(*p, caches_.claimsHeldBy(p->meta.uid), false));
          },
      .onDelete =
          [this](const auto& p) {
            caches_.podDeleted(p->meta.uid);
            apply(podChanged(*p, caches_.claimsHeldBy(p->meta.uid), true));
          },
  });
  claims.addHandlers({
      .onAdd =
          [this, device, &claims](const auto& c) {
            caches_.claimChanged(nullptr, c.get());
            apply(claimChanged(nullptr, *c, !claims.hasSynced(), device));
          },
      .onUpdate =
          [this, device](const auto& old, const auto& c) {
            caches_.claimChanged(old.get(), c.get());
            apply(claimChanged(old.get(), *c, false, device));
          },
      .onDelete =
          [this, device](const auto& c) {
            caches_.claimDeleted(c, running_);
            apply(claimDeleted(*c, caches_.devicesNaming(objectKey(c->meta.ns, c->meta.name)),
                               device));
          },
  });
  devices.addHandlers({
      .onAdd =
          [this](const auto& d) {
            caches_.indexDevice(nullptr, d.get());
            apply(deviceChanged(nullptr, *d));
          },
      .onUpdate =
          [this](const auto& old, const auto& d) {
            caches_.indexDevice(old.get(), d.get());
            apply(deviceChanged(old.get(), *d));
          },
      .onDelete =
          [this](const auto& d) {
            caches_.indexDevice(d.get(), nullptr);
            apply(deviceDeleted(*d));
          },
  });
}

void Controller::watchTemplates(Informer<ExtendedResourceClaimTemplate>& templates) {
  caches_.watchTemplates(templates);
  auto changed = [this](const auto& t) { apply(templateChanged(*t, pods_.list())); };
  templates.addHandlers({
      .onAdd = changed,
      .onUpdate = [changed](const auto&, const auto& t) { changed(t); },
      .onDelete = changed,
  });
}

void Controller::watchClasses(Informer<ExtendedResourceClass>& classes) {
  caches_.watchClasses(classes);
  watchesClasses_ = true;
  auto changed = [this](const auto&) { apply(classChanged(pods_.list())); };
  classes.addHandlers({
      .onAdd = changed,
      .onUpdate = [changed](const auto&, const auto& c) { changed(c); },
      .onDelete = changed,
  });
}

void Controller::watchNodes(Informer<Node>& nodes) {
  caches_.watchNodes(nodes);
  // Each device is reconciled after the first list anyway, and a Node's updates never change
  // whether it is registered.
  auto changed = [this, &nodes](const auto& n) {
    if (nodes.hasSynced()) {
      apply(nodeRegistrationChanged(n->meta.name, devices_.list()));
    }
  };
  nodes.addHandlers({.onAdd = changed, .onDelete = changed});
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
  running_ = true;
  if (watchesClasses_) {  // first: classes may have changed while no replica led
    queue_.add(ClassParamsKey{});
  }
  apply(startedLeading(pods_.list(), claims_.list(), devices_.list()));
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

void Controller::apply(const Triggers& triggers) {
  if (!running_) {
    return;
  }
  for (const auto& key : triggers.keys) {
    (std::holds_alternative<DeviceKey>(key) ? deviceQueue_ : queue_).add(key);
  }
  for (const auto& target : triggers.nudges) {
    reconciler_.requestNudge(target);
    queue_.addAfter(NudgeKey{target, false}, opts_.nudgeDelay);
    queue_.addAfter(NudgeKey{target, true}, opts_.nudgeFollowUp);
  }
}

void Controller::worker(KeyQueue& queue) {
  while (auto key = queue.get()) {
    process(queue, *key);
    queue.done(*key);
  }
}

ReconcileResult Controller::reconcile(const WorkKey& key) {
  return std::visit(Overloaded{
                        [&](const ClaimKey& k) { return reconciler_.reconcileClaim(k.key); },
                        [&](const DeviceKey& k) { return reconciler_.reconcileDevice(k.name); },
                        [&](const PodKey& k) { return reconciler_.reconcilePod(k.key); },
                        [&](const NudgeKey& k) {
                          // The follow-up is a trigger of its own: pods nudged the first time
                          // and still waiting are due another.
                          if (k.followUp) {
                            reconciler_.requestNudge(k.target);
                          }
                          return reconciler_.nudge(k.target);
                        },
                        [&](const ClassParamsKey&) {
                          return watchesClasses_ ? classParams_.sync(ClassTable(caches_.classes()))
                                                 : ReconcileResult{};
                        },
                    },
                    key);
}

void Controller::process(KeyQueue& queue, const WorkKey& key) {
  const char* kind = kindOf(key);
  const auto started = std::chrono::steady_clock::now();
  const ReconcileResult r = reconcile(key);
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
      if (classify(r.error) == Failure::kConflict) {
        if (log::v(2)) {
          log::info("reconcile conflict, retrying",
                    {{"kind", kind}, {"key", KeyQueue::encode(key)}, {"error", r.error.message()}});
        }
      } else {
        log::warn("reconcile failed, retrying",
                  {{"kind", kind}, {"key", KeyQueue::encode(key)}, {"error", r.error.message()}});
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
    deviceQueue_.addRateLimited(DeviceKey{name});
  }
}

}  // namespace ker

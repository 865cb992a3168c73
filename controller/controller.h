#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/api_client.h"
#include "common/event_recorder.h"
#include "common/informer.h"
#include "common/metrics.h"
#include "controller/caches.h"
#include "controller/class_params.h"
#include "controller/controller_metrics.h"
#include "controller/executor.h"
#include "controller/reconciler.h"
#include "controller/watch_triggers.h"
#include "controller/watched_pod.h"
#include "controller/work_keys.h"

namespace ker {

struct ControllerOptions {
  // Concurrent claim reconciles (releases) and nudges. A release is a few serial API calls,
  // so throughput is bounded by how many run at once, not by this process's CPU.
  int workers = 16;
  // Concurrent device reconciles: repairs and first status writes, rarely urgent.
  int deviceWorkers = 4;
  // Wait this long after devices became Available before nudging pending pods, so one nudge
  // covers a burst (a release frees its devices one write at a time) and the extender's own
  // cache has seen them.
  Millis nudgeDelay{std::chrono::milliseconds(100)};
  // And once more this long after: a pod kube-scheduler parked just after the first nudge
  // (its filter ran on the extender's cache from before the release, or its Unschedulable
  // condition reached this cache late) would otherwise wait for kube-scheduler's periodic
  // flush of unschedulable pods, minutes by default. Pods nudged the first time and still
  // waiting get this one too, at most once per second each.
  Millis nudgeFollowUp{std::chrono::seconds(3)};
  // The Namespace the class admission policies read as params (ClassParamsPublisher), kept
  // while classes are watched; "" keeps none.
  std::string classParamsNamespace;
  ReconcilerOptions reconciler;
};

// The watch-driven loop: informer events become typed work-queue keys (watch_triggers decides
// which), which workers hand to the reconciler, retrying failures with backoff and rechecking
// grace periods when they end. Devices have a queue and workers of their own (as
// controller-runtime runs one controller per kind), so a backlog of device work, e.g. thousands
// of new devices to initialize, never delays releases. Handlers are registered on construction,
// so build the controller before starting the informers. Until start() (a standby replica's whole
// life) events queue nothing and keep nothing but the caches' indexes: the queue would otherwise
// grow with every pod the cluster deletes. start() queues every object the caches hold instead.
// Writes happen only while the gate is open.
class Controller {
 public:
  Controller(ApiClient& api, Informer<WatchedPod>& pods, Informer<ExtendedResourceClaim>& claims,
             Informer<ExtendedResource>& devices, EventRecorder* events,
             metrics::Registry& registry, WriteGate mayWrite, ControllerOptions opts);
  ~Controller();  // stop()
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Starts the workers and queues every cached claim, device and pod that may need work; call
  // once the informers have synced. Idempotent.
  void start();
  // Shuts the queue down and joins the workers (each finishes its current key). Idempotent.
  void stop();

  // Makes claims for pods' template entries from these templates (docs/templates.md); without
  // it, template entries wait forever. Call before the informers start.
  void watchTemplates(Informer<ExtendedResourceClaimTemplate>& templates);
  // Makes claims for pods whose containers ask for a class's extended resource
  // (docs/classes.md); without it such requests are left to whatever else serves the name.
  void watchClasses(Informer<ExtendedResourceClass>& classes);
  // Takes the free devices of a node without a Node object out of offer, and offers them again
  // once it registers; without it no device is looked at for its node.
  void watchNodes(Informer<Node>& nodes);

  size_t queueLength() const { return queue_.len() + deviceQueue_.len(); }
  Reconciler& reconciler() { return reconciler_; }

 private:
  void worker(KeyQueue& queue);
  void process(KeyQueue& queue, const WorkKey& key);
  ReconcileResult reconcile(const WorkKey& key);
  // Enqueues the keys; pods parked for want of a nudge target are retried soon, and once more
  // a little later.
  void apply(const Triggers& triggers);

  Informer<WatchedPod>& pods_;
  Informer<ExtendedResourceClaim>& claims_;
  Informer<ExtendedResource>& devices_;
  const ControllerOptions opts_;
  ControllerMetrics metrics_;
  InformerCaches caches_;
  Executor executor_;
  Reconciler reconciler_;
  ClassParamsPublisher classParams_;
  bool watchesClasses_ = false;  // set before start
  KeyQueue queue_;               // claims, pods, nudges and the class params
  KeyQueue deviceQueue_;

  // Set by start(), after the workers: events before it queue nothing (apply drops them).
  std::atomic<bool> running_{false};

  std::mutex runMu_;  // guards the members below
  bool started_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace ker

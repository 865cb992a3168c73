#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/api_client.h"
#include "common/event_recorder.h"
#include "common/informer.h"
#include "common/metrics.h"
#include "common/work_queue.h"
#include "controller/caches.h"
#include "controller/controller_metrics.h"
#include "controller/executor.h"
#include "controller/reconciler.h"
#include "controller/watched_pod.h"

namespace ker {

struct ControllerOptions {
  int workers = 4;
  // Wait this long after devices became Available before nudging pending pods, so one nudge
  // covers a burst (a release frees its devices one write at a time) and the extender's own
  // cache has seen them.
  Millis nudgeDelay{std::chrono::milliseconds(100)};
  ReconcilerOptions reconciler;
};

// The watch-driven loop: informer events become work-queue keys ("claim:ns/name",
// "device:name", "nudge:rawResourceName"), which workers hand to the reconciler, retrying
// failures with backoff and rechecking grace periods when they end. Handlers are registered on
// construction, so build the controller before starting the informers; keys queue up until
// start(). Writes happen only while the gate is open.
class Controller {
 public:
  Controller(ApiClient& api, Informer<WatchedPod>& pods, Informer<ExtendedResourceClaim>& claims,
             Informer<ExtendedResource>& devices, EventRecorder* events,
             metrics::Registry& registry, WriteGate mayWrite, ControllerOptions opts);
  ~Controller();  // stop()
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Starts the workers; call once the informers have synced. Idempotent.
  void start();
  // Shuts the queue down and joins the workers (each finishes its current key). Idempotent.
  void stop();

  size_t queueLength() const { return queue_.len(); }
  Reconciler& reconciler() { return reconciler_; }

 private:
  void worker();
  void process(const std::string& key);
  void enqueueHeldClaims(const std::string& podUid);
  void enqueueClaim(const std::string& ns, const std::string& name);
  void enqueueDevice(const std::string& name);
  void indexHolder(const ExtendedResourceClaim* old, const ExtendedResourceClaim* cur);
  void onClaimChange(const ExtendedResourceClaim* old, const ExtendedResourceClaim& cur);
  void onClaimDelete(const ExtendedResourceClaim& c);
  void onDeviceChange(const ExtendedResource* old, const ExtendedResource& cur);

  Informer<ExtendedResource>& devices_;
  const ControllerOptions opts_;
  ControllerMetrics metrics_;
  InformerCaches caches_;
  Executor executor_;
  Reconciler reconciler_;
  WorkQueue queue_;

  std::mutex indexMu_;
  std::map<std::string, std::set<std::string>> claimsByHolder_;  // pod UID -> claim keys

  std::mutex runMu_;
  bool started_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace ker

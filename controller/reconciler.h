#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/api_client.h"
#include "common/rate_limiter.h"
#include "controller/caches.h"
#include "controller/controller_metrics.h"
#include "controller/executor.h"
#include "controller/reconcile_decisions.h"

namespace ker {

struct ReconcilerOptions {
  // How long a suspicious state (claim held by a pod that never got a node) must last
  // before it is repaired.
  Millis orphanGrace{std::chrono::minutes(2)};
  // The same for a device Bound to a claim that does not list it, or without a claimRef: a
  // bind in flight writes its devices first, but only until its deadline (the extender's
  // --bind-deadline, 30 s), so this wait is shorter. The smaller of the two applies.
  Millis deviceOrphanGrace{std::chrono::seconds(45)};
  std::string schedulerName = "extended-resource-scheduler";
  size_t nudgeLimit = 10;                            // pods per nudge run
  Millis nudgeMinInterval{std::chrono::seconds(1)};  // between two nudges of one pod
  SteadyClock clock = std::chrono::steady_clock::now;
};

struct ReconcileResult {
  enum class Status {
    kDone,     // nothing more to do now (see requeueAfter)
    kRetry,    // failed: retry with backoff
    kAborted,  // leadership lost: stop
  };
  Status status = Status::kDone;
  std::optional<Millis> requeueAfter;  // with kDone: look again then
  bool conflict = false;               // with kRetry: a write lost an optimistic-concurrency race
  std::string error;
  std::vector<std::string> devicesToRetry;  // device names worth another look (with backoff)
};

// One reconcile per object: reads the caches, asks the pure decisions, confirms with a live
// read when they ask for it, and applies the action through the executor. Remembers in memory
// since when an object has looked half-written, unchanged (the grace clocks), and which devices
// belonged to claims it released. Thread-safe; never called for the same key twice at once.
// The nudge target of one claim ("namespace/name"); a resource name has no ':'.
std::string claimNudgeTarget(const std::string& claimKey);

class Reconciler {
 public:
  Reconciler(ApiClient& api, const ControllerCaches& caches, Executor& executor,
             ControllerMetrics* metrics, ReconcilerOptions opts);

  ReconcileResult reconcileClaim(const std::string& key);  // "namespace/name"
  ReconcileResult reconcileDevice(const std::string& name);
  // Devices of the resource became Available, or (a target from claimNudgeTarget) the claim
  // became usable: pods waiting for it are due a nudge.
  void requestNudge(const std::string& target);
  ReconcileResult nudge(const std::string& target);  // nudges the pods due one

  // Drop what is remembered about an object that was deleted.
  void forgetClaim(const std::string& key);
  void forgetDevice(const std::string& name);
  size_t remembered() const;

 private:
  template <class F>
  ReconcileResult guarded(F&& body);
  // Since when the object has looked half-written with this same status: a status write (a
  // retried bind rewriting it, say) is a sign of life and starts the grace again.
  struct Suspicion {
    SteadyTime since;
    std::string status;
  };
  using Suspicions = std::map<std::string, Suspicion>;
  std::optional<SteadyTime> suspect(const Suspicions& m, const std::string& key,
                                    const std::string& status) const;
  void setSuspect(Suspicions& m, const std::string& key, std::optional<SteadyTime> since,
                  const std::string& status);
  std::optional<nlohmann::json> liveGet(const Resource& res, const std::string& ns,
                                        const std::string& name);

  ApiClient& api_;
  const ControllerCaches& caches_;
  Executor& executor_;
  ControllerMetrics* metrics_;
  const ReconcilerOptions opts_;

  mutable std::mutex mu_;
  Suspicions claimSuspects_;
  Suspicions deviceSuspects_;
  // Device -> its resourceVersion when freeing it after its claim's release failed.
  std::map<std::string, std::string> releasedDevices_;
  std::map<std::string, SteadyTime> lastNudged_;      // pod UID -> when
  std::map<std::string, SteadyTime> nudgeTriggered_;  // nudge target -> when
};

}  // namespace ker

#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/api_client.h"
#include "common/status.h"
#include "controller/caches.h"
#include "controller/controller_memory.h"
#include "controller/controller_metrics.h"
#include "controller/executor.h"
#include "controller/plan.h"
#include "controller/work_keys.h"
#include "model/objects.h"
#include "model/typed_client.h"

namespace ker {

struct ReconcilerOptions {
  // How long a suspicious state (claim held by a pod that never got a node) must last
  // before it is repaired.
  Millis orphanGrace{std::chrono::minutes(2)};
  // The same for a device Bound to a claim that does not list it, or without a claimRef: a
  // bind in flight writes its devices first, but only until its deadline (the extender's
  // --bind-deadline, 30 s), so this wait is shorter. The smaller of the two applies.
  Millis deviceOrphanGrace{std::chrono::seconds(45)};
  // How long an Available device that a Bound claim lists waits before it is bound back. Every
  // bind shows the controller that state for a moment when the claim's event overtakes the
  // device's (the extender writes the device first; the two watches are separate streams), and
  // a rebind from that stale view only loses a conflict. The extender offers no device a Bound
  // claim lists meanwhile, and a claim waits the grace for its device to come back.
  Millis rebindDelay{std::chrono::seconds(2)};
  // How long a device its claim's release freed (freedByClaim: free to every bind already)
  // stays Bound in its own status before it is written Available, for people and tools that
  // read devices. Off the release's path, so a release costs one write per claim; a bind that
  // takes the device first makes the write unneeded.
  Millis freedDeviceWriteDelay{std::chrono::seconds(10)};
  // How often a device whose claim is gone is looked at again while a pod it names still holds
  // it (the pods' events do not reach it: no claim lists it any more).
  Millis holderRecheck{std::chrono::seconds(2)};
  std::string schedulerName = kDefaultSchedulerName;
  size_t nudgeLimit = 10;                            // pods per nudge run
  Millis nudgeMinInterval{std::chrono::seconds(1)};  // between two nudges of one pod
  // Put the protection finalizers on claims and devices, and take them off deleting ones once
  // nothing holds them (protectionChange); off, take them off deleting ones at once. The binary
  // turns it on unless --protect-in-use=false.
  bool protectInUse = false;
  SteadyClock clock = std::chrono::steady_clock::now;
  SystemClock wallClock = std::chrono::system_clock::now;  // stamps the conditions' transitions
};

struct ReconcileResult {
  enum class Status {
    kDone,     // nothing more to do now (see requeueAfter)
    kRetry,    // failed: retry with backoff
    kAborted,  // leadership lost: stop
  };
  Status status = Status::kDone;
  std::optional<Millis> requeueAfter;       // with kDone: look again then
  ker::Status error;                        // with kRetry: why (kConflict: a write lost a race)
  std::vector<std::string> devicesToRetry;  // device names worth another look (with backoff)
};

// The I/O shell of the controller, one reconcile per key as sample-controller's syncHandler:
// get the object from the cache, gather its related objects and what the memory holds about
// it, ask the pure plan function, read live when the plan asks for it and plan again, apply
// the plan through the executor, remember what the plan says to remember, return the error.
// It holds no policy. One file per kind: claim_reconcile.cpp, device_reconcile.cpp,
// pod_reconcile.cpp (templates and class requests too), nudge_reconcile.cpp. Thread-safe; never
// called for the same key twice at once.
class Reconciler {
 public:
  Reconciler(ApiClient& api, ControllerCaches& caches, Executor& executor,
             ControllerMetrics* metrics, ReconcilerOptions opts);

  ReconcileResult reconcileClaim(const std::string& key);  // "namespace/name"
  ReconcileResult reconcileDevice(const std::string& name);
  ReconcileResult reconcilePod(const std::string& key);  // "namespace/name"
  // Devices of the resource became Available, or the claim became usable: pods waiting for
  // it are due a nudge.
  void requestNudge(const NudgeTarget& target);
  ReconcileResult nudge(const NudgeTarget& target);  // nudges the pods due one

  // Entries held about claims and devices (grace clocks, failed frees): 0 once all is settled.
  size_t remembered() const { return memory_.size(); }

 private:
  // Each decision asks for at most this many live reads before it must settle.
  static constexpr int kMaxLiveReads = 2;

  // Runs a reconcile, turning what it throws into its result: the controller's one boundary
  // with the API client's exceptions.
  ReconcileResult guarded(const std::function<ReconcileResult()>& body);
  // The one plan loop of the claim's and the device's reconcile: plan, read live what the
  // plan's `verify` asks (`read` returns false when it cannot), plan again, at most
  // kMaxLiveReads times. A plan that still asks to verify is unsettled: nothing of it applies.
  template <class PlanFn, class ReadFn>
  static Plan planWithLiveReads(PlanFn&& plan, ReadFn&& read) {
    Plan p = plan();
    for (int reads = 0; reads < kMaxLiveReads && p.verify; ++reads) {
      if (!read(*p.verify)) {
        break;
      }
      p = plan();
    }
    return p;
  }
  static ReconcileResult unsettled();
  // The claim's reconcile once it is read: plan, read live as the plan asks, apply, remember.
  ReconcileResult syncClaim(const std::string& key, const CachedClaim& claim);
  // Creates the claims the pod's template entries call for and records them on the pod.
  void reconcileTemplateClaims(const Pod& pod);
  // What the executor wrote, read from here on until the watch delivers it.
  void assumeWritten(const Executor::Outcome& out);
  // A GET past the caches, counted as a live read; nullptr when the object does not exist.
  template <class T>
  std::shared_ptr<const T> liveGet(const std::string& ns, const std::string& name) {
    if (metrics_) {
      metrics_->liveReads.inc();
    }
    std::shared_ptr<const T> live;
    unlessNotFound([&] { live = std::make_shared<const T>(readObject<T>(api_, ns, name)); });
    return live;
  }

  // The pods `refs` names in namespace ns, for a decision's holders (HolderPod): each from the
  // cache, counted as read live when the watch delivered that UID's deletion. `pods` owns what
  // the entries point to.
  struct Holders {
    std::vector<std::shared_ptr<const Pod>> pods;
    std::vector<HolderPod> view;
  };
  Holders cachedHolders(const std::string& ns, const std::vector<PodRef>& refs);
  // Reads live each holder the plan names (`names`) that is not live yet.
  void readHoldersLive(const std::string& ns, const std::vector<PodRef>& refs,
                       const std::vector<std::string>& names, Holders& holders);

  ApiClient& api_;
  ControllerCaches& caches_;
  Executor& executor_;
  ControllerMetrics* metrics_;
  const ReconcilerOptions opts_;
  ControllerMemory memory_;
};

}  // namespace ker

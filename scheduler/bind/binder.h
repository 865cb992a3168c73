#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/api_client.h"
#include "common/clocks.h"
#include "common/status.h"
#include "model/objects.h"
#include "scheduler/cache/device_index.h"
#include "scheduler/fit/planner.h"
#include "scheduler/wire/extender_wire.h"

namespace ker {

using NodeLabelsLookup =
    std::function<std::map<std::string, std::string>(const std::string& nodeName)>;

// The extender's informer caches, for a bind's first attempt (each may be left empty). Every
// write the bind makes carries the resourceVersion of what it read as a precondition and the
// Binding the pod's UID, so a stale copy costs a conflict and a retry, never a wrong write;
// later attempts read live.
struct BinderCaches {
  std::function<std::shared_ptr<const Pod>(const std::string& key)> pods;  // unbound pods
  ClaimLookup claims;
  ClassSource classes;  // unset: no class serves any pod
};

struct BinderStats {
  std::atomic<uint64_t> binds{0};
  std::atomic<uint64_t> failures{0};
  std::atomic<uint64_t> conflicts{0};  // a write lost an optimistic-concurrency race
  std::atomic<uint64_t> undos{0};      // attempts rolled back
  std::atomic<uint64_t> apiWrites{0};
};

struct BinderOptions {
  int maxAttempts = 5;
  // No write of a bind starts later than this after the call began, and calls in flight are
  // cut off then; the attempt is undone and the bind fails. It fences a bind that stalled
  // (API calls timing out or retried in a row, a paused process) from finishing after the
  // controller, whose orphan grace ran out, repaired what it had half written: keep it well
  // below that grace (a write the API server received just before the cut may still land).
  std::chrono::milliseconds deadline{std::chrono::seconds(30)};
  // The node agent's NRI plugin name, added to the pod's required-plugins annotation by the
  // Binding; empty adds nothing (nodes without the agent).
  std::string requiredPlugin = kNodeAgentPluginName;
  SteadyClock clock = std::chrono::steady_clock::now;
  SystemClock wallClock = std::chrono::system_clock::now;  // stamps the conditions' transitions
  // Whom a bind call is trusted for (checkBindTrust): pods of this schedulerName ("" every
  // pod), with claims only on the node the filter chose for them. requireFilterChoice is false
  // only in tests of the writes alone.
  std::string schedulerName = kDefaultSchedulerName;
  bool requireFilterChoice = true;
  // How the bind chooses among the node's free devices: as the filter did (NodeFitter).
  Scoring scoring;
};

// The bind verb: allocates devices to the pod's claims on the chosen node, records it in the
// API, then binds the pod. A class request's claim that does not exist yet is made first, and
// recorded on the pod by the Binding. Devices are written first with resourceVersion preconditions,
// so the API server decides every race for a device; then the claims; then one Binding that sets
// spec.nodeName and the allocation annotation together. Any failure undoes what the attempt
// wrote, as its BindJournal recorded it (a claim it cannot put back keeps its devices), and a
// conflict re-decides on fresh state. Claims an earlier call bound to the pod are rewritten before
// they are reused, so that call's undo conflicts instead of freeing them. A shareable claim
// already allocated to other pods is joined: the pod is added to its holders, its devices kept.
// Safe to call concurrently.
class Binder {
 public:
  Binder(ApiClient& api, DeviceIndex& index, NodeLabelsLookup nodeLabels,
         BinderOptions options = {}, BinderCaches caches = {});

  // Fault injection for tests and chaos runs: the next n device writes carry a stale
  // resourceVersion, so the API server rejects them with a real 409 Conflict. Only in builds
  // with KER_FAILPOINTS (those with the tests); elsewhere it does nothing.
  void injectStaleDeviceWrites(int n) { staleWrites_ = n; }
  // Test seam: runs after each attempt's plan is made and its devices reserved, before any
  // write, so a test can land another replica's write and its watch event in between.
  void onPlannedForTesting(std::function<void()> hook) { plannedHook_ = std::move(hook); }

  // OK once the pod is bound, else why not, for the scheduler (which will retry the pod). A
  // call for a pod whose bind is still running here fails at once, writing nothing:
  // kube-scheduler retries a bind whose call timed out, and until the first call ends (pod
  // bound, or its writes undone) a second one could only contend with it for the same claims.
  // Calls that do overlap (from two replicas) stay safe through the claim rewrite described
  // above.
  Status bind(const BindingArgs& args);

  const BinderStats& stats() const { return stats_; }

 private:
  enum class Outcome { kDone, kRetry, kFail };
  // What an attempt, or a step before its writes, came to: the outcome, and why when it is
  // not kDone.
  struct Verdict {
    Outcome outcome = Outcome::kDone;
    Status status;
  };
  // What one write step of an attempt came to. Only kOk lets the attempt go on; conclude()
  // says what each of the others does. A step turns the answer of its API call into one of
  // these where it makes the call (Step::of); a local condition (a device gone from the cache
  // or taken meanwhile) is given its kind and status directly, never dressed up as an API
  // error.
  struct Step {
    enum Kind {
      kOk,
      kConflict,        // lost a race for an object: undo, re-decide on fresh state
      kGone,            // an object is gone (API or cache): undo, re-decide on fresh state
      kRetry,           // worth another attempt (throttled, 5xx, no answer): undo, retry
      kFail,            // a failure no other attempt would mend: undo, give up
      kDeadline,        // the bind's deadline passed before the write: undo, give up at once
      kBroken,          // an exception that is no API answer: undo, give up at once
      kBoundByAnother,  // the pod was bound with this allocation by another bind: leave it all
      kUnsettled,       // the Binding may still land: keep the allocation whole
    };
    Kind kind = kOk;
    Status status;  // why, unless kOk
    bool ok() const { return kind == kOk; }
    // A failed API call's answer as the step's result.
    static Step of(const Status& answer);
    // A status transition the model refused: the object is not in the state the plan was made
    // on, so the attempt is decided again on fresh state (kConflict).
    static Step refused(const Status& transition);
  };
  struct Attempt;

  // One attempt: reads and plans, reserves, then writes in the bind's order. The first reads
  // from the caches where they have the objects; its writes' preconditions catch what they
  // missed.
  // filterChoice: the node the filter held for the pod when the call came (checkBindTrust).
  // podConfirmed is set once the pod the call names is known to have its UID and to be one
  // this extender may bind.
  Verdict attempt(const BindingArgs& args, SteadyTime deadline, bool fromCaches,
                  const std::string& filterChoice, bool& podConfirmed);
  // The steps before any write; a verdict when the attempt ends there, nothing to undo.
  std::optional<Verdict> readPod(const BindingArgs& args, const std::string& filterChoice,
                                 Attempt& a);
  std::optional<Verdict> plan(Attempt& a);
  // The write steps, in order; each enters its write in the attempt's journal.
  Step write(Attempt& a);
  // Creates the claims of class requests that do not exist yet (PodClaims::unrecorded), each
  // taking the place of the one fitted for it.
  Step makeClaims(Attempt& a);
  // `claim`: a pending claim's unit (ExtendedResourceClaim::units), the claim itself without
  // spec.requests.
  Step writeDevice(const ExtendedResourceClaim& claim, const std::string& name, Attempt& a);
  Step writeClaim(const ExtendedResourceClaim& claim, std::vector<RequestAllocation> allocations,
                  Attempt& a);
  Step reclaimDevice(const ExtendedResourceClaim& claim, const std::string& name, Attempt& a);
  Step reuseClaim(const ExtendedResourceClaim& claim, Attempt& a);
  Step joinClaim(const ExtendedResourceClaim& claim, Attempt& a);
  Step sendClaimStatus(const ExtendedResourceClaim& next, Attempt& a);
  Step writeBinding(Attempt& a);
  Step bindingFailed(const Status& answer, Attempt& a);
  // A write journaled as sent came back failed: a refused one is struck from the journal.
  static Step writeFailed(const Status& answer, Attempt& a);
  // The deadline fence before each write: kDeadline once the bind's time is up.
  Step beforeWrite(const Attempt& a) const;
  // What the writes came to, as the attempt's verdict, with the undo it calls for.
  Verdict conclude(const Step& step, Attempt& a);
  void undo(Attempt& a);
  void refreshDevice(const std::string& name);
  // The pod as the API server has it now, if it is still the same pod (same UID).
  std::optional<Pod> livePod(const Pod& pod);

  ApiClient& api_;
  DeviceIndex& index_;
  const NodeLabelsLookup nodeLabels_;
  const BinderOptions options_;
  const BinderCaches caches_;
  std::function<void()> plannedHook_;  // set before any bind
  std::atomic<int> staleWrites_{0};
  BinderStats stats_;

  std::mutex bindingMu_;
  std::set<std::string> binding_;  // guarded by bindingMu_: UIDs of the pods being bound
};

// The allocation annotation's value: {"<claim>": [{"name", "deviceID", "rawResourceName"}]},
// each device with "request" too when `requestOf` (device -> request) names one.
std::string allocationAnnotation(
    const std::map<std::string, std::vector<const ExtendedResource*>>& byClaimName,
    const std::map<std::string, std::string>& requestOf = {});

}  // namespace ker

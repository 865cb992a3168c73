#pragma once

#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/api_client.h"
#include "common/event_recorder.h"
#include "controller/caches.h"
#include "controller/controller_metrics.h"
#include "controller/plan.h"

namespace ker {

// Merge-patched onto pending pods so kube-scheduler, which watches them, retries them.
inline constexpr const char* kRequeueAtAnnotation = "extendedresource.io/requeue-at";

// A write was about to happen while this process may not write (leadership lost).
class NotLeading : public std::runtime_error {
 public:
  NotLeading() : std::runtime_error("not the leader: writes are stopped") {}
};

// Whether this process may write right now; asked before every write.
using WriteGate = std::function<bool()>;

// Applies plans through the API, exactly as they say: it decides nothing. Writes throw ApiError
// (a Conflict makes the caller re-decide on fresh state) and NotLeading when the gate is
// closed; events are dropped, not failed, while it is closed.
class Executor {
 public:
  Executor(ApiClient& api, EventRecorder* events, ControllerMetrics* metrics, WriteGate mayWrite,
           SystemClock clock = std::chrono::system_clock::now);

  // What the API server stored, for the caller to assume (ControllerCaches::assume): nullptr
  // where nothing was written, or a reply does not read as its kind.
  struct Outcome {
    CachedClaim writtenClaim;         // the plan's write, when it is of a claim
    CachedDevice writtenDevice;       // or of a device
    std::vector<CachedDevice> freed;  // devices a release wrote back to Available
    // Devices a release left Bound to its claim, each with the resourceVersion its last
    // failed write carried ("" when it could not be read).
    std::map<std::string, std::string> failed;
  };
  using DeviceLookup = std::function<CachedDevice(const std::string& name)>;

  // The write, then (once it succeeded) the frees and the events, the metric and the log
  // line. A release whose claim was deleted meanwhile (404) still frees the claim's devices,
  // with the status the plan gives for that case, and records nothing. A device a release
  // frees is written only while it is still Bound to the claim: a conflict is retried on a
  // fresh read (once the claim no longer lists a Bound device, nobody else may write it).
  Outcome apply(const Plan& plan, const DeviceLookup& cached);
  // False when the gate is closed (nothing recorded).
  bool record(const std::vector<PlannedEvent>& events);
  // Asks kube-scheduler to retry the pod; false when the pod no longer exists.
  bool nudgePod(const Pod& pod);
  // Creates a claim (a template entry's); returns it as the server stored it.
  nlohmann::json createClaim(const nlohmann::json& claim);
  // Applies a JSON Patch to the pod (the generated-claims record, its preconditions as test
  // operations inside), then records the events. Returns the pod as the server stored it.
  CachedPod patchPod(const Pod& pod, const nlohmann::json& patch,
                     const std::vector<PlannedEvent>& events);

  bool mayWrite() const { return !mayWrite_ || mayWrite_(); }

 private:
  enum class FreeResult { kFreed, kNothingToDo, kFailed };
  // triedVersion: the resourceVersion of the last write tried, "" when none was.
  // `claimGone`: the claim was deleted before the release's write (the device gets
  // frees.statusIfClaimGone). Either way a device naming a holder the release did not expect
  // is left (DeviceFrees::freesAllowed).
  FreeResult freeReleasedDevice(const std::string& name, const DeviceFrees& frees, bool claimGone,
                                const CachedDevice& cached, std::string& triedVersion,
                                CachedDevice& freed);
  // Into out.writtenClaim or out.writtenDevice.
  void write(const StatusWrite& w, Outcome& out);
  void count(const Plan& plan);
  void gate() const;

  ApiClient& api_;
  EventRecorder* events_;
  ControllerMetrics* metrics_;
  WriteGate mayWrite_;
  SystemClock clock_;
};

}  // namespace ker

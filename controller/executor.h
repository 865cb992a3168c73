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
#include "controller/reconcile_decisions.h"

namespace ker {

// Merge-patched onto pending pods so kube-scheduler, which watches them, retries them.
inline constexpr const char* kRequeueAtAnnotation = "extendedresource.io/requeue-at";
// status.reason of a device or claim whose spec or status cannot be parsed.
inline constexpr const char* kInvalidReason = "Invalid";

// A write was about to happen while this process may not write (leadership lost).
class NotLeading : public std::runtime_error {
 public:
  NotLeading() : std::runtime_error("not the leader: writes are stopped") {}
};

// Whether this process may write right now; asked before every write.
using WriteGate = std::function<bool()>;

// Applies decided actions through the API. Status writes carry the resourceVersion the
// decision was made on, so a concurrent change fails with an ApiError Conflict and the caller
// re-decides on fresh state; status writes go through toJson(), which keeps fields this code
// does not own. Throws NotLeading when the gate is closed.
class Executor {
 public:
  Executor(ApiClient& api, EventRecorder* events, ControllerMetrics* metrics, WriteGate mayWrite,
           SystemClock clock = std::chrono::system_clock::now);

  struct ReleaseOutcome {
    std::vector<std::string> freed;  // devices written back to Available
    // Devices still Bound to the released claim, each with the resourceVersion its last
    // failed write carried ("" when it could not be read).
    std::map<std::string, std::string> failed;
  };
  using DeviceLookup = std::function<CachedDevice(const std::string& name)>;

  // The claim goes back to Pending first, then the devices it listed: the reverse of the
  // extender's order, so no device is Available while a claim still lists it. A device write
  // that conflicts is retried on a fresh read: once the claim no longer lists a Bound device,
  // nobody else may write that device (the extender only takes Available ones). A claim
  // deleted meanwhile (404) has nothing left to release, but its devices are still freed.
  ReleaseOutcome releaseClaim(const ExtendedResourceClaim& claim, const action::ReleaseClaim& a,
                              const DeviceLookup& cached);
  void markClaimLost(const ExtendedResourceClaim& claim, const action::MarkClaimLost& a);
  void recoverClaim(const ExtendedResourceClaim& claim, const action::RecoverClaim& a);
  // Bound to the claim, after a live read confirms the claim still lists the device;
  // false (nothing written) when it does not.
  bool rebindDevice(const ExtendedResource& device, const ExtendedResourceClaim& claim);
  void freeDevice(const ExtendedResource& device, const action::FreeDevice& a);
  void initDeviceStatus(const ExtendedResource& device);
  void initClaimStatus(const ExtendedResourceClaim& claim);
  // status.reason Invalid and status.message the parse error, nothing else touched (an
  // absent phase becomes Available or Pending, as the init functions would write it). The
  // claim also gets a Warning event.
  void markDeviceInvalid(const ExtendedResource& device);
  void markClaimInvalid(const ExtendedResourceClaim& claim);
  // Removes that reason and message once the object was fixed.
  void clearDeviceInvalid(const ExtendedResource& device);
  void clearClaimInvalid(const ExtendedResourceClaim& claim);
  // A Warning event on a pod whose claims annotation cannot be parsed; false when the gate is
  // closed (nothing recorded).
  bool recordInvalidPod(const Pod& pod);
  // A Warning on a pod whose claim was deleted while holding devices; nothing while writes are
  // gated (the leader's own watch records it).
  void recordClaimDeletedUnderPod(const ExtendedResourceClaim& claim, const Pod& pod);
  // False when the pod no longer exists.
  bool nudgePod(const Pod& pod);

  // An event for a bind the extender made; dropped silently when the gate is closed.
  void recordBound(const ExtendedResourceClaim& claim);

  bool mayWrite() const { return !mayWrite_ || mayWrite_(); }

 private:
  enum class FreeResult { kFreed, kNothingToDo, kFailed };
  // triedVersion: the resourceVersion of the last write tried, "" when none was.
  FreeResult freeReleasedDevice(const std::string& name, const ExtendedResourceClaim& claim,
                                const CachedDevice& cached, const std::string& reason,
                                const std::string& message, std::string& triedVersion);
  template <class Object>
  void patchInvalid(const Object& obj, const Resource& res, nlohmann::json status);
  template <class Object>
  void markInvalid(const Object& obj, const Resource& res, const char* initPhase);
  template <class Object>
  void clearInvalid(const Object& obj, const Resource& res);
  void gate() const;
  void record(const ObjectReference& ref, EventType type, const std::string& reason,
              const std::string& message);

  ApiClient& api_;
  EventRecorder* events_;
  ControllerMetrics* metrics_;
  WriteGate mayWrite_;
  SystemClock clock_;
};

}  // namespace ker

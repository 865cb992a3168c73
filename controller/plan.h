#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/event_recorder.h"
#include "common/resource.h"
#include "common/status.h"
#include "controller/reconcile_decisions.h"
#include "model/objects.h"
#include "model/reasons.h"

// The vocabulary of plans: what a reconcile decided to write, in terms the executor applies
// without knowing why. Built by the pure plan functions (claim_plan, device_plan, pod_plan).
namespace ker {

// What a write does, for its metric and log line.
enum class Change {
  kReleased,
  kHoldersLeft,  // holders of a shared claim left it; the others keep its devices
  kClaimLost,
  kClaimRecovered,
  kClaimInitialized,
  kDeviceRebound,
  kDeviceFreed,
  kDeviceInitialized,
  kDeviceParked,    // a free device whose node has no Node object: Pending until it has
  kDeviceUnparked,  // its node registered again: Available
  kMarkedInvalid,
  kValidAgain,
  kProtected,        // the protection finalizer put on
  kUnprotected,      // taken off a deleting object nothing holds: its deletion completes
  kDeletionWaiting,  // a deleting object in use: its conditions say why it stays
};
const char* toString(Change change);

// The whole status of `next`, the object as the write leaves it: an update of /status carrying
// the whole object with the resourceVersion the plan was made on, so a concurrent change fails
// with a Conflict and the reconcile re-decides.
template <typename Object>
struct WholeStatus {
  Object next;
};
// The Invalid mark of `next` (its reason and message, set or cleared) and the conditions its
// status gives: a merge patch of /status naming only those fields, with the same precondition
// inside (planInvalidMark).
template <typename Object>
struct InvalidMarkPatch {
  Object next;
  bool phaseChanged = false;  // the mark's transition moved the phase (markInvalid)
};
// The finalizers the object is to have: a merge patch of the object itself, with the same
// precondition inside.
struct FinalizersPatch {
  std::string resourceVersion;
  std::vector<std::string> finalizers;
};
// What a write sends, typed: the executor renders it (renderWrite) only as it sends it.
using WriteContent = std::variant<WholeStatus<ExtendedResourceClaim>, WholeStatus<ExtendedResource>,
                                  InvalidMarkPatch<ExtendedResourceClaim>,
                                  InvalidMarkPatch<ExtendedResource>, FinalizersPatch>;

// One write.
struct StatusWrite {
  const Resource* resource = nullptr;
  std::string ns;
  std::string name;
  WriteContent content;
  SystemTime now;  // the plan's time: stamps the written conditions' transitions
};

// The update of /status that writes `next`'s typed status with the conditions it gives.
StatusWrite statusUpdate(ExtendedResourceClaim next, SystemTime now);
StatusWrite statusUpdate(ExtendedResource next, SystemTime now);

// The object of this kind whose status `w` writes, as the write leaves it (whole or its mark);
// nullptr for a write of no status (a finalizer patch) or of the other kind.
template <typename Object>
const Object* writtenObject(const StatusWrite& w) {
  if (const auto* whole = std::get_if<WholeStatus<Object>>(&w.content)) {
    return &whole->next;
  }
  if (const auto* mark = std::get_if<InvalidMarkPatch<Object>>(&w.content)) {
    return &mark->next;
  }
  return nullptr;
}

// Our conditions as `w` writes them (claimConditions, deviceConditions of its object at its
// time), for the plan's own decisions; none for a write of no status.
std::vector<Condition> writtenConditions(const StatusWrite& w);

struct PlannedEvent {
  ObjectReference about;
  EventType type = EventType::kNormal;
  std::string reason;
  std::string message;
};

// How a device is freed (freeDevice): with this message, released from the claim it names (or
// orphaned without one).
struct FreedStatus {
  std::string message;
  std::optional<ClaimRef> releasedFrom;
};

// The devices a release frees after its claim write, each only while it is still Bound to the
// claim (a fresh read decides once the cache cannot).
struct DeviceFrees {
  ClaimRef from;
  std::vector<std::string> names;
  FreedStatus status;
  // Instead, when the claim was deleted before its write landed: nothing was released, but
  // its devices still point at it.
  FreedStatus statusIfClaimGone;
  // The holders the release judged gone. The claim write, guarded by the version decided on,
  // keeps the frees from passing a pod that joined before it (its join changed the claim); a
  // pod whose join lost that race was never bound. It does not cover a bind that takes the
  // claim again once it is Pending (same claim, a new holder), and a deleted claim fails that
  // write as NotFound either way (freesAllowed).
  std::vector<PodRef> released;
  // Each device's holders as the release saw it (Bound to the claim), by name: a shared
  // claim's device keeps the pods that left the claim before.
  std::map<std::string, std::vector<PodRef>> seenHolders;

  // Whether the free may pass the device as it is now. With the claim still there, only a
  // holder neither released nor among the device's seenHolders stops it: a pod that bound the
  // claim again since. With the claim deleted, any holder but the released ones does (a pod
  // that joined meanwhile, whose device write came first). Such a device is left to its new
  // holder, and to the device's own reconcile.
  bool freesAllowed(const ExtendedResource& device, bool claimGone) const;

  // The claim's status.allocation, which the release keeps: with the claim's write done, a
  // device showing it is free already (freedByClaim) and needs no write of its own now.
  int64_t allocation = 0;
  bool freedByRelease(const ExtendedResource& device) const;
};

// One reconcile's plan. With `verify` set nothing else counts: the reconciler reads and plans
// again. Otherwise the write comes first, then (once it succeeded) the frees and the events.
struct Plan {
  std::optional<action::VerifyLive> verify;
  std::optional<StatusWrite> write;
  std::optional<Change> change;       // with write
  std::optional<ReleaseCause> cause;  // with Change::kReleased and kHoldersLeft
  std::string why;                    // for the log line
  std::optional<DeviceFrees> frees;
  std::vector<PlannedEvent> events;  // dropped, not failed, while this process may not write
  // When to look again (a grace period running); the grace clock's start to remember.
  std::optional<Millis> requeueAfter;
  std::optional<SteadyTime> suspectSince;
  // A status transition the model refused: the decision is at odds with the object, so nothing
  // is written (the reconciler logs it as an error).
  Status refused;
};

// The Invalid mark both kinds share: a merge patch of status.reason Invalid, the parse error as
// status.message (and the initial phase when the object has no phase yet), or, once the object
// parses again, of both cleared; either with the conditions that status gives (claimConditions,
// deviceConditions), so no condition contradicts the mark. Whatever else the status holds stays,
// parsable or not. A new mark comes with the Warning event Invalid. nullopt when the status and
// its conditions already say what they should.
std::optional<Plan> planInvalidMark(const ExtendedResourceClaim& claim, SystemTime now);
std::optional<Plan> planInvalidMark(const ExtendedResource& device, SystemTime now);

// A deleting object in use says once why it stays (deletionWaitUnannounced): with nothing else
// to write, `rewrite` (its status as it is, whose conditions then say DeletionWaiting) is
// planned. The write that first turns its Allocated condition to DeletionWaiting
// (saysDeletionWaiting of writtenConditions), that one or another status write of the plan
// (holders leaving, Lost, a mark), carries `event(write)`. `mayRewrite` false: its status
// is not to be written back (it cannot be trusted).
void planDeletionWait(Plan& plan, const ObjectMeta& meta, bool inUse,
                      const std::vector<Condition>& written, bool mayRewrite,
                      const std::function<StatusWrite()>& rewrite,
                      const std::function<PlannedEvent(const StatusWrite&)>& event);

// With nothing else to write (one write per reconcile, each conditional on the version seen),
// the protection finalizer's write when protectionChange calls for one; false when it does not.
bool planProtection(Plan& plan, const Resource& resource, const ObjectMeta& meta,
                    const std::string& finalizer, bool inUse, bool protect);

}  // namespace ker

#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/event_recorder.h"
#include "common/objects.h"
#include "common/resource.h"
#include "controller/reconcile_decisions.h"
#include "controller/status_reasons.h"

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
  kMarkedInvalid,
  kValidAgain,
  kProtected,        // the protection finalizer put on
  kUnprotected,      // taken off a deleting object nothing holds: its deletion completes
  kDeletionWaiting,  // a deleting object in use: its conditions say why it stays
};
const char* toString(Change change);

// One write. An update of /status carries the whole object with the resourceVersion the plan
// was made on, so a concurrent change fails with a Conflict and the reconcile re-decides; a
// merge patch (mergePatch) touches only the fields it names, with the same precondition inside,
// of /status or (subresource "") of the object itself.
struct StatusWrite {
  const Resource* resource = nullptr;
  std::string ns;
  std::string name;
  nlohmann::json body;
  bool mergePatch = false;
  std::string subresource = "status";
  // Our conditions as the body's status.conditions gives them, typed, for the plan's own
  // decisions; none for a write of no status (a finalizer patch).
  std::vector<Condition> conditions;
};

// The update of /status that writes `next`'s typed status with the conditions it gives.
StatusWrite statusUpdate(const ExtendedResourceClaim& next, SystemTime now);
StatusWrite statusUpdate(const ExtendedResource& next, SystemTime now);

struct PlannedEvent {
  ObjectReference about;
  EventType type = EventType::kNormal;
  std::string reason;
  std::string message;
};

// The status a freed device gets: Available, no claimRef, and this reason and message.
struct FreedStatus {
  StatusReason reason = StatusReason::kNone;
  std::string message;
  std::optional<ClaimRef> releasedFrom;
};
ExtendedResource freed(ExtendedResource device, const FreedStatus& status);

// The devices a release frees after its claim write, each only while it is still Bound to the
// claim (a fresh read decides once the cache cannot).
struct DeviceFrees {
  ClaimRef from;
  std::vector<std::string> names;
  FreedStatus status;
  // Instead, when the claim was deleted before its write landed: nothing was released, but
  // its devices still point at it.
  FreedStatus statusIfClaimGone;
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
// (saysDeletionWaiting of the write's typed conditions), that one or another status write of
// the plan (holders leaving, Lost, a mark), carries `event()`. `mayRewrite` false: its status
// is not to be written back (it cannot be trusted).
void planDeletionWait(Plan& plan, const ObjectMeta& meta, bool inUse,
                      const std::vector<Condition>& written, bool mayRewrite,
                      const std::function<StatusWrite()>& rewrite,
                      const std::function<PlannedEvent()>& event);

// With nothing else to write (one write per reconcile, each conditional on the version seen),
// the protection finalizer's write when protectionChange calls for one; false when it does not.
bool planProtection(Plan& plan, const Resource& resource, const ObjectMeta& meta,
                    const std::string& finalizer, bool inUse);

}  // namespace ker

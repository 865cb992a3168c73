#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/clocks.h"
#include "common/comma_list.h"
#include "model/objects.h"
#include "model/reasons.h"

// What the controller decides to do about a claim, a device or waiting pods, as pure functions
// of what it has seen: no I/O, no clock, no shared state. The plan functions (claim_plan,
// device_plan, pod_plan) turn these actions into the exact statuses and events to write; the
// watch's triggers are in watch_triggers. Together they are every decision the controller
// makes; the reconciler gathers their inputs and the executor applies their plans.
namespace ker {

using Millis = std::chrono::milliseconds;

// status.message of a device a release freed, for people: programs read status.releasedFrom.
std::string releasedMessage(const std::string& claimKey);

enum class ReleaseCause {
  kPodDeleted,      // the holder no longer exists
  kPodReplaced,     // a different pod (another UID) now has the holder's name
  kPodFinished,     // the holder Succeeded or Failed
  kNeverScheduled,  // the holder never got a node within the grace period (bind died midway)
  kNoHolder,        // Bound or Lost without a holder, past the grace period
};
const char* toString(ReleaseCause cause);

// What a live read must fetch before the decision can be trusted.
enum class LiveRead {
  kHolderPod,     // the pods the claim's holders name (those not read live yet)
  kClaimDevices,  // the devices the claim lists
  kDeviceClaim,   // the claim the device's claimRef names
  kRebindClaim,   // the claim a device would be bound back to
};

namespace action {
struct Nothing {};
// The cache alone cannot justify a write: re-decide with a fresh read of `what`.
struct VerifyLive {
  LiveRead what;
  std::vector<std::string> devices;  // for kClaimDevices: the names to read
  std::string claimKey;              // for kRebindClaim: "namespace/name"
  std::vector<std::string> holders;  // for kHolderPod: the holders' names to read
};
// A suspicious state that may be a transient; look again after `remaining`.
struct WaitGrace {
  Millis remaining;
};
// The claim goes back to Pending (allocation, node and holders cleared) and the devices it
// lists that are still Bound to it go back to Available.
struct ReleaseClaim {
  ReleaseCause cause;
  std::string message;
};
// Some holders of a shared claim are gone (deleted, replaced, finished, never scheduled)
// while others still hold it: they leave its holders, and the claim keeps its devices.
struct DropHolders {
  std::vector<PodRef> gone;
  ReleaseCause cause;  // the first one's
  std::string message;
};
// Devices the claim lists are gone (or no longer Bound to it): the claim becomes Lost and
// moves them from its allocation to its lost devices.
struct MarkClaimLost {
  std::vector<std::string> missing;
  std::string message;
};
// Lost devices that are Bound to the claim again: they go back to its allocation, and with
// none left lost the claim is Bound again.
struct RecoverClaim {
  std::vector<std::string> recovered;
};
// The device's claim is gone but pods it was given to may still use it: it stays Bound, and
// is looked at again after `recheck`.
struct AwaitHolders {
  std::vector<std::string> pods;  // the holders still there
  Millis recheck;
};
// The device goes back to Available with its claimRef cleared.
struct FreeDevice {
  std::string message;
  std::optional<ClaimRef> releasedFrom;  // the claim whose release freed it; none: orphaned
};
// The device, free or new, carries a name a Bound or Lost claim lists: it is the same device
// back (recreated, or freed by hand) under a pod that may still use it, so it is Bound to
// that claim again rather than offered to another pod.
struct RebindDevice {
  const ExtendedResourceClaim* claim;  // one of DeviceView::listedBy
};
// The device has no status yet: it becomes Available.
struct InitDeviceStatus {};
// The free device's node has had no Node object for the grace period: it becomes Pending
// (NodeNotRegistered) so nobody counts on it.
struct ParkDevice {
  std::string message;
};
// The node of a device parked for it is registered again: it becomes Available.
struct UnparkDevice {};
// The claim has no status yet: it says Pending, as readers of the API expect.
struct InitClaimStatus {};
}  // namespace action

using Action = std::variant<action::Nothing, action::VerifyLive, action::WaitGrace,
                            action::ReleaseClaim, action::DropHolders, action::MarkClaimLost,
                            action::RecoverClaim, action::AwaitHolders, action::FreeDevice,
                            action::RebindDevice, action::InitDeviceStatus, action::ParkDevice,
                            action::UnparkDevice, action::InitClaimStatus>;

struct Decision {
  Action action;
  // When the suspicious state under observation was first seen; nullopt = nothing suspicious
  // (the caller forgets any earlier time).
  std::optional<SteadyTime> suspectSince;
};

// The pod found under one holder's name in the claim's namespace, whatever its UID (nullptr
// when there is none), and whether it (or its absence) comes from a live read.
struct HolderPod {
  const Pod* pod = nullptr;
  bool live = false;
};

// How a pod named as a holder (by a claim or a device) stands. A holder is gone when no pod of
// its name and UID is left, or that pod finished (the kubelet reports Succeeded or Failed);
// kUnsure when only the cache says so, which a live read must confirm first: cache lag must
// never take devices from a live pod.
enum class HolderState { kHolds, kUnsure, kDeleted, kReplaced, kFinished };
HolderState holderState(const PodRef& ref, const HolderPod& found);

// Inputs for one claim.
struct ClaimView {
  const ExtendedResourceClaim* claim = nullptr;  // never null
  // Parallel to claim->holders(); a holder without an entry counts as not found, not live.
  std::vector<HolderPod> holders;
  // Every device the claim lists, allocated or lost, nullptr for those not found.
  std::map<std::string, const ExtendedResource*> devices;
  bool devicesLive = false;
  SteadyTime now;
  std::optional<SteadyTime> suspectSince;
  Millis grace{0};
};

// A Bound or Lost claim is released once its holder is gone, replaced or finished, or never
// got a node within the grace period; a shared claim drops each holder that goes so, and is
// released only when the last one does; a claim whose allocated devices vanished becomes (or
// stays) Lost, and takes back lost devices that are Bound to it again. Anything that would release
// or mark Lost because something is missing from the cache is confirmed by a live read first: cache
// lag must never take devices from a live pod.
Decision decideClaim(const ClaimView& v);

// Inputs for one device.
struct DeviceView {
  const ExtendedResource* device = nullptr;  // never null
  // The claim named by the device's claimRef, whatever its UID; nullptr when there is none.
  const ExtendedResourceClaim* claim = nullptr;
  bool claimLive = false;
  // This controller released the claim while it listed the device, failed to free the
  // device, and nothing has written the device since (same resourceVersion). The extender
  // only takes Available devices, so no bind in flight can be using it: no grace is needed.
  bool releasedWithClaim = false;
  // Claims whose status lists this device, allocated or lost, in key order.
  std::vector<const ExtendedResourceClaim*> listedBy;
  SteadyTime now;
  std::optional<SteadyTime> suspectSince;
  Millis grace{0};
  Millis rebindDelay{0};      // before an Available device a Bound claim lists is bound back
  Millis freedWriteDelay{0};  // before a device freedByClaim is written Available
  // Parallel to device->holders (pods in its claimRef's namespace); a holder without an entry
  // counts as not found, not live.
  std::vector<HolderPod> holders;
  Millis holderRecheck{2000};  // how soon a device kept for its holders is looked at again
  // Whether the node the device's kNodeLabel names has a Node object; nullopt when it names
  // none, or Nodes are not watched.
  std::optional<bool> nodeRegistered;
};

// A device without a status becomes Available, or Bound to the Bound or Lost claim that lists
// a device of that name and resource, as does an Available one once that has lasted
// rebindDelay. A Bound device whose claim (that UID) no longer exists, confirmed by a live read,
// stays Bound while a pod its status.holders names still holds it (holderState): deleting the
// claim, or taking its finalizer off, never hands a running pod's device to another; once every
// holder is gone or finished it is freed. A device its claim's release freed (freedByClaim) is
// written Available, released from that claim, once that has lasted freedWriteDelay (no read:
// its version guards the write, and nothing but a bind moves it on). Any other Bound device its
// claim does not list is freed only after that has lasted the grace period (unless
// releasedWithClaim), because the extender writes devices before the claim and so passes
// through that state on every bind. A free device whose node has no Node object
// is parked (Pending) once that has lasted the grace period, so a node registered again at once
// (a kubelet re-registering) never flaps it, and is offered again as soon as the node is back.
Decision decideDevice(const DeviceView& v);

// The device is Bound to this very claim (matched by UID when its claimRef carries one).
bool isBoundTo(const ExtendedResource& device, const ExtendedResourceClaim& claim);
bool isBoundTo(const ExtendedResource& device, const ClaimRef& claim);

// The pod is among the claim's holders: a holder of its name whose UID agrees, or carries
// none.
bool isHolder(const Pod& pod, const ExtendedResourceClaim& claim);

// A claim deleted while it still listed devices under a holder that runs on with them: the
// devices stay with the pod until it ends, but nothing gives the pod devices again (a restarted
// container is refused), so the holder is warned. Not a holder that finished or is being
// deleted.
bool warnOfDeletedClaim(const ExtendedResourceClaim& claim, const Pod* holder);

// Protection while in use (as PersistentVolumeClaim protection): every claim and device carries
// the protection finalizer, put on when first seen (or at creation: the node agent's devices and
// the claims made from templates are created with it); a deleting one keeps it while it is in
// use and loses it once nothing holds it, so its deletion completes. With protection off, no
// finalizer is put on and a deleting object loses the one it has at once, in use or not: no
// deletion waits for a protection that is off, whoever put the finalizer on. A claim is in use
// while a pod holds it (Bound or Lost, or a status that cannot be read to say otherwise); a device
// while it is Bound and not freed by its claim's release (`claim`: the one its claimRef names, as
// cached; nullptr for none). A device being deleted counts as lost to the claim that holds it (its
// pod is told) and stays until that claim is released.
bool claimInUse(const ExtendedResourceClaim& claim);
// A shareable claim a pod naming it can join now: Bound, usable, with room for one more holder.
bool joinable(const ExtendedResourceClaim& claim);
bool deviceInUse(const ExtendedResource& device, const ExtendedResourceClaim* claim);
// true: put the finalizer on; false: take it off; nullopt: leave it as it is. A deleting object
// gets no new finalizer (the API server refuses it).
std::optional<bool> protectionChange(const ObjectMeta& meta, const std::string& finalizer,
                                     bool inUse, bool protect);
// A deleting object in use stays until it is released, and says so: true while its written
// Allocated condition does not yet give the reason DeletionWaiting. The plan then writes the
// status again (its conditions say it) with the DeletionWaiting event, so the event comes once
// per deletion, remembered by the object itself across resyncs and restarts.
bool deletionWaitUnannounced(const ObjectMeta& meta, bool inUse,
                             const std::vector<Condition>& written);
// These conditions say the deletion waits: their Allocated condition gives DeletionWaiting.
bool saysDeletionWaiting(const std::vector<Condition>& conditions);

// A pod as the nudge selection sees it.
struct PendingPodView {
  const Pod* pod = nullptr;
  bool unschedulable = false;  // condition PodScheduled is False with reason Unschedulable
};

struct NudgeView {
  // What changed: devices of this resource became Available, or (claimKey set) that claim
  // became usable, which concerns only the pods that name it.
  std::string rawResourceName;
  std::string claimKey;    // "namespace/name"
  SteadyTime triggeredAt;  // when it last did
  std::string schedulerName;
  std::vector<PendingPodView> pods;
  // The claims, by "namespace/name"; absent ones are skipped.
  std::map<std::string, const ExtendedResourceClaim*> claims;
  // The devices each extended resource name a class serves is drawn from (its rawResourceName):
  // a pod asking for one in its resources gets its claim at bind, so it has none to go by.
  std::map<std::string, std::string> classResources;
  std::map<std::string, SteadyTime> lastNudged;  // by pod UID
  SteadyTime now;
  Millis minInterval{0};
  size_t limit = 0;
};

struct NudgePlan {
  std::vector<const Pod*> pods;  // nudge these now
  // Some due pods were left for later (nudged too recently, or past the limit): run again
  // after this long.
  std::optional<Millis> again;
};

// The pods worth asking kube-scheduler to retry: unscheduled, of our scheduler, rejected as
// unschedulable, not deleting, with a Pending claim for the resource or a request of a class's
// name served from it with no claim recorded (or naming the claim, when the view has a
// claimKey), and not nudged since
// the trigger. A due pod nudged less than minInterval ago is deferred, never dropped, so the
// last of several quick triggers is always followed by a nudge. Oldest first, at most limit.
NudgePlan podsToNudge(const NudgeView& v);

}  // namespace ker

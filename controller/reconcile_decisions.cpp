#include "controller/reconcile_decisions.h"

#include <algorithm>
#include <tuple>

#include "common/flags.h"
#include "model/device_transitions.h"
#include "model/served_pods.h"
#include "model/suitability.h"

namespace ker {

namespace {

using namespace action;

std::string podName(const ExtendedResourceClaim& c, const PodRef& ref) {
  return objectKey(c.meta.ns, ref.name);
}

// "pod ns/a", or "pods ns/a, ns/b" for a shared claim: who a Lost claim's devices were lost
// under.
std::string holdersText(const ExtendedResourceClaim& c) {
  const auto refs = c.holders();
  std::vector<std::string> names;
  for (const auto& ref : refs) {
    names.push_back(podName(c, ref));
  }
  return (refs.size() > 1 ? "pods " : "pod ") + joinNames(names);
}

bool holds(const Pod& pod, const PodRef& ref) {
  return pod.meta.name == ref.name && (ref.uid.empty() || pod.meta.uid == ref.uid);
}

// A state that is only suspicious while young: wait until it has lasted `grace`, then act
// (through a live read first when the data came from the cache).
Decision afterGrace(const SteadyTime now, std::optional<SteadyTime> suspectSince, Millis grace,
                    bool live, LiveRead read, Action act) {
  const SteadyTime since = suspectSince.value_or(now);
  const auto age = now - since;
  if (age < grace) {
    return {WaitGrace{std::chrono::ceil<Millis>(grace - age)}, since};
  }
  if (!live) {
    return {VerifyLive{read, {}}, since};
  }
  return {std::move(act), std::nullopt};
}

}  // namespace

std::string releasedMessage(const std::string& claimKey) {
  return "claim " + claimKey + " was released";
}

const char* toString(ReleaseCause cause) {
  switch (cause) {
    case ReleaseCause::kPodDeleted:
      return "PodDeleted";
    case ReleaseCause::kPodReplaced:
      return "PodReplaced";
    case ReleaseCause::kPodFinished:
      return "PodFinished";
    case ReleaseCause::kNeverScheduled:
      return "NeverScheduled";
    case ReleaseCause::kNoHolder:
      return "NoHolder";
  }
  return "Unknown";
}

HolderState holderState(const PodRef& ref, const HolderPod& found) {
  const Pod* pod = found.pod;
  if (!pod || !holds(*pod, ref)) {
    return !found.live ? HolderState::kUnsure
           : pod       ? HolderState::kReplaced
                       : HolderState::kDeleted;
  }
  return pod->finished() ? HolderState::kFinished : HolderState::kHolds;
}

bool isHolder(const Pod& pod, const ExtendedResourceClaim& c) {
  const auto refs = c.holders();
  return std::any_of(refs.begin(), refs.end(), [&](const PodRef& ref) { return holds(pod, ref); });
}

bool warnOfDeletedClaim(const ExtendedResourceClaim& c, const Pod* holder) {
  return c.phase != ClaimPhase::kPending && !c.allocated.empty() && holder &&
         isHolder(*holder, c) && !holder->finished() && !holder->meta.deleting;
}

bool isBoundTo(const ExtendedResource& d, const ExtendedResourceClaim& c) {
  return isBoundTo(d, ClaimRef{c.meta.ns, c.meta.name, c.meta.uid});
}

bool isBoundTo(const ExtendedResource& d, const ClaimRef& c) {
  return d.phase == DevicePhase::kBound && d.claimRef && d.claimRef->ns == c.ns &&
         d.claimRef->name == c.name && (d.claimRef->uid.empty() || d.claimRef->uid == c.uid);
}

namespace {

// A device that is free by its own status (none yet, or Available) but carries a name the
// claim lists: back under a pod that may still be using it, it is bound to the claim again
// if it could have been allocated to it on its node. One of another resource, properties or
// node is another device under the same name: held by name, never bound back. One this
// claim's release just freed is no such device: the claim in the cache is older.
bool bindsBackTo(const ExtendedResource& d, const ExtendedResourceClaim& c) {
  // A device without a status reads as Available too, and is as good to bind back.
  if (d.phase != DevicePhase::kAvailable || !d.invalid.empty() || d.meta.deleting ||
      c.holders().empty() ||
      (parseReason(d.reason) == Reason::kReleased && d.releasedFrom &&
       d.releasedFrom->ns == c.meta.ns && d.releasedFrom->name == c.meta.name)) {
    return false;
  }
  const auto held = c.heldDevices();
  return std::find(held.begin(), held.end(), d.meta.name) != held.end() && suits(d, c) &&
         (c.nodeName.empty() || mayBeReachable(d, c.nodeName));
}

// A claim its pod controls (made for a template entry or a class request) and whose status is
// still empty: its first status is its bind's. Until then it reads as Pending everywhere, and a
// first Pending write would cost kube-apiserver a status write per pod that tells the user
// nothing the pod's events do not. A status written by hand without a phase is still reset.
bool firstStatusAtBind(const ExtendedResourceClaim& c) {
  const auto label = c.meta.labels.find(kPodUidLabel);
  return label != c.meta.labels.end() && !label->second.empty() &&
         c.meta.controllerUid() == label->second && c.listedDevices().empty() &&
         c.holders().empty() && c.nodeName.empty() && c.reason.empty() && c.message.empty() &&
         c.conditions.empty() && c.alternative.empty() && c.allocations.empty();
}

}  // namespace

Decision decideClaim(const ClaimView& v) {
  const ExtendedResourceClaim& c = *v.claim;
  // An unparsable status cannot be trusted to say what the claim holds. A claim invalid in
  // its spec alone (a selector edited while Bound) is still released when its pod goes.
  if (c.statusReadable && c.phase == ClaimPhase::kPending && !c.phaseWritten &&
      !firstStatusAtBind(c)) {
    return {InitClaimStatus{}, std::nullopt};
  }
  if (!c.statusReadable || c.phase == ClaimPhase::kPending) {
    return {Nothing{}, std::nullopt};
  }
  const std::vector<PodRef> refs = c.holders();
  if (refs.empty()) {
    return afterGrace(
        v.now, v.suspectSince, v.grace, true, LiveRead::kHolderPod,
        ReleaseClaim{ReleaseCause::kNoHolder,
                     std::string("claim is ") + toString(c.phase) + " without a podRef"});
  }
  // Each holder is judged as a lone holder would be; the claim is released when all are gone.
  std::vector<PodRef> gone;
  std::optional<ReleaseClaim> why;  // the first holder found gone
  std::optional<Decision> waiting;  // a holder still without a node
  std::vector<std::string> unsure;  // holders the cache cannot answer for: read live first
  std::optional<SteadyTime> since;  // when a holder without a node was first seen so
  for (size_t i = 0; i < refs.size(); ++i) {
    const PodRef& ref = refs[i];
    const HolderPod hp = i < v.holders.size() ? v.holders[i] : HolderPod{};
    const Pod* pod = hp.pod;
    std::optional<ReleaseClaim> left;
    const HolderState state = holderState(ref, hp);
    if (state == HolderState::kUnsure) {
      unsure.push_back(ref.name);
      continue;
    }
    if (state == HolderState::kReplaced) {
      left = ReleaseClaim{ReleaseCause::kPodReplaced,
                          "pod " + podName(c, ref) + " was recreated (uid " + pod->meta.uid +
                              "); the holder (uid " + ref.uid + ") is gone"};
    } else if (state == HolderState::kDeleted) {
      left = ReleaseClaim{ReleaseCause::kPodDeleted,
                          "pod " + podName(c, ref) + " (uid " + ref.uid + ") no longer exists"};
    } else if (state == HolderState::kFinished) {
      left = ReleaseClaim{ReleaseCause::kPodFinished, "pod " + podName(c, ref) + " " + pod->phase};
    } else if (pod->nodeName.empty()) {
      Decision d =
          afterGrace(v.now, v.suspectSince, v.grace, hp.live, LiveRead::kHolderPod,
                     ReleaseClaim{ReleaseCause::kNeverScheduled,
                                  "pod " + podName(c, ref) + " was not bound to a node within " +
                                      formatDuration(v.grace) + " of holding the claim"});
      if (auto* r = std::get_if<ReleaseClaim>(&d.action)) {
        left = *r;
      } else if (std::holds_alternative<VerifyLive>(d.action)) {
        unsure.push_back(ref.name);
        since = d.suspectSince;
      } else if (!waiting) {
        waiting = std::move(d);
      }
    }
    if (left) {
      gone.push_back(ref);
      if (!why) {
        why = std::move(left);
      }
    }
  }
  if (!unsure.empty()) {
    return {VerifyLive{LiveRead::kHolderPod, {}, {}, std::move(unsure)}, since ? since
                                                                         : waiting
                                                                             ? waiting->suspectSince
                                                                             : std::nullopt};
  }
  if (gone.size() == refs.size()) {
    if (refs.size() > 1) {
      why->message = "every holder is gone: " + why->message;
    }
    return {std::move(*why), std::nullopt};
  }
  if (!gone.empty()) {
    return {DropHolders{std::move(gone), why->cause, std::move(why->message)}, std::nullopt};
  }
  if (waiting) {
    return *waiting;
  }

  std::vector<std::string> recovered;
  for (const auto& name : c.lost) {
    auto it = v.devices.find(name);
    if (it != v.devices.end() && it->second && isBoundTo(*it->second, c) &&
        !it->second->meta.deleting) {
      recovered.push_back(name);
    }
  }
  if (!recovered.empty()) {
    return {RecoverClaim{std::move(recovered)}, std::nullopt};
  }

  std::vector<std::string> missing;
  std::vector<std::string> deleted;
  std::vector<std::string> deleting;  // kept by their finalizer until the claim lets go
  std::vector<std::string> unbound;
  bool comingBack = false;
  for (const auto& name : c.allocated) {
    auto it = v.devices.find(name);
    const ExtendedResource* d = it == v.devices.end() ? nullptr : it->second;
    if (!d || !isBoundTo(*d, c) || d->meta.deleting) {
      missing.push_back(name);
      (!d ? deleted : d->meta.deleting && isBoundTo(*d, c) ? deleting : unbound).push_back(name);
      comingBack = comingBack || (d && bindsBackTo(*d, c));
    }
  }
  if (missing.empty()) {
    return {Nothing{}, std::nullopt};
  }
  if (comingBack) {
    // Recreated before this claim was seen to lose it: its own reconcile binds it back, and
    // the claim need not go Lost meanwhile. Only for so long.
    const SteadyTime since = v.suspectSince.value_or(v.now);
    if (v.now - since < v.grace) {
      return {
          WaitGrace{std::min(Millis(1000), std::chrono::ceil<Millis>(v.grace - (v.now - since)))},
          since};
    }
  }
  if (!v.devicesLive) {
    return {VerifyLive{LiveRead::kClaimDevices, missing}, std::nullopt};
  }
  std::string message;
  if (!deleted.empty()) {
    message = "extended resource" + std::string(deleted.size() > 1 ? "s " : " ") +
              joinNames(deleted) + (deleted.size() > 1 ? " were" : " was") + " deleted";
  }
  if (!deleting.empty()) {
    message += (message.empty() ? "extended resource" : "; extended resource") +
               std::string(deleting.size() > 1 ? "s " : " ") + joinNames(deleting) +
               (deleting.size() > 1 ? " are" : " is") + " being deleted";
  }
  if (!unbound.empty()) {
    message += (message.empty() ? "extended resource" : "; extended resource") +
               std::string(unbound.size() > 1 ? "s " : " ") + joinNames(unbound) +
               (unbound.size() > 1 ? " are" : " is") + " no longer bound to this claim";
  }
  message += " while held by " + holdersText(c);
  return {MarkClaimLost{std::move(missing), std::move(message)}, std::nullopt};
}

Decision decideDevice(const DeviceView& v) {
  const ExtendedResource& d = *v.device;
  for (const ExtendedResourceClaim* c : v.listedBy) {
    if (bindsBackTo(d, *c)) {
      return afterGrace(v.now, v.suspectSince, v.rebindDelay, true, LiveRead::kRebindClaim,
                        RebindDevice{c});
    }
  }
  if (!d.phaseWritten) {
    return {InitDeviceStatus{}, std::nullopt};
  }
  if (d.invalid.empty() && d.phase == DevicePhase::kAvailable && d.claimRef) {
    // No write of ours leaves this (a status edited by hand): the extender will not offer a
    // device that still names a claim, so it would stay unusable. (A claim that lists it
    // took it back above.)
    return {FreeDevice{"Available but still naming claim " +
                       objectKey(d.claimRef->ns, d.claimRef->name)},
            std::nullopt};
  }
  if (d.invalid.empty() && v.nodeRegistered) {
    if (*v.nodeRegistered && parkedOffNode(d)) {
      return {UnparkDevice{}, std::nullopt};
    }
    if (!*v.nodeRegistered && d.phase == DevicePhase::kAvailable && !d.claimRef) {
      // The cache suffices after the grace: a Node's absence that long is no watch lag.
      return afterGrace(v.now, v.suspectSince, v.grace, true, LiveRead::kDeviceClaim,
                        ParkDevice{"node " + d.labelledNode() +
                                   " has no Node object: not offered until it registers"});
    }
  }
  if (!d.invalid.empty() || d.phase != DevicePhase::kBound) {
    return {Nothing{}, std::nullopt};
  }
  if (!d.claimRef) {
    return afterGrace(v.now, v.suspectSince, v.grace, true, LiveRead::kDeviceClaim,
                      FreeDevice{"Bound without a claimRef"});
  }
  const ClaimRef& ref = *d.claimRef;
  const std::string refName = objectKey(ref.ns, ref.name);
  const ExtendedResourceClaim* c = v.claim;
  if (!c || (!ref.uid.empty() && c->meta.uid != ref.uid)) {
    // That claim can never come back (UIDs are never reused), so no grace is needed once a
    // live read has confirmed it is gone.
    if (!v.claimLive) {
      return {VerifyLive{LiveRead::kDeviceClaim, {}}, std::nullopt};
    }
    std::vector<std::string> unsure;
    std::vector<std::string> holding;
    for (size_t i = 0; i < d.holders.size(); ++i) {
      const HolderPod found = i < v.holders.size() ? v.holders[i] : HolderPod{};
      switch (holderState(d.holders[i], found)) {
        case HolderState::kUnsure:
          unsure.push_back(d.holders[i].name);
          break;
        case HolderState::kHolds:
          // A pod with no node has no containers (the kubelet runs only pods bound to it), and
          // with its claim gone none will get this device (the node agent gives a claim's
          // devices only while it is Bound to the pod): it holds nothing. A join whose claim
          // write failed leaves such a pod on the device. The cache may lag a Binding, so only
          // a live copy says so.
          if (!found.pod->nodeName.empty()) {
            holding.push_back(objectKey(ref.ns, d.holders[i].name));
          } else if (!found.live) {
            unsure.push_back(d.holders[i].name);
          }
          break;
        default:
          break;
      }
    }
    if (!unsure.empty()) {
      return {VerifyLive{LiveRead::kHolderPod, {}, {}, std::move(unsure)}, std::nullopt};
    }
    if (!holding.empty()) {
      return {AwaitHolders{std::move(holding), v.holderRecheck}, std::nullopt};
    }
    return {FreeDevice{"claim " + refName + " (uid " + ref.uid + ") no longer exists" +
                       (d.holders.empty() ? "" : " and no pod holds the device")},
            std::nullopt};
  }
  if (!c->statusReadable) {
    return {Nothing{}, std::nullopt};
  }
  // A lost device rebound to its claim is listed as lost until the claim takes it back.
  const auto held = c->heldDevices();
  if (std::find(held.begin(), held.end(), d.meta.name) != held.end()) {
    return {Nothing{}, std::nullopt};
  }
  if (freedByClaim(d, allocationOf(*c))) {
    return afterGrace(v.now, v.suspectSince, v.freedWriteDelay, true, LiveRead::kDeviceClaim,
                      FreeDevice{releasedMessage(refName), ref});
  }
  if (v.releasedWithClaim) {
    return {FreeDevice{releasedMessage(refName), ref}, std::nullopt};
  }
  if (parseReason(d.reason) == Reason::kRebound) {
    // Bound back to a claim released before (or while) it was: no bind is in flight on it.
    if (!v.claimLive) {
      return {VerifyLive{LiveRead::kDeviceClaim, {}}, std::nullopt};
    }
    return {FreeDevice{"claim " + refName + " was released before it took the device back"},
            std::nullopt};
  }
  return afterGrace(v.now, v.suspectSince, v.grace, v.claimLive, LiveRead::kDeviceClaim,
                    FreeDevice{"claim " + refName + " does not list it"});
}

bool claimInUse(const ExtendedResourceClaim& c) {
  return allocationOf(c).holding;
}

bool joinable(const ExtendedResourceClaim& c) {
  return c.shareable && c.phase == ClaimPhase::kBound && c.statusReadable && c.invalid.empty() &&
         !c.meta.deleting && c.holders().size() < kMaxClaimHolders;
}

bool deviceInUse(const ExtendedResource& d, const ExtendedResourceClaim* claim) {
  return d.phase == DevicePhase::kBound && !(claim && freedByClaim(d, allocationOf(*claim)));
}

std::optional<bool> protectionChange(const ObjectMeta& meta, const std::string& finalizer,
                                     bool inUse, bool protect) {
  const bool has =
      std::find(meta.finalizers.begin(), meta.finalizers.end(), finalizer) != meta.finalizers.end();
  if (!protect) {
    return has && meta.deleting ? std::optional<bool>(false) : std::nullopt;
  }
  if (!has && !meta.deleting) {
    return true;
  }
  if (has && meta.deleting && !inUse) {
    return false;
  }
  return std::nullopt;
}

bool deletionWaitUnannounced(const ObjectMeta& meta, bool inUse,
                             const std::vector<Condition>& written) {
  return meta.deleting && inUse && !saysDeletionWaiting(written);
}

bool saysDeletionWaiting(const std::vector<Condition>& conditions) {
  const Condition* allocated = findCondition(conditions, ConditionType::kAllocated);
  return allocated && allocated->reason == Reason::kDeletionWaiting;
}

NudgePlan podsToNudge(const NudgeView& v) {
  NudgePlan plan;
  auto later = [&](Millis d) { plan.again = plan.again ? std::min(*plan.again, d) : d; };
  for (const auto& pv : v.pods) {
    const Pod* p = pv.pod;
    if (!pv.unschedulable || !p->nodeName.empty() || !servedPod(*p, v.schedulerName) ||
        p->meta.deleting || p->finished() || !p->invalid.empty()) {
      continue;
    }
    const bool asksFromResource =
        v.claimKey.empty() &&
        std::any_of(p->extendedRequests.begin(), p->extendedRequests.end(), [&](const auto& r) {
          const auto served = v.classResources.find(r.first);
          return !p->resourceClaims.count(r.first) && served != v.classResources.end() &&
                 served->second == v.rawResourceName;
        });
    const bool wants =
        asksFromResource || std::any_of(p->claims.begin(), p->claims.end(), [&](const auto& name) {
          const std::string key = objectKey(p->meta.ns, name);
          auto it = v.claims.find(key);
          if (it == v.claims.end() || !it->second) {
            return false;
          }
          const bool pending = it->second->phase == ClaimPhase::kPending;
          if (!v.claimKey.empty()) {
            return key == v.claimKey && (pending || joinable(*it->second));
          }
          const auto resources = it->second->resourceNames();
          return pending && std::find(resources.begin(), resources.end(), v.rawResourceName) !=
                                resources.end();
        });
    if (!wants) {
      continue;
    }
    if (auto it = v.lastNudged.find(p->meta.uid); it != v.lastNudged.end()) {
      if (it->second >= v.triggeredAt) {
        continue;  // already nudged for these devices
      }
      if (const auto age = v.now - it->second; age < v.minInterval) {
        later(std::chrono::ceil<Millis>(v.minInterval - age));
        continue;
      }
    }
    plan.pods.push_back(p);
  }
  // RFC 3339 timestamps in the API's fixed format order as strings do.
  std::sort(plan.pods.begin(), plan.pods.end(), [](const Pod* a, const Pod* b) {
    return std::tie(a->meta.creationTimestamp, a->meta.ns, a->meta.name) <
           std::tie(b->meta.creationTimestamp, b->meta.ns, b->meta.name);
  });
  if (plan.pods.size() > v.limit) {
    plan.pods.resize(v.limit);
    later(Millis(0));
  }
  return plan;
}

}  // namespace ker

#include "controller/claim_plan.h"

#include <algorithm>

#include "model/claim_transitions.h"
#include "model/event_reasons.h"
#include "model/objects.h"

namespace ker {

namespace {

std::string keyOf(const ExtendedResourceClaim& c) {
  return objectKey(c.meta.ns, c.meta.name);
}

ObjectReference podReference(const ExtendedResourceClaim& c, const PodRef& ref) {
  return ObjectReference{"v1", "Pod", c.meta.ns, ref.name, ref.uid};
}

// Every holder, for the events that concern them all.
std::vector<ObjectReference> holderRefs(const ExtendedResourceClaim& c) {
  std::vector<ObjectReference> out;
  for (const auto& ref : c.holders()) {
    out.push_back(podReference(c, ref));
  }
  return out;
}

// What a released claim held, as its Released event opens: the bind wrote no event, so this
// is the record of the allocation once the status no longer holds it.
std::string releasedWhat(const ExtendedResourceClaim& c) {
  const std::vector<std::string> devices = c.listedDevices();
  if (devices.empty()) {
    return "";
  }
  std::string out = "released " + joinNames(devices);
  if (!c.nodeName.empty()) {
    out += " on node " + c.nodeName;
  }
  if (const std::string holders = c.holderNames(); !holders.empty()) {
    out += " from pod " + holders;
  }
  return out + ": ";
}

void release(const ExtendedResourceClaim& c, const ClaimView& v, const action::ReleaseClaim& a,
             SystemTime now, Plan& p) {
  ExtendedResourceClaim next = c;
  if (p.refused = releaseClaim(next, a.message); !p.refused.ok()) {
    return;
  }
  p.write = statusUpdate(std::move(next), now);
  p.change = Change::kReleased;
  p.cause = a.cause;
  p.why = a.message;
  DeviceFrees frees;
  frees.from = ClaimRef{c.meta.ns, c.meta.name, c.meta.uid};
  frees.names = c.listedDevices();
  frees.status = {releasedMessage(keyOf(c)), frees.from};
  frees.statusIfClaimGone.message = "claim " + keyOf(c) + " was deleted";
  frees.released = c.holders();
  frees.allocation = c.allocation;
  for (const auto& [name, device] : v.devices) {
    if (device != nullptr && isBoundTo(*device, c)) {
      frees.seenHolders.emplace(name, device->holders);
    }
  }
  p.frees = std::move(frees);
  p.events.push_back({referenceTo(c), EventType::kNormal, toString(Reason::kReleased),
                      releasedWhat(c) + a.message});
  // On the holder too, gone or not: an event outlives its object, and `kubectl get events`
  // shows it for a deleted pod.
  for (const auto& pod : holderRefs(c)) {
    p.events.push_back({pod, EventType::kNormal, event_reason::kClaimReleased,
                        "claim " + c.meta.name + " released: " + a.message});
  }
}

// Holders of a shared claim that went while others still hold it: only they leave it; the
// devices stay allocated to the claim.
void dropHolders(const ExtendedResourceClaim& c, const action::DropHolders& a, SystemTime now,
                 Plan& p) {
  ExtendedResourceClaim next = c;
  if (p.refused = leaveClaim(next, a.gone); !p.refused.ok()) {
    return;
  }
  p.write = statusUpdate(std::move(next), now);
  p.change = Change::kHoldersLeft;
  p.cause = a.cause;
  p.why = a.message;
  std::vector<std::string> names;
  for (const auto& ref : a.gone) {
    names.push_back(ref.name);
    p.events.push_back({podReference(c, ref), EventType::kNormal, event_reason::kClaimReleased,
                        "claim " + c.meta.name + " released for this pod: " + a.message +
                            "; its other holders keep it"});
  }
  p.events.push_back({referenceTo(c), EventType::kNormal, event_reason::kHoldersLeft,
                      "pod" + std::string(names.size() > 1 ? "s " : " ") + joinNames(names) +
                          (names.size() > 1 ? " no longer hold" : " no longer holds") +
                          " the claim: " + a.message});
}

void markLost(const ExtendedResourceClaim& c, const action::MarkClaimLost& a, SystemTime now,
              Plan& p) {
  ExtendedResourceClaim next = c;
  if (p.refused = markClaimLost(next, a.missing, a.message); !p.refused.ok()) {
    return;
  }
  p.write = statusUpdate(std::move(next), now);
  p.change = Change::kClaimLost;
  p.why = a.message + " (" + joinNames(a.missing) + ")";
  p.events.push_back({referenceTo(c), EventType::kWarning, event_reason::kLost, a.message});
  for (const auto& pod : holderRefs(c)) {
    p.events.push_back({pod, EventType::kWarning, event_reason::kClaimLost,
                        "claim " + c.meta.name + " lost: " + a.message});
  }
}

void recover(const ExtendedResourceClaim& c, const action::RecoverClaim& a, SystemTime now,
             Plan& p) {
  ExtendedResourceClaim next = c;
  if (p.refused = recoverClaim(next, a.recovered); !p.refused.ok()) {
    return;
  }
  // The event says what came back; the status also what is still lost.
  const std::string message = recoveredMessage(a.recovered);
  p.why = next.message;
  p.write = statusUpdate(std::move(next), now);
  p.change = Change::kClaimRecovered;
  p.events.push_back({referenceTo(c), EventType::kNormal, toString(Reason::kRecovered), message});
  for (const auto& pod : holderRefs(c)) {
    p.events.push_back({pod, EventType::kNormal, event_reason::kClaimRecovered,
                        "claim " + c.meta.name + ": " + message});
  }
}

Plan planStatus(const ClaimInputs& in) {
  const ExtendedResourceClaim& c = *in.view.claim;
  // Marked first (the write brings it back). One whose status cannot be trusted to say what it
  // holds is left at that; one invalid in its spec alone is still released when its pod goes,
  // or it would keep its devices until someone mended the spec. Once valid again, the cleared
  // mark's write brings it back with the status as it is now.
  if (auto mark = planInvalidMark(c, in.now)) {
    return std::move(*mark);
  }
  Plan p;
  if (!c.invalid.empty() && !c.statusReadable) {
    return p;
  }
  const Decision d = decideClaim(in.view);
  p.suspectSince = d.suspectSince;
  if (const auto* verify = std::get_if<action::VerifyLive>(&d.action)) {
    p.verify = *verify;
  } else if (const auto* wait = std::get_if<action::WaitGrace>(&d.action)) {
    p.requeueAfter = wait->remaining;
  } else if (const auto* r = std::get_if<action::ReleaseClaim>(&d.action)) {
    release(c, in.view, *r, in.now, p);
  } else if (const auto* drop = std::get_if<action::DropHolders>(&d.action)) {
    dropHolders(c, *drop, in.now, p);
  } else if (const auto* lost = std::get_if<action::MarkClaimLost>(&d.action)) {
    markLost(c, *lost, in.now, p);
  } else if (const auto* back = std::get_if<action::RecoverClaim>(&d.action)) {
    recover(c, *back, in.now, p);
  } else if (std::holds_alternative<action::InitClaimStatus>(d.action)) {
    // A status without a phase is not one any bind wrote: whatever allocation it names (by
    // hand) goes, as Pending means; devices Bound to the claim are then orphans to repair.
    ExtendedResourceClaim next = c;
    if (p.refused = initializeClaim(next); p.refused.ok()) {
      p.write = statusUpdate(std::move(next), in.now);
      p.change = Change::kClaimInitialized;
    }
  }
  return p;
}

// The claim stays while pods hold it: the event names those its write leaves (those leaving now
// are not waited for).
PlannedEvent deletionWaitEvent(const ExtendedResourceClaim& c, const std::vector<PodRef>& holders) {
  std::vector<std::string> names;
  for (const auto& ref : holders) {
    names.push_back(ref.name);
  }
  const std::string pods = names.empty() ? std::string("?") : joinNames(names);
  return {referenceTo(c), EventType::kNormal, toString(Reason::kDeletionWaiting),
          names.size() > 1 ? "the claim is deleted once pods " + pods +
                                 " no longer hold it (finish or are deleted): until then its "
                                 "devices stay with those pods"
                           : "the claim is deleted once pod " + pods +
                                 " no longer holds it (finishes or is deleted): until then its "
                                 "devices stay with that pod"};
}

}  // namespace

Plan planClaim(const ClaimInputs& in) {
  const ExtendedResourceClaim& c = *in.view.claim;
  Plan p = planStatus(in);
  planProtection(p, resources::kExtendedResourceClaims, c.meta, kClaimProtectionFinalizer,
                 claimInUse(c), in.protect);
  if (in.protect) {
    planDeletionWait(
        p, c.meta, claimInUse(c), c.conditions, c.statusReadable,
        [&] { return statusUpdate(c, in.now); },
        [&](const StatusWrite& w) {
          // The holders the write leaves (a mark leaves them as they are).
          const auto* next = writtenObject<ExtendedResourceClaim>(w);
          return deletionWaitEvent(c, (next ? *next : c).holders());
        });
  }
  return p;
}

Plan planDeletedClaim(const ExtendedResourceClaim& last, const Pod* holder) {
  Plan p;
  if (warnOfDeletedClaim(last, holder)) {
    p.events.push_back({referenceTo(*holder), EventType::kWarning, event_reason::kClaimDeleted,
                        "claim " + last.meta.name + " was deleted while this pod held it: its " +
                            "devices (" + joinNames(last.allocated) +
                            ") stay with the pod until it ends, but a container created again "
                            "gets none"});
  }
  return p;
}

std::string statusFingerprint(const ExtendedResourceClaim& c) {
  std::string s = toString(c.phase) + ('\n' + c.nodeName);
  for (const auto& ref : c.holders()) {
    s += '\n' + ref.name + '/' + ref.uid;
  }
  for (const auto& name : c.allocated) {
    s += '\n' + name;
  }
  for (const auto& name : c.lost) {
    s += "\n-" + name;
  }
  return s + '\n' + c.reason + '\n' + c.message + '\n' + std::to_string(c.bindRewrites);
}

}  // namespace ker

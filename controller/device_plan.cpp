#include "controller/device_plan.h"

#include <algorithm>

#include "model/device_transitions.h"
#include "model/objects.h"

namespace ker {

namespace {

Plan rebind(const ExtendedResource& d, const DeviceInputs& in, const ExtendedResourceClaim& c) {
  Plan p;
  if (!in.rebindClaimRead) {
    p.verify = action::VerifyLive{LiveRead::kRebindClaim, {}, objectKey(c.meta.ns, c.meta.name)};
    return p;
  }
  // Released meanwhile (or replaced): the claim's own event brings the device back here.
  const ExtendedResourceClaim* live = in.rebindClaimLive;
  if (!live || live->meta.uid != c.meta.uid || live->holders().empty()) {
    return p;
  }
  const auto held = live->heldDevices();
  if (std::find(held.begin(), held.end(), d.meta.name) == held.end()) {
    return p;
  }
  ExtendedResource next = d;
  p.refused = rebindDevice(next, ClaimRef{c.meta.ns, c.meta.name, c.meta.uid}, live->allocation,
                           live->holders(),
                           "claim " + objectKey(c.meta.ns, c.meta.name) +
                               " still lists a device of this name for its pod");
  if (!p.refused.ok()) {
    return p;
  }
  p.write = statusUpdate(next, in.now);
  p.change = Change::kDeviceRebound;
  p.why = next.message;
  return p;
}

Plan planStatus(const DeviceInputs& in) {
  const ExtendedResource& d = *in.view.device;
  // An invalid device is marked and never repaired: its status cannot be trusted either.
  if (auto mark = planInvalidMark(d, in.now)) {
    return std::move(*mark);
  }
  if (!d.invalid.empty()) {
    return {};
  }
  const Decision decision = decideDevice(in.view);
  Plan p;
  p.suspectSince = decision.suspectSince;
  if (const auto* verify = std::get_if<action::VerifyLive>(&decision.action)) {
    p.verify = *verify;
  } else if (const auto* wait = std::get_if<action::WaitGrace>(&decision.action)) {
    p.requeueAfter = wait->remaining;
  } else if (const auto* held = std::get_if<action::AwaitHolders>(&decision.action)) {
    p.requeueAfter = held->recheck;
  } else if (const auto* free = std::get_if<action::FreeDevice>(&decision.action)) {
    ExtendedResource next = d;
    if (p.refused = freeDevice(next, free->message, free->releasedFrom); p.refused.ok()) {
      p.write = statusUpdate(std::move(next), in.now);
      p.change = Change::kDeviceFreed;
      p.why = free->message;
    }
  } else if (const auto* back = std::get_if<action::RebindDevice>(&decision.action)) {
    Plan r = rebind(d, in, *back->claim);
    r.suspectSince = decision.suspectSince;
    return r;
  } else if (std::holds_alternative<action::InitDeviceStatus>(decision.action)) {
    ExtendedResource next = d;
    if (p.refused = initializeDevice(next); p.refused.ok()) {
      p.write = statusUpdate(std::move(next), in.now);
      p.change = Change::kDeviceInitialized;
    }
  } else if (const auto* park = std::get_if<action::ParkDevice>(&decision.action)) {
    ExtendedResource next = d;
    if (p.refused = parkDeviceOffNode(next, park->message); p.refused.ok()) {
      p.write = statusUpdate(std::move(next), in.now);
      p.change = Change::kDeviceParked;
      p.why = park->message;
    }
  } else if (std::holds_alternative<action::UnparkDevice>(decision.action)) {
    ExtendedResource next = d;
    if (p.refused = unparkDevice(next); p.refused.ok()) {
      p.write = statusUpdate(std::move(next), in.now);
      p.change = Change::kDeviceUnparked;
    }
  }
  return p;
}

// The device stays while its claim holds it: the event names the claim and the pods holding it
// (as far as the cache knows them).
PlannedEvent deletionWaitEvent(const ExtendedResource& d, const ExtendedResourceClaim* c) {
  const std::string claim =
      d.claimRef ? objectKey(d.claimRef->ns, d.claimRef->name) : std::string("<none>");
  const bool known = d.claimRef && c && c->meta.uid == d.claimRef->uid && !c->holders().empty();
  const std::string pods =
      !known ? std::string()
             : (c->holders().size() > 1 ? " (pods " : " (pod ") + c->holderNames() + ")";
  return {referenceTo(d), EventType::kNormal, toString(Reason::kDeletionWaiting),
          "the device is deleted once claim " + claim + pods +
              " is released (its pods finish or are deleted): until then it stays with that "
              "claim"};
}

}  // namespace

Plan planDevice(const DeviceInputs& in) {
  Plan p = planStatus(in);
  const ExtendedResource& d = *in.view.device;
  planProtection(p, resources::kExtendedResources, d.meta, kDeviceProtectionFinalizer,
                 deviceInUse(d, in.view.claim), in.protect);
  if (in.protect) {
    // An invalid device's status is never written but for its mark.
    planDeletionWait(
        p, d.meta, deviceInUse(d, in.view.claim), d.conditions, d.invalid.empty(),
        [&] { return statusUpdate(d, in.now); },
        [&](const StatusWrite&) { return deletionWaitEvent(d, in.view.claim); });
  }
  return p;
}

std::string statusFingerprint(const ExtendedResource& d) {
  std::string s = toString(d.phase);
  if (d.claimRef) {
    s += '\n' + d.claimRef->ns + '/' + d.claimRef->name + '/' + d.claimRef->uid;
  }
  return s + '\n' + d.reason + '\n' + d.message;
}

}  // namespace ker

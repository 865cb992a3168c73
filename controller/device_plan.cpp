#include "controller/device_plan.h"

#include <algorithm>

namespace ker {

namespace {

StatusWrite updateOf(const ExtendedResource& next) {
  return {&resources::kExtendedResources, "", next.meta.name, next.toJson(), false};
}

StatusWrite patchOf(const ExtendedResource& d, nlohmann::json status) {
  return {
      &resources::kExtendedResources,
      "",
      d.meta.name,
      {{"metadata", {{"resourceVersion", d.meta.resourceVersion}}}, {"status", std::move(status)}},
      true};
}

Plan rebind(const ExtendedResource& d, const DeviceInputs& in, const ExtendedResourceClaim& c) {
  Plan p;
  if (!in.rebindClaimRead) {
    p.verify = action::VerifyLive{LiveRead::kRebindClaim, {}, objectKey(c.meta.ns, c.meta.name)};
    return p;
  }
  // Released meanwhile (or replaced): the claim's own event brings the device back here.
  const ExtendedResourceClaim* live = in.rebindClaimLive;
  if (!live || live->meta.uid != c.meta.uid || !live->podRef) {
    return p;
  }
  const auto held = live->heldDevices();
  if (std::find(held.begin(), held.end(), d.meta.name) == held.end()) {
    return p;
  }
  ExtendedResource next = d;
  next.phase = DevicePhase::kBound;
  next.claimRef = ClaimRef{c.meta.ns, c.meta.name, c.meta.uid};
  next.releasedFrom.reset();
  next.reason = toString(StatusReason::kRebound);
  next.message = "claim " + objectKey(c.meta.ns, c.meta.name) +
                 " still lists a device of this name for its pod";
  p.write = updateOf(next);
  p.change = Change::kDeviceRebound;
  p.why = next.message;
  return p;
}

Plan planStatus(const DeviceInputs& in) {
  const ExtendedResource& d = *in.view.device;
  const bool markedInvalid =
      parseStatusReason(d.reason) == StatusReason::kInvalid && d.message == d.invalid;
  if (!d.invalid.empty()) {
    Plan p;
    if (!markedInvalid || !d.phaseWritten) {
      nlohmann::json status = {{"reason", toString(StatusReason::kInvalid)},
                               {"message", d.invalid}};
      if (!d.phaseWritten) {
        status["phase"] = toString(DevicePhase::kAvailable);
      }
      p.write = patchOf(d, std::move(status));
      p.change = Change::kMarkedInvalid;
      p.why = d.invalid;
    }
    return p;
  }
  if (parseStatusReason(d.reason) == StatusReason::kInvalid) {
    Plan p;
    p.write = patchOf(d, {{"reason", nullptr}, {"message", nullptr}});
    p.change = Change::kValidAgain;
    return p;
  }
  const Decision decision = decideDevice(in.view);
  Plan p;
  p.suspectSince = decision.suspectSince;
  if (const auto* verify = std::get_if<action::VerifyLive>(&decision.action)) {
    p.verify = *verify;
  } else if (const auto* wait = std::get_if<action::WaitGrace>(&decision.action)) {
    p.requeueAfter = wait->remaining;
  } else if (const auto* free = std::get_if<action::FreeDevice>(&decision.action)) {
    p.write = updateOf(freed(d, {StatusReason::kOrphaned, free->message, std::nullopt}));
    p.change = Change::kDeviceFreed;
    p.why = free->message;
  } else if (const auto* back = std::get_if<action::RebindDevice>(&decision.action)) {
    Plan r = rebind(d, in, *back->claim);
    r.suspectSince = decision.suspectSince;
    return r;
  } else if (std::holds_alternative<action::InitDeviceStatus>(decision.action)) {
    p.write = updateOf(freed(d, {}));
    p.change = Change::kDeviceInitialized;
  }
  return p;
}

}  // namespace

Plan planDevice(const DeviceInputs& in) {
  Plan p = planStatus(in);
  const ExtendedResource& d = *in.view.device;
  // One write per reconcile, each conditional on the version seen: the finalizer waits for
  // the next one.
  if (in.protect && !p.write && !p.verify) {
    if (const auto on = protectionChange(d.meta, kDeviceProtectionFinalizer, deviceInUse(d))) {
      p.write =
          protectionWrite(resources::kExtendedResources, d.meta, kDeviceProtectionFinalizer, *on);
      p.change = *on ? Change::kProtected : Change::kUnprotected;
    }
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

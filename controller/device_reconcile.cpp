// The device's reconcile: get it, plan (reading live what the plan asks), apply, remember.
#include <algorithm>

#include "controller/device_plan.h"
#include "controller/reconciler.h"

namespace ker {

ReconcileResult Reconciler::reconcileDevice(const std::string& name) {
  return guarded([&] {
    const CachedDevice device = caches_.device(name);
    if (!device) {
      memory_.forgetDevice(name);
      caches_.forgetDevice(name);
      return ReconcileResult{};
    }
    DeviceInputs in;
    in.protect = opts_.protectInUse;
    in.now = opts_.wallClock();
    DeviceView& v = in.view;
    v.device = device.get();
    v.now = opts_.clock();
    v.grace = std::min(opts_.orphanGrace, opts_.deviceOrphanGrace);
    v.rebindDelay = std::min(opts_.rebindDelay, v.grace);
    v.freedWriteDelay = opts_.freedDeviceWriteDelay;
    const std::string fingerprint = statusFingerprint(*device);
    v.suspectSince = memory_.deviceSuspectSince(name, fingerprint);
    CachedClaim claim;
    if (device->claimRef) {
      claim = caches_.claim(objectKey(device->claimRef->ns, device->claimRef->name));
    }
    v.claim = claim.get();
    v.holderRecheck = opts_.holderRecheck;
    if (const std::string node = device->labelledNode(); !node.empty()) {
      v.nodeRegistered = caches_.nodeRegistered(node);
    }
    const std::string holdersNs = device->claimRef ? device->claimRef->ns : std::string();
    Holders holders = cachedHolders(holdersNs, device->holders);
    v.holders = holders.view;
    const std::vector<CachedClaim> listing = caches_.claimsListing(name);
    for (const auto& c : listing) {
      v.listedBy.push_back(c.get());
    }
    if (const auto version = memory_.releasedVersion(name)) {
      // Unchanged since the failed free: any later write, the free's own whose reply was lost
      // or a bind that took the device again for the reused claim, ends the shortcut.
      v.releasedWithClaim = device->phase == DevicePhase::kBound && !version->empty() &&
                            *version == device->meta.resourceVersion;
      if (!v.releasedWithClaim) {
        memory_.forgetReleased(name);
      }
    }

    CachedClaim rebindClaim;
    const Plan plan = planWithLiveReads(
        [&] { return planDevice(in); },
        [&](const action::VerifyLive& verify) {
          if (verify.what == LiveRead::kRebindClaim) {
            const size_t slash = verify.claimKey.find('/');
            rebindClaim = liveGet<ExtendedResourceClaim>(verify.claimKey.substr(0, slash),
                                                         verify.claimKey.substr(slash + 1));
            in.rebindClaimRead = true;
            in.rebindClaimLive = rebindClaim.get();
          } else if (verify.what == LiveRead::kHolderPod && device->claimRef) {
            readHoldersLive(holdersNs, device->holders, verify.holders, holders);
            v.holders = holders.view;
          } else if (device->claimRef) {
            claim = liveGet<ExtendedResourceClaim>(device->claimRef->ns, device->claimRef->name);
            v.claim = claim.get();
            v.claimLive = true;
          } else {
            return false;
          }
          return true;
        });
    memory_.setDeviceSuspect(name, plan.suspectSince, fingerprint);
    if (plan.verify) {
      return unsettled();
    }
    assumeWritten(executor_.apply(plan, [&](const std::string& n) { return caches_.device(n); }));
    if (plan.change == Change::kDeviceFreed) {
      memory_.forgetReleased(name);
    }
    ReconcileResult r;
    r.requeueAfter = plan.requeueAfter;
    return r;
  });
}

}  // namespace ker

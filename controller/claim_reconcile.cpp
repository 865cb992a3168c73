// The claim's reconcile: get it, plan (reading live what the plan asks), apply, remember.
#include "controller/claim_plan.h"
#include "controller/reconciler.h"

namespace ker {

ReconcileResult Reconciler::reconcileClaim(const std::string& key) {
  return guarded([&] {
    const CachedClaim claim = caches_.claim(key);
    if (!claim) {
      memory_.forgetClaim(key);
      caches_.forgetClaim(key);
      if (const CachedClaim last = caches_.takeDeletedClaim(key)) {
        for (const auto& ref : last->holders()) {
          const CachedPod holder = caches_.pod(objectKey(last->meta.ns, ref.name));
          executor_.record(planDeletedClaim(*last, holder.get()).events);
        }
      }
      return ReconcileResult{};
    }
    return syncClaim(key, claim);
  });
}

ReconcileResult Reconciler::syncClaim(const std::string& key, const CachedClaim& claim) {
  ClaimInputs in;
  in.protect = opts_.protectInUse;
  in.now = opts_.wallClock();
  ClaimView& v = in.view;
  v.claim = claim.get();
  v.now = opts_.clock();
  v.grace = opts_.orphanGrace;
  const std::string fingerprint = statusFingerprint(*claim);
  v.suspectSince = memory_.claimSuspectSince(key, fingerprint);
  const std::vector<PodRef> refs = claim->holders();
  Holders holders = cachedHolders(claim->meta.ns, refs);
  v.holders = holders.view;
  std::vector<CachedDevice> keep;  // owns what v.devices points to
  for (const auto& name : claim->listedDevices()) {
    keep.push_back(caches_.device(name));
    v.devices[name] = keep.back().get();
  }

  const Plan plan =
      planWithLiveReads([&] { return planClaim(in); },
                        [&](const action::VerifyLive& verify) {
                          if (verify.what == LiveRead::kHolderPod && !refs.empty()) {
                            readHoldersLive(claim->meta.ns, refs, verify.holders, holders);
                            v.holders = holders.view;
                          } else {
                            for (const auto& name : verify.devices) {
                              keep.push_back(liveGet<ExtendedResource>("", name));
                              v.devices[name] = keep.back().get();
                            }
                            v.devicesLive = true;
                          }
                          return true;
                        });
  memory_.setClaimSuspect(key, plan.suspectSince, fingerprint);
  if (plan.verify) {
    return unsettled();
  }

  // Should a release stop after its claim write (a lost reply, leadership lost), the devices
  // it left Bound to a claim that may no longer list them are freed at once rather than after
  // the grace. A device written since (freed, or taken again) no longer matches the version
  // remembered here.
  std::map<std::string, std::string> versions;
  if (plan.frees) {
    for (const auto& name : plan.frees->names) {
      if (const CachedDevice cached = caches_.device(name); cached && isBoundTo(*cached, *claim)) {
        versions[name] = cached->meta.resourceVersion;
      }
    }
  }
  Executor::Outcome out;
  try {
    out = executor_.apply(plan, [&](const std::string& n) { return caches_.device(n); });
  } catch (...) {
    for (auto& [name, version] : versions) {
      memory_.rememberReleased(name, std::move(version));
    }
    throw;
  }
  assumeWritten(out);
  ReconcileResult r;
  r.requeueAfter = plan.requeueAfter;
  if (plan.frees) {
    for (const auto& name : plan.frees->names) {
      if (auto failed = out.failed.find(name); failed != out.failed.end()) {
        memory_.rememberReleased(name, failed->second);
        r.devicesToRetry.push_back(name);
      } else {
        memory_.forgetReleased(name);
      }
    }
  }
  return r;
}

}  // namespace ker

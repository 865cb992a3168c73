#include "controller/reconciler.h"

#include <algorithm>

#include "common/api_error.h"
#include "common/logging.h"
#include "controller/claim_plan.h"
#include "controller/device_plan.h"
#include "controller/pod_plan.h"
#include "controller/template_claims_plan.h"
#include "model/objects.h"
#include "model/served_pods.h"

namespace ker {

namespace {

using Result = ReconcileResult::Status;

// Each decision asks for at most this many live reads before it must settle.
constexpr int kMaxLiveReads = 2;

ReconcileResult unsettled() {
  ReconcileResult r;
  r.status = Result::kRetry;
  r.error = Status::unavailable("the live reads did not settle the decision");
  return r;
}

}  // namespace

Reconciler::Reconciler(ApiClient& api, ControllerCaches& caches, Executor& executor,
                       ControllerMetrics* metrics, ReconcilerOptions opts)
    : api_(api), caches_(caches), executor_(executor), metrics_(metrics), opts_(std::move(opts)) {}

template <class F>
ReconcileResult Reconciler::guarded(F&& body) {
  ReconcileResult r;
  try {
    return body();
  } catch (const NotLeading&) {
    r.status = Result::kAborted;
  } catch (const std::exception& e) {
    // The controller's one boundary with the API client's exceptions: an ApiError by its
    // kind, any other fault as kInternal.
    Status failed = statusFrom(e);
    // The object written was deleted meanwhile: its delete event queues it again, and the
    // reconcile then finds nothing to do.
    if (classify(failed) == Failure::kGone) {
      if (log::v(2)) {
        log::info("reconciled object is gone", {{"error", failed.message()}});
      }
      return r;
    }
    r.status = Result::kRetry;
    r.error = std::move(failed);
  }
  return r;
}

Reconciler::Holders Reconciler::cachedHolders(const std::string& ns,
                                              const std::vector<PodRef>& refs) {
  Holders h;
  for (const auto& ref : refs) {
    h.pods.push_back(caches_.pod(objectKey(ns, ref.name)));
    const auto& pod = h.pods.back();
    h.view.push_back({pod.get(), !ref.uid.empty() && (!pod || pod->meta.uid != ref.uid) &&
                                     caches_.podDeleted(ref.uid)});
  }
  return h;
}

void Reconciler::readHoldersLive(const std::string& ns, const std::vector<PodRef>& refs,
                                 const std::vector<std::string>& names, Holders& holders) {
  for (size_t i = 0; i < refs.size(); ++i) {
    if (holders.view[i].live ||
        std::find(names.begin(), names.end(), refs[i].name) == names.end()) {
      continue;
    }
    holders.pods[i] = liveGet<WatchedPod>(ns, refs[i].name);
    holders.view[i] = {holders.pods[i].get(), true};
  }
}

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

  Plan plan = planClaim(in);
  for (int reads = 0; reads < kMaxLiveReads && plan.verify; ++reads) {
    if (plan.verify->what == LiveRead::kHolderPod && !refs.empty()) {
      readHoldersLive(claim->meta.ns, refs, plan.verify->holders, holders);
      v.holders = holders.view;
    } else {
      for (const auto& name : plan.verify->devices) {
        keep.push_back(liveGet<ExtendedResource>("", name));
        v.devices[name] = keep.back().get();
      }
      v.devicesLive = true;
    }
    plan = planClaim(in);
  }
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

    Plan plan = planDevice(in);
    CachedClaim rebindClaim;
    for (int reads = 0; reads < kMaxLiveReads && plan.verify; ++reads) {
      if (plan.verify->what == LiveRead::kRebindClaim) {
        const size_t slash = plan.verify->claimKey.find('/');
        rebindClaim = liveGet<ExtendedResourceClaim>(plan.verify->claimKey.substr(0, slash),
                                                     plan.verify->claimKey.substr(slash + 1));
        in.rebindClaimRead = true;
        in.rebindClaimLive = rebindClaim.get();
      } else if (plan.verify->what == LiveRead::kHolderPod && device->claimRef) {
        readHoldersLive(holdersNs, device->holders, plan.verify->holders, holders);
        v.holders = holders.view;
      } else if (device->claimRef) {
        claim = liveGet<ExtendedResourceClaim>(device->claimRef->ns, device->claimRef->name);
        v.claim = claim.get();
        v.claimLive = true;
      } else {
        break;
      }
      plan = planDevice(in);
    }
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

ReconcileResult Reconciler::reconcilePod(const std::string& key) {
  return guarded([&] {
    const CachedPod pod = caches_.pod(key);
    if (!pod) {
      memory_.forgetPod(key);
      caches_.forgetPod(key);
      return ReconcileResult{};
    }
    const PodPlan plan = planPod(*pod, memory_.warnedPodProblem(key, pod->meta.uid));
    // While writes are gated the warning is left for a later update.
    if (!plan.warning || executor_.record({*plan.warning})) {
      memory_.setWarnedPodProblem(key, pod->meta.uid, plan.problem);
    }
    reconcileTemplateClaims(*pod);
    return ReconcileResult{};
  });
}

void Reconciler::reconcileTemplateClaims(const Pod& pod) {
  const std::string podKey = objectKey(pod.meta.ns, pod.meta.name);
  TemplateClaimsInputs in;
  in.pod = &pod;
  in.warned = memory_.warnedTemplateProblem(podKey, pod.meta.uid);
  in.protect = opts_.protectInUse;
  std::vector<CachedTemplate> keepTemplates;  // own what in.templates points to
  for (const auto& entry : pod.claimTemplates) {
    if (!in.templates.count(entry.templateName)) {
      keepTemplates.push_back(caches_.claimTemplate(objectKey(pod.meta.ns, entry.templateName)));
      in.templates[entry.templateName] = keepTemplates.back().get();
    }
  }
  // Only pods of the profile get claims for their requests: under another scheduler nothing
  // would allocate them (the node agent refuses such a pod's containers instead).
  const bool servesRequests = !pod.extendedRequests.empty() && servedPod(pod, opts_.schedulerName);
  if (servesRequests || !pod.claimTemplates.empty()) {  // most pods need no class table
    in.classes = ClassTable(caches_.classes());
  }
  if (servesRequests) {
    in.classRequests = classRequests(pod.extendedRequests, in.classes);
  }
  std::vector<CachedClaim> keepClaims;  // own what in.existing points to
  auto learn = [&](const std::string& name, CachedClaim claim) {
    keepClaims.push_back(claim);
    in.existing[name] = claim.get();
  };
  TemplateClaimsPlan plan = planTemplateClaims(in);
  // The lookups, the creates (and a live read for each name found taken), then the record: each
  // step's result is the next plan's input.
  for (int step = 0; step < 3; ++step) {
    if (!plan.lookups.empty()) {
      for (const auto& name : plan.lookups) {
        learn(name, caches_.claim(objectKey(pod.meta.ns, name)));
      }
    } else if (!plan.creates.empty()) {
      for (const auto& create : plan.creates) {
        nlohmann::json created;
        if (unlessAlreadyExists([&] { created = executor_.createClaim(create.claim); })) {
          learn(create.name, std::make_shared<const ExtendedResourceClaim>(
                                 ExtendedResourceClaim::fromJson(created)));
          continue;
        }
        learn(create.name, liveGet<ExtendedResourceClaim>(pod.meta.ns, create.name));
      }
    } else {
      break;
    }
    plan = planTemplateClaims(in);
  }
  // While writes are gated the warning is left for a later update.
  if (plan.warnings.empty() || executor_.record(plan.warnings)) {
    memory_.setWarnedTemplateProblem(podKey, pod.meta.uid, plan.problem);
  }
  if (!plan.lookups.empty() || !plan.creates.empty()) {
    throw std::runtime_error("the claims of the pod's template entries did not settle");
  }
  if (plan.recordPatch) {
    caches_.assume(executor_.patchPod(pod, *plan.recordPatch, plan.events));
  }
}

void Reconciler::assumeWritten(const Executor::Outcome& out) {
  caches_.assume(out.writtenClaim);
  caches_.assume(out.writtenDevice);
  for (const auto& device : out.freed) {
    caches_.assume(device);
  }
}

void Reconciler::requestNudge(const NudgeTarget& target) {
  memory_.triggerNudge(target, opts_.clock());
}

ReconcileResult Reconciler::nudge(const NudgeTarget& target) {
  return guarded([&] {
    NudgeView v;
    v.now = opts_.clock();
    const auto triggeredAt = memory_.nudgeTriggeredAt(target);
    if (!triggeredAt) {
      return ReconcileResult{};
    }
    v.triggeredAt = *triggeredAt;
    v.lastNudged = memory_.recentNudges(v.now);
    if (target.kind == NudgeTarget::Kind::kClaim) {
      v.claimKey = target.name;
    } else {
      v.rawResourceName = target.name;
    }
    v.schedulerName = opts_.schedulerName;
    v.minInterval = opts_.nudgeMinInterval;
    v.limit = opts_.nudgeLimit;
    const auto pods = caches_.pods();
    std::vector<CachedClaim> keep;  // owns what v.claims points to
    for (const auto& p : pods) {
      // Only pods kube-scheduler parked are candidates; their claims are all the view needs.
      if (!p->unschedulable) {
        continue;
      }
      v.pods.push_back({p.get(), true});
      for (const auto& name : p->claims) {
        const std::string key = objectKey(p->meta.ns, name);
        if (!v.claims.count(key)) {
          keep.push_back(caches_.claim(key));
          v.claims[key] = keep.back().get();
        }
      }
    }
    const NudgePlan plan = podsToNudge(v);
    for (const Pod* pod : plan.pods) {
      executor_.nudgePod(*pod);
      memory_.setNudged(pod->meta.uid, v.now);
    }
    ReconcileResult r;
    r.requeueAfter = plan.again;
    return r;
  });
}

}  // namespace ker

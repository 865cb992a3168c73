#include "controller/reconciler.h"

#include "common/api_error.h"
#include "common/logging.h"

namespace ker {

namespace {

using Status = ReconcileResult::Status;

// How long a nudge is remembered: far longer than any nudge run that could still consult it.
constexpr auto kNudgeMemory = std::chrono::minutes(5);
constexpr std::string_view kClaimTarget = "claim:";  // before a claim's nudge target

// The status a bind writes, as one string: a change to it is a sign of life that starts the
// grace again. Edits by others (labels, properties, spec) leave it alone, so a device
// publisher rewriting its devices cannot keep an orphan from being repaired.
std::string statusOf(const ExtendedResource& d) {
  std::string s = toString(d.phase);
  if (d.claimRef) {
    s += '\n' + d.claimRef->ns + '/' + d.claimRef->name + '/' + d.claimRef->uid;
  }
  return s + '\n' + d.reason + '\n' + d.message;
}

std::string statusOf(const ExtendedResourceClaim& c) {
  std::string s = toString(c.phase) + ('\n' + c.nodeName);
  if (c.podRef) {
    s += '\n' + c.podRef->name + '/' + c.podRef->uid;
  }
  for (const auto& name : c.allocated) {
    s += '\n' + name;
  }
  for (const auto& name : c.lost) {
    s += "\n-" + name;
  }
  return s + '\n' + c.reason + '\n' + c.message;
}

}  // namespace

Reconciler::Reconciler(ApiClient& api, const ControllerCaches& caches, Executor& executor,
                       ControllerMetrics* metrics, ReconcilerOptions opts)
    : api_(api), caches_(caches), executor_(executor), metrics_(metrics), opts_(std::move(opts)) {}

template <class F>
ReconcileResult Reconciler::guarded(F&& body) {
  ReconcileResult r;
  try {
    return body();
  } catch (const NotLeading&) {
    r.status = Status::kAborted;
  } catch (const ApiError& e) {
    // The object written was deleted meanwhile: its delete event queues it again, and the
    // reconcile then finds nothing to do.
    if (e.isNotFound()) {
      if (log::v(2)) {
        log::info("reconciled object is gone", {{"error", e.what()}});
      }
      return r;
    }
    r.status = Status::kRetry;
    r.conflict = e.isConflict();
    r.error = e.what();
  } catch (const std::exception& e) {
    r.status = Status::kRetry;
    r.error = e.what();
  }
  return r;
}

std::optional<SteadyTime> Reconciler::suspect(const Suspicions& m, const std::string& key,
                                              const std::string& status) const {
  std::lock_guard lock(mu_);
  auto it = m.find(key);
  if (it == m.end() || it->second.status != status) {
    return std::nullopt;
  }
  return it->second.since;
}

void Reconciler::setSuspect(Suspicions& m, const std::string& key, std::optional<SteadyTime> since,
                            const std::string& status) {
  std::lock_guard lock(mu_);
  if (since) {
    m[key] = Suspicion{*since, status};
  } else {
    m.erase(key);
  }
}

std::optional<nlohmann::json> Reconciler::liveGet(const Resource& res, const std::string& ns,
                                                  const std::string& name) {
  if (metrics_) {
    metrics_->liveReads.inc();
  }
  try {
    return api_.get(res, ns, name);
  } catch (const ApiError& e) {
    if (e.isNotFound()) {
      return std::nullopt;
    }
    throw;
  }
}

void Reconciler::forgetClaim(const std::string& key) {
  std::lock_guard lock(mu_);
  claimSuspects_.erase(key);
}

void Reconciler::forgetDevice(const std::string& name) {
  std::lock_guard lock(mu_);
  deviceSuspects_.erase(name);
  releasedDevices_.erase(name);
}

namespace {

template <class Object>
bool markedInvalid(const Object& obj) {
  return obj.reason == kInvalidReason && obj.message == obj.invalid;
}

}  // namespace

size_t Reconciler::remembered() const {
  std::lock_guard lock(mu_);
  return claimSuspects_.size() + deviceSuspects_.size() + releasedDevices_.size();
}

ReconcileResult Reconciler::reconcileClaim(const std::string& key) {
  return guarded([&] {
    const CachedClaim claim = caches_.claim(key);
    if (!claim) {
      forgetClaim(key);
      return ReconcileResult{};
    }
    // Marked first (the write brings it back). One whose status cannot be trusted to say
    // what it holds is left at that; one invalid in its spec alone is still released when
    // its pod goes, or it would keep its devices until someone mended the spec.
    if (!claim->invalid.empty()) {
      if (!markedInvalid(*claim) || !claim->phaseWritten) {
        executor_.markClaimInvalid(*claim);
        return ReconcileResult{};
      }
      if (!claim->statusReadable) {
        return ReconcileResult{};
      }
    } else if (claim->reason == kInvalidReason) {
      executor_.clearClaimInvalid(*claim);
      return ReconcileResult{};  // the write brings it back with the status as it is now
    }
    ClaimView v;
    v.claim = claim.get();
    v.now = opts_.clock();
    v.grace = opts_.orphanGrace;
    const std::string status = statusOf(*claim);
    v.suspectSince = suspect(claimSuspects_, key, status);
    std::shared_ptr<const Pod> holder;
    if (claim->podRef) {
      holder = caches_.pod(objectKey(claim->meta.ns, claim->podRef->name));
      const std::string& uid = claim->podRef->uid;
      v.holderLive =
          !uid.empty() && (!holder || holder->meta.uid != uid) && caches_.podDeleted(uid);
    }
    v.holder = holder.get();
    std::vector<CachedDevice> keep;  // owns what v.devices points to
    for (const auto& name : claim->listedDevices()) {
      keep.push_back(caches_.device(name));
      v.devices[name] = keep.back().get();
    }

    Decision d = decideClaim(v);
    // At most one read of the holder, then one of the devices.
    for (int reads = 0; reads < 2 && std::holds_alternative<action::VerifyLive>(d.action);
         ++reads) {
      const auto& verify = std::get<action::VerifyLive>(d.action);
      if (verify.what == LiveRead::kHolderPod && claim->podRef) {
        auto live = liveGet(resources::kPods, claim->meta.ns, claim->podRef->name);
        holder = live ? std::make_shared<const WatchedPod>(WatchedPod::fromJson(*live)) : nullptr;
        v.holder = holder.get();
        v.holderLive = true;
      } else {
        for (const auto& name : verify.devices) {
          auto live = liveGet(resources::kExtendedResources, "", name);
          keep.push_back(
              live ? std::make_shared<const ExtendedResource>(ExtendedResource::fromJson(*live))
                   : nullptr);
          v.devices[name] = keep.back().get();
        }
        v.devicesLive = true;
      }
      d = decideClaim(v);
    }
    setSuspect(claimSuspects_, key, d.suspectSince, status);

    ReconcileResult r;
    if (const auto* wait = std::get_if<action::WaitGrace>(&d.action)) {
      r.requeueAfter = wait->remaining;
    } else if (const auto* release = std::get_if<action::ReleaseClaim>(&d.action)) {
      // Should the release stop after its claim write (a lost reply, leadership lost), the
      // devices it left Bound to a claim that may no longer list them are freed at once
      // rather than after the grace. A device written since (freed, or taken again) no
      // longer matches the version recorded here.
      std::map<std::string, std::string> versions;
      const std::vector<std::string> listed = claim->listedDevices();
      for (const auto& name : listed) {
        if (const CachedDevice cached = caches_.device(name);
            cached && isBoundTo(*cached, *claim)) {
          versions[name] = cached->meta.resourceVersion;
        }
      }
      Executor::ReleaseOutcome out;
      try {
        out = executor_.releaseClaim(*claim, *release,
                                     [&](const std::string& n) { return caches_.device(n); });
      } catch (...) {
        std::lock_guard lock(mu_);
        for (auto& [name, version] : versions) {
          releasedDevices_[name] = std::move(version);
        }
        throw;
      }
      std::lock_guard lock(mu_);
      for (const auto& name : listed) {
        if (auto failed = out.failed.find(name); failed != out.failed.end()) {
          releasedDevices_[name] = failed->second;
          r.devicesToRetry.push_back(name);
        } else {
          releasedDevices_.erase(name);
        }
      }
    } else if (const auto* lost = std::get_if<action::MarkClaimLost>(&d.action)) {
      executor_.markClaimLost(*claim, *lost);
    } else if (const auto* recover = std::get_if<action::RecoverClaim>(&d.action)) {
      executor_.recoverClaim(*claim, *recover);
    } else if (std::holds_alternative<action::InitClaimStatus>(d.action)) {
      executor_.initClaimStatus(*claim);
    } else if (std::holds_alternative<action::VerifyLive>(d.action)) {
      r.status = Status::kRetry;
      r.error = "the live reads did not settle the decision";
    }
    return r;
  });
}

ReconcileResult Reconciler::reconcileDevice(const std::string& name) {
  return guarded([&] {
    const CachedDevice device = caches_.device(name);
    if (!device) {
      forgetDevice(name);
      return ReconcileResult{};
    }
    // Never repaired: its status cannot be trusted either.
    if (!device->invalid.empty()) {
      if (!markedInvalid(*device) || !device->phaseWritten) {
        executor_.markDeviceInvalid(*device);
      }
      return ReconcileResult{};
    }
    if (device->reason == kInvalidReason) {
      executor_.clearDeviceInvalid(*device);
      return ReconcileResult{};
    }
    DeviceView v;
    v.device = device.get();
    v.now = opts_.clock();
    v.grace = std::min(opts_.orphanGrace, opts_.deviceOrphanGrace);
    const std::string status = statusOf(*device);
    v.suspectSince = suspect(deviceSuspects_, name, status);
    CachedClaim claim;
    if (device->claimRef) {
      claim = caches_.claim(objectKey(device->claimRef->ns, device->claimRef->name));
    }
    v.claim = claim.get();
    const std::vector<CachedClaim> listing = caches_.claimsListing(name);
    for (const auto& c : listing) {
      v.listedBy.push_back(c.get());
    }
    {
      std::lock_guard lock(mu_);
      auto it = releasedDevices_.find(name);
      if (it != releasedDevices_.end()) {
        // Unchanged since the failed free: any later write, the free's own whose reply was
        // lost or a bind that took the device again for the reused claim, ends the shortcut.
        v.releasedWithClaim = device->phase == DevicePhase::kBound && !it->second.empty() &&
                              it->second == device->meta.resourceVersion;
        if (!v.releasedWithClaim) {
          releasedDevices_.erase(it);
        }
      }
    }

    Decision d = decideDevice(v);
    if (std::holds_alternative<action::VerifyLive>(d.action) && device->claimRef) {
      auto live =
          liveGet(resources::kExtendedResourceClaims, device->claimRef->ns, device->claimRef->name);
      claim = live ? std::make_shared<const ExtendedResourceClaim>(
                         ExtendedResourceClaim::fromJson(*live))
                   : nullptr;
      v.claim = claim.get();
      v.claimLive = true;
      d = decideDevice(v);
    }
    setSuspect(deviceSuspects_, name, d.suspectSince, status);

    ReconcileResult r;
    if (const auto* wait = std::get_if<action::WaitGrace>(&d.action)) {
      r.requeueAfter = wait->remaining;
    } else if (const auto* free = std::get_if<action::FreeDevice>(&d.action)) {
      executor_.freeDevice(*device, *free);
      {
        std::lock_guard lock(mu_);
        releasedDevices_.erase(name);
      }
    } else if (const auto* rebind = std::get_if<action::RebindDevice>(&d.action)) {
      // When the claim turns out to be released, its event brings the device back here.
      executor_.rebindDevice(*device, *rebind->claim);
    } else if (std::holds_alternative<action::InitDeviceStatus>(d.action)) {
      executor_.initDeviceStatus(*device);
    } else if (std::holds_alternative<action::VerifyLive>(d.action)) {
      r.status = Status::kRetry;
      r.error = "the live read did not settle the decision";
    }
    return r;
  });
}

std::string claimNudgeTarget(const std::string& claimKey) {
  return std::string(kClaimTarget) + claimKey;
}

void Reconciler::requestNudge(const std::string& target) {
  const SteadyTime now = opts_.clock();
  std::lock_guard lock(mu_);
  // Claims come and go, resources stay: a claim's trigger is forgotten once it decides
  // nothing any more, as pods nudged long ago are.
  std::erase_if(nudgeTriggered_, [&](const auto& e) {
    return e.first.starts_with(kClaimTarget) && now - e.second > kNudgeMemory;
  });
  nudgeTriggered_[target] = now;
}

ReconcileResult Reconciler::nudge(const std::string& target) {
  return guarded([&] {
    NudgeView v;
    v.now = opts_.clock();
    {
      std::lock_guard lock(mu_);
      auto trigger = nudgeTriggered_.find(target);
      if (trigger == nudgeTriggered_.end()) {
        return ReconcileResult{};
      }
      v.triggeredAt = trigger->second;
      // Older entries no longer defer anything; the latest trigger decides the rest.
      std::erase_if(lastNudged_, [&](const auto& e) { return v.now - e.second > kNudgeMemory; });
      v.lastNudged = lastNudged_;
    }
    if (target.starts_with(kClaimTarget)) {
      v.claimKey = target.substr(kClaimTarget.size());
    } else {
      v.rawResourceName = target;
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
      std::lock_guard lock(mu_);
      lastNudged_[pod->meta.uid] = v.now;
    }
    ReconcileResult r;
    r.requeueAfter = plan.again;
    return r;
  });
}

}  // namespace ker

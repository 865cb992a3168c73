#include "scheduler/binder.h"

#include <set>
#include <stdexcept>

#include "common/api_error.h"
#include "common/logging.h"
#include "common/objects.h"
#include "common/request_deadline.h"
#include "scheduler/claim_lookup.h"
#include "scheduler/planner.h"

namespace ker {

namespace {

using json = nlohmann::json;

ExtendedResourceClaim markClaimBound(ExtendedResourceClaim claim, const Pod& pod,
                                     const std::string& node, std::vector<std::string> devices) {
  claim.phase = ClaimPhase::kBound;
  claim.allocated = std::move(devices);
  claim.nodeName = node;
  claim.podRef = PodRef{pod.meta.name, pod.meta.uid};
  claim.bindRewrites = 0;
  claim.reason = "Bound";
  claim.message = "allocated to pod " + pod.meta.name + " on node " + node;
  return claim;
}

ExtendedResourceClaim markClaimPending(ExtendedResourceClaim claim) {
  claim.makePending();
  claim.reason.clear();
  claim.message.clear();
  return claim;
}

// A claim another call bound to the pod, as this call rewrites it before using it: the same
// allocation, its count of rewrites one up. The write is then a real change that moves the
// claim's resourceVersion, and its status never returns to an earlier form, which the
// controller would take for no sign of life.
ExtendedResourceClaim markClaimReused(ExtendedResourceClaim claim) {
  ++claim.bindRewrites;
  return claim;
}

ExtendedResource markDevice(ExtendedResource device, std::optional<ClaimRef> ref) {
  device.phase = ref ? DevicePhase::kBound : DevicePhase::kAvailable;
  device.claimRef = std::move(ref);
  device.reason.clear();
  device.message.clear();
  return device;
}

// Whether a bind may take the device: nobody holds it and nothing keeps it from use.
bool takeable(const ExtendedResource& d) {
  return d.phase == DevicePhase::kAvailable && !d.claimRef && d.invalid.empty() && !d.meta.deleting;
}

}  // namespace

std::string allocationAnnotation(
    const std::map<std::string, std::vector<const ExtendedResource*>>& byClaimName) {
  json out = json::object();
  for (const auto& [claim, devices] : byClaimName) {
    json list = json::array();
    for (const auto* d : devices) {
      list.push_back({{"name", d->meta.name},
                      {"deviceID", d->deviceID},
                      {"rawResourceName", d->rawResourceName}});
    }
    out[claim] = std::move(list);
  }
  return out.dump();
}

// What one attempt wrote, newest resourceVersions included, so undo can put it back.
struct Binder::Attempt {
  std::vector<ExtendedResource> devices;
  std::vector<ExtendedResourceClaim> claims;
  std::string podUid;
  std::string node;
  // A claim write that threw without a definite answer (transport error, timeout, 5xx): it
  // may still have been applied. With the devices it listed: another replica binding the same
  // pod may have bound the claim too, with other devices.
  const ExtendedResourceClaim* unconfirmedClaim = nullptr;
  std::vector<std::string> unconfirmedDevices;
  // Likewise a device write, with the UID of the claim it gave the device to.
  std::string unconfirmedDevice;
  std::string unconfirmedDeviceClaimUid;
  // UIDs of claims this attempt found already bound to the pod and rewrote: they stay so,
  // and an undo keeps their devices, even the ones it bound to them again.
  std::set<std::string> reusedClaims;
  std::chrono::steady_clock::time_point deadline;
};

// The bind ran out of time before a write; never retried within the call.
struct DeadlinePassed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

Binder::Binder(ApiClient& api, DeviceIndex& index, NodeLabelsLookup nodeLabels,
               BinderOptions options)
    : api_(api), index_(index), nodeLabels_(std::move(nodeLabels)), options_(std::move(options)) {}

void Binder::beforeWrite(const Attempt& attempt) const {
  if (options_.clock() > attempt.deadline) {
    throw DeadlinePassed("bind passed its " + std::to_string(options_.deadline.count()) +
                         "ms deadline before it finished writing; what it wrote is undone");
  }
}

std::string Binder::bind(const BindingArgs& args) {
  {
    std::lock_guard lock(bindingMu_);
    if (!binding_.insert(args.podUid).second) {
      stats_.failures++;
      return "pod " + args.podNamespace + "/" + args.podName +
             " is still being bound by an earlier call; retry when it has finished";
    }
  }
  struct Release {
    Binder& binder;
    const std::string& uid;
    ~Release() {
      std::lock_guard lock(binder.bindingMu_);
      binder.binding_.erase(uid);
    }
  } release{*this, args.podUid};
  const auto deadline = options_.clock() + options_.deadline;
  std::string error;
  for (int i = 0; i < options_.maxAttempts; ++i) {
    switch (attempt(args, deadline, error)) {
      case Outcome::kDone:
        stats_.binds++;
        return {};
      case Outcome::kFail:
        stats_.failures++;
        index_.unreserve(args.podUid);
        return error;
      case Outcome::kRetry:
        if (log::v(4)) {
          log::info("bind attempt failed, retrying",
                    {{"pod", objectKey(args.podNamespace, args.podName)}, {"error", error}});
        }
        break;
    }
  }
  stats_.failures++;
  index_.unreserve(args.podUid);
  return "gave up after " + std::to_string(options_.maxAttempts) + " attempts: " + error;
}

void Binder::refreshDevice(const std::string& name) {
  try {
    index_.upsert(std::make_shared<const ExtendedResource>(
        ExtendedResource::fromJson(api_.get(resources::kExtendedResources, "", name))));
  } catch (const ApiError& e) {
    if (e.isNotFound()) {
      index_.remove(name);
    }
  }
}

void Binder::undo(Attempt& attempt) {
  stats_.undos++;
  if (const ExtendedResourceClaim* c = attempt.unconfirmedClaim) {
    try {
      auto live = ExtendedResourceClaim::fromJson(
          api_.get(resources::kExtendedResourceClaims, c->meta.ns, c->meta.name));
      if (live.podRef && live.podRef->uid == attempt.podUid &&
          live.allocated == attempt.unconfirmedDevices) {
        attempt.claims.push_back(std::move(live));
      }
    } catch (const std::exception& e) {
      log::warn("bind undo: claim may be left bound",
                {{"claim", objectKey(c->meta.ns, c->meta.name)}, {"error", e.what()}});
    }
  }
  if (!attempt.unconfirmedDevice.empty()) {
    try {
      auto live = ExtendedResource::fromJson(
          api_.get(resources::kExtendedResources, "", attempt.unconfirmedDevice));
      if (live.claimRef && live.claimRef->uid == attempt.unconfirmedDeviceClaimUid) {
        attempt.devices.push_back(std::move(live));
      }
    } catch (const std::exception& e) {
      log::warn("bind undo: device may be left bound",
                {{"device", attempt.unconfirmedDevice}, {"error", e.what()}});
    }
  }
  // A claim that could not be put back keeps its devices: it may be another call's now (one
  // that rewrote it to bind the pod with it), and otherwise the controller's repair pass
  // releases the claim and its devices together. So does a claim this attempt reused.
  std::set<std::string> kept = attempt.reusedClaims;
  for (auto it = attempt.claims.rbegin(); it != attempt.claims.rend(); ++it) {
    try {
      api_.updateStatus(resources::kExtendedResourceClaims, it->meta.ns,
                        markClaimPending(*it).toJson());
      stats_.apiWrites++;
    } catch (const std::exception& e) {
      kept.insert(it->meta.uid);
      log::warn("bind undo: claim left bound with its devices",
                {{"claim", objectKey(it->meta.ns, it->meta.name)}, {"error", e.what()}});
    }
  }
  for (auto it = attempt.devices.rbegin(); it != attempt.devices.rend(); ++it) {
    if (it->claimRef && kept.count(it->claimRef->uid) != 0) {
      continue;
    }
    try {
      auto restored = ExtendedResource::fromJson(
          api_.updateStatus(resources::kExtendedResources, "", markDevice(*it, {}).toJson()));
      stats_.apiWrites++;
      index_.upsert(std::make_shared<const ExtendedResource>(std::move(restored)));
    } catch (const std::exception& e) {
      log::warn("bind undo: device left bound", {{"device", it->meta.name}, {"error", e.what()}});
    }
  }
  // Held rather than freed: filters running before the next attempt must not send other pods
  // to them. The bind's end lets them go if no attempt succeeds.
  index_.holdReserved(attempt.node, attempt.podUid, options_.clock(), DeviceIndex::kHoldTtl);
}

// A claim already Bound to the pod is no proof that its devices are: an earlier attempt
// whose claim write was applied but whose reply was lost undid its device writes. Each device
// is read fresh; one put back to Available is bound again (its resourceVersion guarding
// against a concurrent taker) before the pod may be bound.
DevicePtr Binder::reclaimDevice(const ExtendedResourceClaim& claim, const std::string& name,
                                const std::string& podUid, Attempt& attempt) {
  auto live = ExtendedResource::fromJson(api_.get(resources::kExtendedResources, "", name));
  if (live.phase == DevicePhase::kBound && live.claimRef && live.claimRef->uid == claim.meta.uid) {
    return std::make_shared<const ExtendedResource>(std::move(live));
  }
  if (!takeable(live) || !index_.reserve({name}, podUid)) {
    throw ApiError(ApiErrorKind::kConflict, 409, "Conflict",
                   "device " + name + " of claim " + objectKey(claim.meta.ns, claim.meta.name) +
                       " is no longer bound to it");
  }
  beforeWrite(attempt);
  auto written = ExtendedResource::fromJson(api_.updateStatus(
      resources::kExtendedResources, "",
      markDevice(live, ClaimRef{claim.meta.ns, claim.meta.name, claim.meta.uid}).toJson()));
  stats_.apiWrites++;
  attempt.devices.push_back(written);
  return std::make_shared<const ExtendedResource>(std::move(written));
}

std::optional<Pod> Binder::livePod(const Pod& pod) {
  // Whether a cut-off Binding landed decides between done and undo: asked whatever the time.
  RequestDeadline unfenced(std::nullopt);
  try {
    auto live = Pod::fromJson(api_.get(resources::kPods, pod.meta.ns, pod.meta.name));
    if (live.meta.uid == pod.meta.uid) {
      return live;
    }
  } catch (const ApiError&) {
  }
  return std::nullopt;
}

Binder::Outcome Binder::attempt(const BindingArgs& args,
                                std::chrono::steady_clock::time_point deadline,
                                std::string& error) {
  Pod pod;
  try {
    pod = Pod::fromJson(api_.get(resources::kPods, args.podNamespace, args.podName));
  } catch (const ApiError& e) {
    error = "pod " + args.podNamespace + "/" + args.podName + ": " + e.what();
    return e.isRetriable() ? Outcome::kRetry : Outcome::kFail;
  }
  if (pod.meta.uid != args.podUid) {
    error = "pod " + args.podNamespace + "/" + args.podName + " has UID " + pod.meta.uid +
            ", not " + args.podUid + " (it was recreated)";
    return Outcome::kFail;
  }
  if (!pod.nodeName.empty()) {
    if (pod.nodeName == args.node) {
      return Outcome::kDone;  // an earlier bind whose reply was lost
    }
    error = "pod is already bound to node " + pod.nodeName;
    return Outcome::kFail;
  }
  if (pod.meta.deleting) {
    error = "pod is being deleted";
    return Outcome::kFail;
  }

  // Claims are read fresh: the bind is the write path and must not trust a stale cache.
  PodClaims claims;
  try {
    claims = resolveClaims(pod, [&](const std::string& key) { return liveClaim(api_, key); });
  } catch (const ApiError& e) {
    error = std::string("reading claims: ") + e.what();
    return e.isRetriable() ? Outcome::kRetry : Outcome::kFail;
  }

  std::map<std::string, std::string> labels;
  try {
    labels = nodeLabels_(args.node);
  } catch (const std::exception& e) {
    error = "node " + args.node + ": " + e.what();
    return Outcome::kFail;
  }
  NodePlan plan = planNode(claims, pod.meta.uid, args.node, labels, index_);
  if (!plan.fits) {
    error = plan.message;
    return Outcome::kFail;
  }

  Attempt attempt;
  attempt.podUid = pod.meta.uid;
  attempt.node = args.node;
  attempt.deadline = deadline;
  std::vector<std::string> taken;
  for (const auto& [key, names] : plan.assignment) {
    taken.insert(taken.end(), names.begin(), names.end());
  }
  if (!index_.reserve(taken, pod.meta.uid)) {
    error = "devices were taken by a concurrent bind";
    return Outcome::kRetry;
  }
  if (plannedHook_) {
    plannedHook_();
  }

  std::map<std::string, std::vector<const ExtendedResource*>> annotation;
  std::vector<DevicePtr> keepAlive;
  try {
    // The calls below are cut off at the deadline too, rather than let a retry or a slow
    // reply carry a write past it; the undo in the handlers runs without it.
    RequestDeadline fence(RequestDeadline::Clock::now() + (deadline - options_.clock()));
    for (const auto& claim : claims.pending) {
      const auto key = objectKey(claim->meta.ns, claim->meta.name);
      const auto& names = plan.assignment.at(key);
      for (const auto& name : names) {
        // The cache may have moved on since the plan (another replica's write arriving by
        // watch). Only a snapshot that is still free may be written over: its resourceVersion
        // then guarantees nobody took the device in between. Writing over a newer, Bound
        // version would pass the precondition and steal the device.
        DevicePtr cached = index_.get(name);
        if (!cached) {
          throw ApiError(ApiErrorKind::kNotFound, 404, "NotFound", "device " + name + " vanished");
        }
        if (!takeable(*cached)) {
          throw ApiError(ApiErrorKind::kConflict, 409, "Conflict",
                         "device " + name + " was taken while this bind was deciding");
        }
        json body = markDevice(*cached, ClaimRef{claim->meta.ns, claim->meta.name, claim->meta.uid})
                        .toJson();
        if (staleWrites_.load() > 0 && staleWrites_.fetch_sub(1) > 0) {
          body["metadata"]["resourceVersion"] = "1";
        }
        beforeWrite(attempt);
        attempt.unconfirmedDevice = name;
        attempt.unconfirmedDeviceClaimUid = claim->meta.uid;
        auto written =
            ExtendedResource::fromJson(api_.updateStatus(resources::kExtendedResources, "", body));
        attempt.unconfirmedDevice.clear();
        stats_.apiWrites++;
        attempt.devices.push_back(written);
        keepAlive.push_back(std::make_shared<const ExtendedResource>(std::move(written)));
        annotation[claim->meta.name].push_back(keepAlive.back().get());
      }
      beforeWrite(attempt);
      attempt.unconfirmedClaim = claim.get();
      attempt.unconfirmedDevices = names;
      auto bound = ExtendedResourceClaim::fromJson(
          api_.updateStatus(resources::kExtendedResourceClaims, claim->meta.ns,
                            markClaimBound(*claim, pod, args.node, names).toJson()));
      attempt.unconfirmedClaim = nullptr;
      stats_.apiWrites++;
      attempt.claims.push_back(std::move(bound));
    }
    for (const auto& claim : claims.boundToPod) {
      for (const auto& name : claim->allocated) {
        keepAlive.push_back(reclaimDevice(*claim, name, pod.meta.uid, attempt));
        annotation[claim->meta.name].push_back(keepAlive.back().get());
      }
      // Bound by another call (kube-scheduler retried the bind, here after that call ended or
      // on another replica after a leader change). Rewriting the claim makes that call's undo,
      // written against the version it left, fail and keep the devices rather than free them
      // under the pod this call binds; if its undo came first, this write fails and the bind
      // is decided again on what it left.
      // Counted as rewritten unless refused: a write whose reply was lost may have landed.
      beforeWrite(attempt);
      attempt.reusedClaims.insert(claim->meta.uid);
      try {
        api_.updateStatus(resources::kExtendedResourceClaims, claim->meta.ns,
                          markClaimReused(*claim).toJson());
      } catch (const ApiError& e) {
        if (e.isRefused()) {
          attempt.reusedClaims.erase(claim->meta.uid);
        }
        throw;
      }
      stats_.apiWrites++;
    }
    beforeWrite(attempt);
    stats_.apiWrites++;
    try {
      std::map<std::string, std::string> annotations{
          {kAllocationAnnotation, allocationAnnotation(annotation)}};
      // Only pods given devices need the agent; others start without it.
      if (!options_.requiredPlugin.empty() && !annotation.empty()) {
        annotations[kRequiredPluginsAnnotation] =
            requiredPluginsValue(pod.meta.annotations, options_.requiredPlugin);
      }
      api_.bindPod(pod.meta.ns, pod.meta.name, pod.meta.uid, args.node, annotations);
    } catch (const ApiError& e) {
      // A Binding whose reply was lost (timeout, dropped connection) may have been applied;
      // undoing the allocation of a bound pod would be far worse than a failed bind.
      const std::optional<Pod> live = livePod(pod);
      if (live && live->nodeName == args.node) {
        return Outcome::kDone;
      }
      // Another replica bound it meanwhile (kube-scheduler retried the bind there after this
      // call timed out): having found these claims already bound to the pod, it bound the
      // pod with them, so they and their devices are the pod's now. A pod bound without an
      // allocation annotation was not bound by an extender and gets the undo.
      if (live && !live->nodeName.empty() && live->meta.annotations.count(kAllocationAnnotation)) {
        error = "pod was bound to node " + live->nodeName + " by another bind meanwhile";
        return Outcome::kFail;
      }
      // Neither refused nor seen applied: the Binding may still be on its way to the API
      // server's store (a reply lost, a call cut off at the deadline). Undoing now could free
      // what the pod will be bound with, so the allocation stays, whole and consistent: a
      // retry finds the claims bound to the pod and reuses them, and the controller releases
      // them if the pod is never bound.
      if (!e.isRefused() && !(live && !live->nodeName.empty())) {
        // The index learns the devices are Bound now, not when the watch catches up, so
        // filter stops offering them before their reservations go.
        for (const auto& d : attempt.devices) {
          index_.upsert(std::make_shared<const ExtendedResource>(d));
        }
        index_.unreserve(attempt.podUid);
        error = std::string("the Binding's outcome is unknown (") + e.what() +
                "); the allocation is kept for a retry";
        return options_.clock() > deadline ? Outcome::kFail : Outcome::kRetry;
      }
      throw;
    }
  } catch (const ApiError& e) {
    error = e.what();
    if (e.isRefused()) {
      attempt.unconfirmedClaim = nullptr;  // nothing was written
      attempt.unconfirmedDevice.clear();
    }
    undo(attempt);
    for (const auto& name : taken) {
      if (e.isConflict() || e.isNotFound()) {
        refreshDevice(name);
      }
    }
    if (options_.clock() > deadline) {
      error += "; the bind's deadline has passed";
      return Outcome::kFail;  // no other attempt may write now
    }
    if (e.isConflict()) {
      stats_.conflicts++;
      return Outcome::kRetry;
    }
    return e.isRetriable() || e.isNotFound() ? Outcome::kRetry : Outcome::kFail;
  } catch (const std::exception& e) {
    error = e.what();
    undo(attempt);
    return Outcome::kFail;
  }
  return Outcome::kDone;
}

}  // namespace ker

#include "scheduler/bind/binder.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <utility>

#include "common/logging.h"
#include "common/request_deadline.h"
#include "model/claim_transitions.h"
#include "model/device_transitions.h"
#include "model/made_claims.h"
#include "model/objects.h"
#include "model/suitability.h"
#include "model/typed_client.h"
#include "scheduler/bind/bind_journal.h"
#include "scheduler/bind/bind_trust.h"
#include "scheduler/fit/claim_lookup.h"
#include "scheduler/fit/planner.h"

namespace ker {

namespace {

using json = nlohmann::json;

}  // namespace

std::string allocationAnnotation(
    const std::map<std::string, std::vector<const ExtendedResource*>>& byClaimName,
    const std::map<std::string, std::string>& requestOf) {
  json out = json::object();
  for (const auto& [claim, devices] : byClaimName) {
    json list = json::array();
    for (const auto* d : devices) {
      json entry{{"name", d->meta.name},
                 {"deviceID", d->deviceID},
                 {"rawResourceName", d->rawResourceName}};
      if (auto r = requestOf.find(d->meta.name); r != requestOf.end() && !r->second.empty()) {
        entry["request"] = r->second;
      }
      list.push_back(std::move(entry));
    }
    out[claim] = std::move(list);
  }
  return out.dump();
}

// One attempt: what it read and planned, what it wrote, and what its Binding will carry.
struct Binder::Attempt {
  Attempt(const BindingArgs& args, SteadyTime deadline, bool fromCaches)
      : node(args.node), deadline(deadline), fromCaches(fromCaches), journal(args.podUid) {}

  // The allocation annotation lists the device, as written or read, under the claim's name
  // (and the request it serves, for a claim with spec.requests).
  void annotate(const ExtendedResourceClaim& claim, const std::string& request, DevicePtr device) {
    devices.push_back(std::move(device));
    annotation[claim.meta.name].push_back(devices.back().get());
    requestOf[devices.back()->meta.name] = request;
  }

  const std::string node;
  const SteadyTime deadline;
  const bool fromCaches;
  Pod pod;
  PodClaims claims;
  std::map<std::string, std::vector<std::string>> assignment;  // pending unit key -> devices
  std::map<std::string, std::string> alternatives;  // pending unit key -> firstAvailable choice
  std::vector<std::string> taken;                   // every device assigned
  BindJournal journal;
  std::vector<DevicePtr> devices;  // owns what annotation points to
  std::map<std::string, std::vector<const ExtendedResource*>> annotation;
  std::map<std::string, std::string> requestOf;  // device -> its request, in the annotation
};

Binder::Step Binder::Step::of(const Status& answer) {
  switch (classify(answer)) {
    case Failure::kConflict:
      return {kConflict, answer};
    case Failure::kGone:
      return {kGone, answer};
    case Failure::kTransient:
      return {kRetry, answer};
    case Failure::kNone:
    case Failure::kPermanent:
      break;
  }
  return {kFail, answer};
}

Binder::Step Binder::Step::refused(const Status& transition) {
  return {kConflict, Status::conflict(transition.message())};
}

Binder::Step Binder::writeFailed(const Status& answer, Attempt& a) {
  if (answer.isRefused()) {
    a.journal.refused();
  }
  return Step::of(answer);
}

Binder::Binder(ApiClient& api, DeviceIndex& index, NodeLabelsLookup nodeLabels,
               BinderOptions options, BinderCaches caches)
    : api_(api),
      index_(index),
      nodeLabels_(std::move(nodeLabels)),
      options_(std::move(options)),
      caches_(std::move(caches)) {}

Status Binder::bind(const BindingArgs& args) {
  {
    std::lock_guard lock(bindingMu_);
    if (!binding_.insert(args.podUid).second) {
      stats_.failures++;
      return Status::unavailable("pod " + args.podNamespace + "/" + args.podName +
                                 " is still being bound by an earlier call; retry when it has "
                                 "finished");
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
  // Read once: later attempts are the same call.
  const std::string filterChoice = index_.filterChoice(args.podUid, options_.clock());
  // What the index keeps for the UID (the filter's hold, a preemption's nomination, this call's
  // bind holds) is let go only by a call that showed the pod it names has that UID: a call
  // naming another pod, or none, must not take them from the pod that has it.
  bool podConfirmed = false;
  Status last = Status::internal("no attempt was made");
  for (int i = 0; i < options_.maxAttempts; ++i) {
    Verdict v = attempt(args, deadline, i == 0, filterChoice, podConfirmed);
    switch (v.outcome) {
      case Outcome::kDone:
        stats_.binds++;
        return {};
      case Outcome::kFail:
        stats_.failures++;
        if (podConfirmed) {
          index_.dropAllHolds(args.podUid);
        }
        return v.status;
      case Outcome::kRetry:
        if (log::v(4)) {
          log::info("bind attempt failed, retrying",
                    {{"pod", objectKey(args.podNamespace, args.podName)},
                     {"code", toString(v.status.code())},
                     {"error", v.status.message()}});
        }
        last = std::move(v.status);
        break;
    }
  }
  stats_.failures++;
  if (podConfirmed) {
    index_.dropAllHolds(args.podUid);
  }
  return last.within("gave up after " + std::to_string(options_.maxAttempts) + " attempts");
}

void Binder::refreshDevice(const std::string& name) {
  DevicePtr fresh;
  const Status read = callApi([&] {
    fresh = std::make_shared<const ExtendedResource>(readObject<ExtendedResource>(api_, "", name));
  });
  if (read.ok()) {
    index_.upsert(std::move(fresh));
  } else if (read.isNotFound()) {
    index_.remove(name);
  }
}

std::optional<Pod> Binder::livePod(const Pod& pod) {
  // Whether a cut-off Binding landed decides between done and undo: asked whatever the time.
  RequestDeadline unfenced(std::nullopt);
  Pod live;
  if (!getObject(api_, pod.meta.ns, pod.meta.name, live).ok() || live.meta.uid != pod.meta.uid) {
    return std::nullopt;  // not readable is as good as not seen: the caller decides on neither
  }
  return live;
}

Binder::Verdict Binder::attempt(const BindingArgs& args, SteadyTime deadline, bool fromCaches,
                                const std::string& filterChoice, bool& podConfirmed) {
  Attempt a(args, deadline, fromCaches);
  if (auto ended = readPod(args, filterChoice, a)) {
    return *ended;
  }
  podConfirmed = true;
  if (auto ended = plan(a)) {
    return *ended;
  }
  if (!index_.holdForBind(a.taken, a.pod.meta.uid)) {
    return {Outcome::kRetry, Status::conflict("devices were taken by a concurrent bind")};
  }
  if (plannedHook_) {
    plannedHook_();
  }
  Step step;
  try {
    step = write(a);
  } catch (const std::exception& e) {
    // Not an API answer (the steps turn those into results) but a fault all the same: what
    // was written is undone.
    step = {Step::kBroken, Status::internal(e.what())};
  }
  return conclude(step, a);
}

std::optional<Binder::Verdict> Binder::readPod(const BindingArgs& args,
                                               const std::string& filterChoice, Attempt& a) {
  const std::string pod = args.podNamespace + "/" + args.podName;
  // Whether the call may write for the pod at all: refused once, for every attempt (neither
  // the pod's schedulerName nor the filter's choice changes with fresher reads).
  auto trusted = [&]() -> std::optional<Verdict> {
    Status st = checkBindTrust(a.pod, classRequestsOf(a.pod, caches_.classes), args.node,
                               options_.schedulerName,
                               options_.requireFilterChoice ? filterChoice : args.node);
    if (st.ok()) {
      return std::nullopt;
    }
    return Verdict{Outcome::kFail, std::move(st)};
  };
  // The cached copy is taken only as the pod to bind; anything else about it (recreated,
  // bound, deleting, or not yet seen) is decided on the live pod below.
  if (a.fromCaches && caches_.pods) {
    if (auto cached = caches_.pods(pod); cached && cached->meta.uid == args.podUid &&
                                         cached->nodeName.empty() && !cached->meta.deleting) {
      a.pod = *cached;
      return trusted();
    }
  }
  if (Status read = getObject(api_, args.podNamespace, args.podName, a.pod); !read.ok()) {
    return Verdict{read.isRetriable() ? Outcome::kRetry : Outcome::kFail,
                   read.within("pod " + pod)};
  }
  if (a.pod.meta.uid != args.podUid) {
    return Verdict{Outcome::kFail,
                   Status::notFound("pod " + pod + " has UID " + a.pod.meta.uid + ", not " +
                                    args.podUid + " (it was recreated)")};
  }
  if (!a.pod.nodeName.empty()) {
    if (a.pod.nodeName == args.node) {
      return Verdict{};  // done: an earlier bind whose reply was lost
    }
    return Verdict{Outcome::kFail,
                   Status::conflict("pod is already bound to node " + a.pod.nodeName)};
  }
  if (a.pod.meta.deleting) {
    return Verdict{Outcome::kFail, Status::failedPrecondition("pod is being deleted")};
  }
  return trusted();
}

std::optional<Binder::Verdict> Binder::plan(Attempt& a) {
  const bool cached = a.fromCaches && caches_.claims;
  // A failed read ends the resolving there (the claim counts as missing) and the attempt
  // with it.
  Status read;
  // A class request's claim the cache does not have is made by the bind, whose create finds
  // one made meanwhile: no live read for it first.
  a.claims = resolveClaims(
      a.pod,
      [&](const std::string& key) -> ClaimPtr {
        ClaimPtr claim = cached ? caches_.claims(key) : nullptr;
        if (claim || !read.ok()) {
          return claim;
        }
        read = callApi([&] { claim = liveClaim(api_, key); });
        return claim;
      },
      classRequestsOf(a.pod, caches_.classes), cached ? caches_.claims : ClaimLookup());
  if (!read.ok()) {
    return Verdict{read.isRetriable() ? Outcome::kRetry : Outcome::kFail,
                   read.within("reading claims")};
  }
  // A refusal decided on cached claims is decided again on live ones before it stands.
  const Outcome refused = cached ? Outcome::kRetry : Outcome::kFail;
  std::map<std::string, std::string> labels;
  try {
    labels = nodeLabels_(a.node);
  } catch (const std::exception& e) {
    // The lookup is the binary's (its cache, else a live read): whatever it throws ends here.
    return Verdict{Outcome::kFail, statusFrom(e).within("node " + a.node)};
  }
  NodePlan fit = planNode(a.claims, a.pod.meta.uid, a.node, labels, index_, options_.scoring);
  if (!fit.fits) {
    return Verdict{refused, Status::failedPrecondition(fit.message)};
  }
  a.assignment = std::move(fit.assignment);
  a.alternatives = std::move(fit.alternatives);
  for (const auto& [key, names] : a.assignment) {
    a.taken.insert(a.taken.end(), names.begin(), names.end());
  }
  return std::nullopt;
}

// Devices first, so the API server decides every race for a device before anything else is
// written; each pending claim after its devices; then the claims an earlier call bound to the
// pod, their devices checked; the Binding last.
Binder::Step Binder::write(Attempt& a) {
  // The calls are cut off at the deadline too, rather than let a retry or a slow reply carry
  // a write past it; the undo, after this scope, runs without it.
  RequestDeadline fence(RequestDeadline::Clock::now() + (a.deadline - options_.clock()));
  if (Step s = makeClaims(a); !s.ok()) {
    return s;
  }
  for (const auto& claim : a.claims.pending) {
    // Each request's devices (the claim's own, without spec.requests), then the claim with all.
    std::vector<RequestAllocation> allocations;
    auto allocate = [&](const ExtendedResourceClaim& unit) -> Step {
      const std::string key = unitKey(unit);
      const auto& names = a.assignment.at(key);
      for (const auto& name : names) {
        if (Step s = writeDevice(unit, name, a); !s.ok()) {
          return s;
        }
      }
      const auto alternative = a.alternatives.find(key);
      allocations.push_back(
          {unit.request, names, alternative == a.alternatives.end() ? "" : alternative->second});
      return {};
    };
    if (claim->requests.empty()) {
      if (Step s = allocate(*claim); !s.ok()) {
        return s;
      }
    } else {
      for (const auto& unit : claim->units()) {
        if (Step s = allocate(unit); !s.ok()) {
          return s;
        }
      }
    }
    if (Step s = writeClaim(*claim, std::move(allocations), a); !s.ok()) {
      return s;
    }
  }
  for (const auto& claim : a.claims.boundToPod) {
    for (const auto& name : claim->allocated) {
      if (Step s = reclaimDevice(*claim, name, a); !s.ok()) {
        return s;
      }
    }
    if (Step s = reuseClaim(*claim, a); !s.ok()) {
      return s;
    }
  }
  for (const auto& claim : a.claims.joining) {
    if (Step s = joinClaim(*claim, a); !s.ok()) {
      return s;
    }
  }
  return writeBinding(a);
}

// Before any device is written: the devices name the claim by UID. A made claim is not undone
// with the attempt; it is the pod's, Pending, and the next attempt (or the controller) takes it
// as it finds it.
Binder::Step Binder::makeClaims(Attempt& a) {
  for (const auto& unrecorded : a.claims.unrecorded) {
    if (!unrecorded.make) {
      continue;
    }
    if (Step s = beforeWrite(a); !s.ok()) {
      return s;
    }
    const std::string key = objectKey(a.pod.meta.ns, unrecorded.name);
    stats_.apiWrites++;
    nlohmann::json created;
    if (Status sent = callApi([&] {
          created =
              api_.create(resources::kExtendedResourceClaims, a.pod.meta.ns, *unrecorded.make);
        });
        !sent.ok()) {
      if (sent.code() == StatusCode::kAlreadyExists) {
        // Made meanwhile, by a bind whose reply was lost (or an older controller): decided again
        // on the claim as it is.
        return {Step::kConflict, Status::conflict("claim " + key + " was made meanwhile")};
      }
      return Step::of(sent.within("creating claim " + key));
    }
    auto made =
        std::make_shared<const ExtendedResourceClaim>(ExtendedResourceClaim::fromJson(created));
    for (auto& claim : a.claims.pending) {
      if (claim->meta.name == unrecorded.name) {
        claim = made;
      }
    }
  }
  return {};
}

Binder::Step Binder::beforeWrite(const Attempt& a) const {
  if (options_.clock() > a.deadline) {
    return {Step::kDeadline,
            Status::deadlineExceeded(
                "bind passed its " + std::to_string(options_.deadline.count()) +
                "ms deadline before it finished writing; what it wrote is undone")};
  }
  return {};
}

Binder::Step Binder::writeDevice(const ExtendedResourceClaim& claim, const std::string& name,
                                 Attempt& a) {
  // The cache may have moved on since the plan (another replica's write arriving by watch).
  // Only a snapshot that is still free may be written over: its resourceVersion then
  // guarantees nobody took the device in between. Writing over a newer, Bound version would
  // pass the precondition and steal the device.
  DevicePtr cached = index_.get(name);
  if (!cached) {
    return {Step::kGone, Status::notFound("device " + name + " vanished")};
  }
  const std::optional<ClaimAllocation> named = index_.claimOf(*cached);
  if (!offerable(*cached, named)) {
    return {Step::kConflict,
            Status::conflict("device " + name + " was taken while this bind was deciding")};
  }
  ExtendedResource next = *cached;
  if (Status bound =
          bindDevice(next, ClaimRef{claim.meta.ns, claim.meta.name, claim.meta.uid},
                     claim.allocation + 1, {PodRef{a.pod.meta.name, a.pod.meta.uid}}, named);
      !bound.ok()) {
    return Step::refused(bound);
  }
#ifdef KER_FAILPOINTS
  if (staleWrites_.load() > 0 && staleWrites_.fetch_sub(1) > 0) {
    next.meta.resourceVersion = "1";
  }
#endif
  if (Step s = beforeWrite(a); !s.ok()) {
    return s;
  }
  a.journal.deviceSent(name, claim.meta.uid);
  ExtendedResource written;
  if (Status sent = writeStatus(api_, next, options_.wallClock(), &written); !sent.ok()) {
    return writeFailed(sent, a);
  }
  stats_.apiWrites++;
  a.journal.applied(written);
  a.annotate(claim, claim.request, std::make_shared<const ExtendedResource>(std::move(written)));
  return {};
}

Binder::Step Binder::writeClaim(const ExtendedResourceClaim& claim,
                                std::vector<RequestAllocation> allocations, Attempt& a) {
  if (Step s = beforeWrite(a); !s.ok()) {
    return s;
  }
  ExtendedResourceClaim next = claim;
  if (Status bound = bindRequests(next, PodRef{a.pod.meta.name, a.pod.meta.uid}, a.node,
                                  std::move(allocations));
      !bound.ok()) {
    return Step::refused(bound);
  }
  a.journal.claimSent(next, next.allocated);
  return sendClaimStatus(next, a);
}

// The claim's status write of a step already entered in the journal, and its answer recorded.
Binder::Step Binder::sendClaimStatus(const ExtendedResourceClaim& next, Attempt& a) {
  ExtendedResourceClaim written;
  if (Status sent = writeStatus(api_, next, options_.wallClock(), &written); !sent.ok()) {
    return writeFailed(sent, a);
  }
  stats_.apiWrites++;
  a.journal.applied(std::move(written));
  return {};
}

// A claim already Bound to the pod is no proof that its devices are: an earlier attempt
// whose claim write was applied but whose reply was lost undid its device writes. Each device
// is read fresh; one put back to Available is bound again (its resourceVersion guarding
// against a concurrent taker) before the pod may be bound.
Binder::Step Binder::reclaimDevice(const ExtendedResourceClaim& claim, const std::string& name,
                                   Attempt& a) {
  ExtendedResource live;
  if (Status read = getObject(api_, name, live); !read.ok()) {
    return Step::of(read);
  }
  if (live.phase == DevicePhase::kBound && live.claimRef && live.claimRef->uid == claim.meta.uid &&
      live.allocation == claim.allocation) {
    a.annotate(claim, claim.requestOf(name),
               std::make_shared<const ExtendedResource>(std::move(live)));
    return {};
  }
  const std::optional<ClaimAllocation> named = index_.claimOf(live);
  if (!offerable(live, named) || !index_.holdForBind({name}, a.pod.meta.uid)) {
    return {Step::kConflict, Status::conflict("device " + name + " of claim " +
                                              objectKey(claim.meta.ns, claim.meta.name) +
                                              " is no longer bound to it")};
  }
  if (Status bound = bindDevice(live, ClaimRef{claim.meta.ns, claim.meta.name, claim.meta.uid},
                                claim.allocation,
                                claim.holdersWith(PodRef{a.pod.meta.name, a.pod.meta.uid}), named);
      !bound.ok()) {
    return Step::refused(bound);
  }
  if (Step s = beforeWrite(a); !s.ok()) {
    return s;
  }
  ExtendedResource written;
  if (Status sent = writeStatus(api_, live, options_.wallClock(), &written); !sent.ok()) {
    return Step::of(sent);
  }
  stats_.apiWrites++;
  a.journal.rebound(written);
  a.annotate(claim, claim.requestOf(name),
             std::make_shared<const ExtendedResource>(std::move(written)));
  return {};
}

// Bound by another call (kube-scheduler retried the bind, here after that call ended or on
// another replica after a leader change). Rewriting the claim makes that call's undo, written
// against the version it left, fail and keep the devices rather than free them under the pod
// this call binds; if its undo came first, this write fails and the bind is decided again on
// what it left.
Binder::Step Binder::reuseClaim(const ExtendedResourceClaim& claim, Attempt& a) {
  ExtendedResourceClaim next = claim;
  if (Status rewritten = rewriteClaimBind(next, a.pod.meta.uid); !rewritten.ok()) {
    return Step::refused(rewritten);
  }
  if (Step s = beforeWrite(a); !s.ok()) {
    return s;
  }
  a.journal.reuseSent(claim.meta.uid);
  if (Status sent = writeStatus(api_, next, options_.wallClock()); !sent.ok()) {
    return writeFailed(sent, a);
  }
  stats_.apiWrites++;
  a.journal.reuseApplied();
  return {};
}

// A shareable claim allocated to other pods: its devices are read to be sure they are still
// Bound to it (the annotation names them), each is written naming the pod among its holders
// (guarded by the version read), then the pod is added to the claim's holders. That write
// carries the claim's resourceVersion as read for the plan, so a release, Lost or another
// holder's change in between fails it with a Conflict and the attempt is decided again. A
// device left naming a pod whose join then failed only waits for that pod too, should the
// claim be deleted: never the other way round (joinDevice keeps whom the device names).
Binder::Step Binder::joinClaim(const ExtendedResourceClaim& claim, Attempt& a) {
  for (const auto& name : claim.allocated) {
    ExtendedResource live;
    if (Status read = getObject(api_, name, live); !read.ok()) {
      return Step::of(read);
    }
    if (Status held = joinDevice(live, claim.meta.uid,
                                 claim.holdersWith(PodRef{a.pod.meta.name, a.pod.meta.uid}));
        !held.ok()) {
      return {Step::kConflict, Status::conflict("device " + name + " of shared claim " +
                                                objectKey(claim.meta.ns, claim.meta.name) +
                                                " is no longer bound to it")};
    }
    if (Step s = beforeWrite(a); !s.ok()) {
      return s;
    }
    if (Status sent = writeStatus(api_, live, options_.wallClock(), &live); !sent.ok()) {
      return Step::of(sent);
    }
    stats_.apiWrites++;
    a.annotate(claim, claim.requestOf(name),
               std::make_shared<const ExtendedResource>(std::move(live)));
  }
  if (Step s = beforeWrite(a); !s.ok()) {
    return s;
  }
  ExtendedResourceClaim next = claim;
  if (Status joined = ker::joinClaim(next, PodRef{a.pod.meta.name, a.pod.meta.uid}); !joined.ok()) {
    return Step::refused(joined);
  }
  a.journal.joinSent(next);
  return sendClaimStatus(next, a);
}

Binder::Step Binder::writeBinding(Attempt& a) {
  if (Step s = beforeWrite(a); !s.ok()) {
    return s;
  }
  stats_.apiWrites++;
  std::map<std::string, std::string> annotations;
  // Only pods given devices need the agent; others start without it.
  if (!options_.requiredPlugin.empty() && !a.annotation.empty()) {
    annotations = requiredPluginsAnnotations(a.pod.meta.annotations, options_.requiredPlugin);
  }
  annotations[kAllocationAnnotation] = allocationAnnotation(a.annotation, a.requestOf);
  // The claims of class requests join the pod's record in the same write, as the controller
  // would have recorded them.
  if (!a.claims.unrecorded.empty()) {
    std::map<std::string, std::string> record = recordedClaims(a.pod);
    for (const auto& unrecorded : a.claims.unrecorded) {
      record[unrecorded.resource] = unrecorded.name;
    }
    annotations[kGeneratedClaimsAnnotation] = generatedClaimsValue(record);
  }
  if (Status sent = callApi([&] {
        api_.bindPod(a.pod.meta.ns, a.pod.meta.name, a.pod.meta.uid, a.node, annotations);
      });
      !sent.ok()) {
    return bindingFailed(sent, a);
  }
  return {};
}

// A Binding whose reply was lost (timeout, dropped connection) may have been applied; undoing
// the allocation of a bound pod would be far worse than a failed bind.
Binder::Step Binder::bindingFailed(const Status& answer, Attempt& a) {
  const std::optional<Pod> live = livePod(a.pod);
  if (live && live->nodeName == a.node) {
    return {};
  }
  // Another replica bound it meanwhile (kube-scheduler retried the bind there after this call
  // timed out): having found these claims already bound to the pod, it bound the pod with
  // them, so they and their devices are the pod's now. A pod bound without an allocation
  // annotation was not bound by an extender and gets the undo.
  if (live && !live->nodeName.empty() && live->meta.annotations.count(kAllocationAnnotation)) {
    return {Step::kBoundByAnother, Status::conflict("pod was bound to node " + live->nodeName +
                                                    " by another bind meanwhile")};
  }
  // Neither refused nor seen applied: the Binding may still be on its way to the API server's
  // store (a reply lost, a call cut off at the deadline). Undoing now could free what the pod
  // will be bound with, so the allocation stays, whole and consistent: a retry finds the
  // claims bound to the pod and reuses them, and the controller releases them if the pod is
  // never bound.
  if (!answer.isRefused() && !(live && !live->nodeName.empty())) {
    return {
        Step::kUnsettled,
        Status::withCode(answer.code(), "the Binding's outcome is unknown (" + answer.message() +
                                            "); the allocation is kept for a retry")};
  }
  return Step::of(answer);
}

Binder::Verdict Binder::conclude(const Step& step, Attempt& a) {
  if (step.ok()) {
    return {};
  }
  switch (step.kind) {
    case Step::kBoundByAnother:
      return {Outcome::kFail, step.status};
    case Step::kUnsettled:
      // The index learns the devices are Bound now, not when the watch catches up, so filter
      // stops offering them before their bind holds go.
      for (auto& d : a.journal.devices()) {
        index_.upsert(std::make_shared<const ExtendedResource>(std::move(d)));
      }
      index_.dropAllHolds(a.pod.meta.uid);
      return {options_.clock() > a.deadline ? Outcome::kFail : Outcome::kRetry, step.status};
    case Step::kDeadline:  // no other attempt may write now
    case Step::kBroken:
      undo(a);
      return {Outcome::kFail, step.status};
    default:
      break;
  }
  undo(a);
  // The cache was behind the API: the next attempt decides on the devices as they are.
  if (step.kind == Step::kConflict || step.kind == Step::kGone) {
    for (const auto& name : a.taken) {
      refreshDevice(name);
    }
  }
  if (options_.clock() > a.deadline) {
    // No other attempt may write now.
    return {Outcome::kFail,
            Status::deadlineExceeded(step.status.message() + "; the bind's deadline has passed")};
  }
  switch (step.kind) {
    case Step::kConflict:
      stats_.conflicts++;
      return {Outcome::kRetry, step.status};
    case Step::kGone:
    case Step::kRetry:
      return {Outcome::kRetry, step.status};
    default:
      return {Outcome::kFail, step.status};
  }
}

void Binder::undo(Attempt& a) {
  stats_.undos++;
  stats_.apiWrites += a.journal.undo(api_, index_, options_.wallClock());
  // Held rather than freed: filters running before the next attempt must not send other pods
  // to them. The bind's end lets them go if no attempt succeeds.
  index_.holdAgain(a.node, a.taken, a.pod.meta.uid, options_.clock(), DeviceIndex::kHoldTtl);
}

}  // namespace ker

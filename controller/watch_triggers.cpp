#include "controller/watch_triggers.h"

#include <algorithm>

#include "controller/reconcile_decisions.h"
#include "model/suitability.h"

namespace ker {

namespace {

// What a waiting pod needs of its claim before the extender can place it.
bool allocatable(const ExtendedResourceClaim& c) {
  return c.phase == ClaimPhase::kPending && c.invalid.empty() && !c.meta.deleting;
}

// The spec as stored: an edit of it (fewer devices, a looser selector) may let a waiting pod
// fit.
nlohmann::json specOf(const ExtendedResourceClaim& c) {
  const nlohmann::json raw = c.raw.parse();
  return raw.is_object() ? raw.value("spec", nlohmann::json()) : nlohmann::json();
}

void addDevices(Triggers& t, const std::vector<std::string>& names) {
  for (const auto& name : names) {
    t.keys.push_back(DeviceKey{name});
  }
}

// The extender holds every device a Bound or Lost claim lists; one a Lost claim lost that was
// Available all along (never bound back) becomes usable when the claim lets go, with no device
// event. Only lost names: an allocated device that is Available is being freed by the release
// (its own event nudges) or is lost, and listed so, by the time the claim lets go.
void nudgeForDroppedHolds(Triggers& t, const ExtendedResourceClaim& old,
                          const ExtendedResourceClaim* cur, const DeviceGetter& device) {
  if (old.phase != ClaimPhase::kLost || !old.statusReadable) {
    return;
  }
  const std::vector<std::string> still = cur ? cur->heldDevices() : std::vector<std::string>{};
  std::set<std::string> resources;
  for (const auto& name : old.lost) {
    if (std::find(still.begin(), still.end(), name) != still.end()) {
      continue;
    }
    if (const auto d = device(name); d && writtenAvailable(*d)) {
      resources.insert(d->rawResourceName);
    }
  }
  for (const auto& resource : resources) {
    t.nudges.push_back(NudgeTarget::resource(resource));
  }
}

}  // namespace

bool writtenAvailable(const ExtendedResource& d) {
  return d.phase == DevicePhase::kAvailable && !d.claimRef && d.phaseWritten;
}

Triggers claimChanged(const ExtendedResourceClaim* old, const ExtendedResourceClaim& c,
                      bool listing, const DeviceGetter& device) {
  Triggers t;
  const std::string key = objectKey(c.meta.ns, c.meta.name);
  // A pod applied before its claim, waiting on one that was Lost, invalid or held, or on one
  // whose spec was edited, was parked by kube-scheduler: no device freeing would wake it.
  // (Claims found by the first list are not news.)
  if (!listing && allocatable(c) && (!old || !allocatable(*old) || specOf(*old) != specOf(c))) {
    t.nudges.push_back(NudgeTarget::claim(key));
  }
  // A shared claim other pods may join now: allocated, or a holder gone from a full one.
  if (!listing && joinable(c) && (!old || !joinable(*old))) {
    t.nudges.push_back(NudgeTarget::claim(key));
  }
  // Its release frees its devices through its status alone (freedByClaim): pods waiting for
  // that resource may fit now, before any device event.
  if (!listing && old && old->meta.uid == c.meta.uid && allocationOf(*old).holding &&
      !allocationOf(c).holding && !old->allocated.empty()) {
    for (const auto& resource : c.resourceNames()) {
      t.nudges.push_back(NudgeTarget::resource(resource));
    }
  }
  t.keys.push_back(ClaimKey{key});
  // Devices waiting out the grace period for this claim to list them can stop waiting; a
  // device back under a lost name is taken back, or freed once the claim no longer waits.
  addDevices(t, c.listedDevices());
  if (old) {
    nudgeForDroppedHolds(t, *old, &c, device);
    addDevices(t, old->listedDevices());
  }
  return t;
}

Triggers claimDeleted(const ExtendedResourceClaim& last, const std::vector<std::string>& naming,
                      const DeviceGetter& device) {
  Triggers t;
  nudgeForDroppedHolds(t, last, nullptr, device);
  t.keys.push_back(ClaimKey{objectKey(last.meta.ns, last.meta.name)});
  addDevices(t, last.listedDevices());
  addDevices(t, naming);
  return t;
}

Triggers deviceChanged(const ExtendedResource* old, const ExtendedResource& d) {
  Triggers t;
  t.keys.push_back(DeviceKey{d.meta.name});
  if (d.claimRef) {
    t.keys.push_back(ClaimKey{objectKey(d.claimRef->ns, d.claimRef->name)});
  }
  if (old && old->claimRef && !(d.claimRef && *old->claimRef == *d.claimRef)) {
    t.keys.push_back(ClaimKey{objectKey(old->claimRef->ns, old->claimRef->name)});
  }
  if (writtenAvailable(d) && !(old && writtenAvailable(*old))) {
    t.nudges.push_back(NudgeTarget::resource(d.rawResourceName));
  }
  return t;
}

Triggers deviceDeleted(const ExtendedResource& last) {
  Triggers t;
  t.keys.push_back(DeviceKey{last.meta.name});
  if (last.claimRef) {
    t.keys.push_back(ClaimKey{objectKey(last.claimRef->ns, last.claimRef->name)});
  }
  return t;
}

Triggers nodeRegistrationChanged(const std::string& node,
                                 const std::vector<CachedDevice>& devices) {
  Triggers t;
  for (const auto& d : devices) {
    if (d->labelledNode() == node) {
      t.keys.push_back(DeviceKey{d->meta.name});
    }
  }
  return t;
}

Triggers podChanged(const Pod& pod, const std::set<std::string>& held, bool deleted) {
  Triggers t;
  for (const auto& key : held) {
    t.keys.push_back(ClaimKey{key});
  }
  // Only a pod that names claims or templates can need a warning about how it names them, or
  // claims made for it, and only a pod with the class-claims gate a gate lifted; a deleted one,
  // for the warning to be forgotten. A class request's claim is the extender's to make.
  if (deleted || pod.meta.annotations.count(kClaimsAnnotation) ||
      pod.meta.annotations.count(kClaimTemplatesAnnotation) || pod.classClaimsGate()) {
    t.keys.push_back(PodKey{objectKey(pod.meta.ns, pod.meta.name)});
  }
  return t;
}

Triggers startedLeading(const std::vector<CachedPod>& pods, const std::vector<CachedClaim>& claims,
                        const std::vector<CachedDevice>& devices) {
  Triggers t;
  for (const auto& c : claims) {
    const std::string key = objectKey(c->meta.ns, c->meta.name);
    t.keys.push_back(ClaimKey{key});
    // Pods parked to join a shared claim with room: the leader before may have gone before
    // its nudge did, and no device event wakes them (every device of the claim is Bound).
    if (joinable(*c)) {
      t.nudges.push_back(NudgeTarget::claim(key));
    }
  }
  for (const auto& d : devices) {
    Triggers forDevice = deviceChanged(nullptr, *d);
    t.keys.insert(t.keys.end(), forDevice.keys.begin(), forDevice.keys.end());
    for (auto& n : forDevice.nudges) {
      if (std::find(t.nudges.begin(), t.nudges.end(), n) == t.nudges.end()) {
        t.nudges.push_back(std::move(n));  // one per resource, however many devices it has
      }
    }
  }
  for (const auto& p : pods) {
    Triggers forPod = podChanged(*p, {}, false);
    t.keys.insert(t.keys.end(), forPod.keys.begin(), forPod.keys.end());
  }
  return t;
}

Triggers templateChanged(const ExtendedResourceClaimTemplate& tmpl,
                         const std::vector<CachedPod>& pods) {
  Triggers t;
  for (const auto& p : pods) {
    if (!p || p->meta.ns != tmpl.meta.ns || p->awaitingTemplates.empty()) {
      continue;
    }
    for (const auto& entry : p->claimTemplates) {
      if (entry.templateName == tmpl.meta.name) {
        t.keys.push_back(PodKey{objectKey(p->meta.ns, p->meta.name)});
        break;
      }
    }
  }
  return t;
}

Triggers classChanged(const std::vector<CachedPod>& pods) {
  Triggers t;
  t.keys.push_back(ClassParamsKey{});
  for (const auto& p : pods) {
    // Whether a template's devices are for pods only may change.
    if (p && p->nodeName.empty() && !p->awaitingTemplates.empty()) {
      t.keys.push_back(PodKey{objectKey(p->meta.ns, p->meta.name)});
    }
  }
  return t;
}

}  // namespace ker

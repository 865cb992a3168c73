#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "controller/caches.h"
#include "controller/work_keys.h"
#include "model/objects.h"
#include "model/resource_class.h"

// Which work a watch event calls for, as pure functions of the event: the keys of the objects
// to reconcile, and the pods' nudges it may have made worth while. The informers' handlers only
// apply what these return (as controller-runtime's event handlers map an event to requests).
namespace ker {

struct Triggers {
  std::vector<WorkKey> keys;
  std::vector<NudgeTarget> nudges;
};

using DeviceGetter = std::function<CachedDevice(const std::string& name)>;

// `listing`: delivered by the claims informer's first list, not by a change seen live.
Triggers claimChanged(const ExtendedResourceClaim* old, const ExtendedResourceClaim& cur,
                      bool listing, const DeviceGetter& device);
// `naming`: the devices whose claimRef names the claim (a bind in flight writes devices before
// its claim lists them).
Triggers claimDeleted(const ExtendedResourceClaim& last, const std::vector<std::string>& naming,
                      const DeviceGetter& device);
Triggers deviceChanged(const ExtendedResource* old, const ExtendedResource& cur);
Triggers deviceDeleted(const ExtendedResource& last);
// `held`: the keys of the claims that name the pod among their holders.
Triggers podChanged(const Pod& pod, const std::set<std::string>& held, bool deleted);
// A template was created, changed or deleted: the pods of its namespace still waiting for a
// claim from it are reconciled.
Triggers templateChanged(const ExtendedResourceClaimTemplate& tmpl,
                         const std::vector<CachedPod>& pods);
// A class was created, changed or deleted: the class policies' params, and the pods still to be
// scheduled that await a template's claim, are reconciled.
Triggers classChanged(const std::vector<CachedPod>& pods);

// The controller starts leading, with the caches listed while it stood by (whose events it did
// not queue): every claim, device and pod that may need work is reconciled once, and pods parked
// for a resource with a device Available, or to join a shared claim with room, are nudged.
Triggers startedLeading(const std::vector<CachedPod>& pods, const std::vector<CachedClaim>& claims,
                        const std::vector<CachedDevice>& devices);

// A Node of this name was created or deleted: the devices its kNodeLabel names are reconciled.
Triggers nodeRegistrationChanged(const std::string& node, const std::vector<CachedDevice>& devices);

// Available to the extender in a status the API holds (an absent status is not: the reconciler
// writes it, and that write is the event that counts; nor is one still naming a claim, until
// the reconciler clears it).
bool writtenAvailable(const ExtendedResource& device);

}  // namespace ker

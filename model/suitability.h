#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/objects.h"

namespace ker {

// Why a device cannot serve a claim, by what the device is; where it is, is reachable()'s.
enum class Unsuited {
  kNone,              // it suits
  kOtherResource,     // another rawResourceName
  kNotNamed,          // the claim names its devices, and not this one
  kSelectorMismatch,  // its properties fail the claim's metadataRequirements, or lack a
                      // property its constraints compare
};

// The one rule for "may this device serve this claim": same resource, among the names the
// claim lists (when it lists any), properties selected by its metadataRequirements (an invalid
// selector selects nothing), or with firstAvailable by the chosen alternative's (by any of
// them while none is chosen). A claim with spec.requests is judged by the unit of the request
// its status lists the device under, else by whichever unit comes closest to taking it. The
// extender's planner, the controller's bind-back and the invariant checker all decide through
// it.
Unsuited suitability(const ExtendedResource& device, const ExtendedResourceClaim& claim);
inline bool suits(const ExtendedResource& device, const ExtendedResourceClaim& claim) {
  return suitability(device, claim) == Unsuited::kNone;
}

// The values of the properties the claim's matchProperty constraints compare, joined: the
// devices of one allocation must all have the same key. "" for a claim without them; nullopt
// for a device lacking one of the properties any constraint names (it cannot serve the claim).
std::optional<std::string> constraintKey(const ExtendedResourceClaim& claim,
                                         const std::map<std::string, std::string>& properties);
// The claim's distinctProperty, "" when it has none.
const std::string& distinctProperty(const ExtendedResourceClaim& claim);
// Whether these devices, together, meet the claim's constraints: one constraint key, and a
// value of its own of the distinct property each.
bool meetConstraints(const ExtendedResourceClaim& claim,
                     const std::vector<const std::map<std::string, std::string>*>& properties);

// Whether devices for two units of one claim (ExtendedResourceClaim::units) may serve it
// together: for each constraint spanning both requests, both have its property, with the same
// value for a matchProperty and different values for a distinctProperty. True for units of
// different claims, or of one request.
bool sharedConstraintsMet(const ExtendedResourceClaim& a,
                          const std::map<std::string, std::string>& aProperties,
                          const ExtendedResourceClaim& b,
                          const std::map<std::string, std::string>& bProperties);

// sharedConstraintsMet's matchProperty half alone: for two groups of devices, each sharing its
// unit's matchProperty values, one device of each tells whether the groups may serve the claim
// together (their distinct values are for the allocator to choose among).
bool sharedValuesAgree(const ExtendedResourceClaim& a,
                       const std::map<std::string, std::string>& aProperties,
                       const ExtendedResourceClaim& b,
                       const std::map<std::string, std::string>& bProperties);

// suitability()'s two parts past the resource, for a caller that already grouped devices by
// resource and remembers the selector's answer per set of properties (the planner). For a
// claim of one request: a unit.
bool namedBy(const ExtendedResourceClaim& claim, const std::string& deviceName);
bool selectedBy(const ExtendedResourceClaim& claim,
                const std::map<std::string, std::string>& properties);

// Whether a container on the node can use the device: its nodeAffinity admits the node with
// these labels.
bool reachable(const ExtendedResource& device, const std::string& node,
               const std::map<std::string, std::string>& nodeLabels);

// What of a claim decides whether the devices an earlier bind gave it are free again.
struct ClaimAllocation {
  std::string uid;
  int64_t allocation = 0;  // status.allocation
  // Bound or Lost, or a status that cannot be read to say otherwise.
  bool holding = true;
};
ClaimAllocation allocationOf(const ExtendedResourceClaim& claim);

// allocationOf() the claim the device's claimRef names, as the caller's cache has it: `find`
// takes that claim's "namespace/name" key and returns a pointer to it (raw or shared), null when
// the cache has none. nullopt when the device names no claim the cache knows.
template <typename Find>
std::optional<ClaimAllocation> namedAllocation(const ExtendedResource& device, Find&& find) {
  if (!device.claimRef) {
    return std::nullopt;
  }
  const auto claim = find(objectKey(device.claimRef->ns, device.claimRef->name));
  return claim ? std::optional(allocationOf(*claim)) : std::nullopt;
}

// A release frees a claim's devices by its own status write alone: a device still Bound to the
// claim (same UID) is free once the claim no longer holds that allocation, that is when the
// claim shows the device's allocation count and holds nothing (released, or a bind undone),
// or shows a later count (bound again since: every bind writes each device it takes, with the
// new count, before the claim). A device showing a later count than the claim is mid-bind and
// held. Counts only go up and a claim's status moves from holding to not once per count, so a
// cache that lags never frees a device early: an older copy of the claim shows a count no
// higher, or the same count still holding. A device with no count (bound before binds were
// counted), or naming no UID, is freed only by a write of its own. The controller still writes
// such a device Available later, for people reading it (decideDevice); nothing waits for that.
bool freedByClaim(const ExtendedResource& device, const ClaimAllocation& claim);

// Whether the device may be given to a claim: valid, not being deleted, and either Available
// naming no claim, or freedByClaim by `claim`, the claim its claimRef names as the caller's
// cache has it (namedAllocation; nullopt when it has none: then only the first). The extender's
// index also withholds the names a Bound or Lost claim lists and the devices a bind in flight
// reserved (DeviceIndex).
bool offerable(const ExtendedResource& device,
               const std::optional<ClaimAllocation>& claim = std::nullopt);

// reachable() for a caller that does not know the node's labels (the controller watches no
// nodes): a term that tests labels counts as admitting the node; one that pins node names
// admits only those. An empty term admits nothing.
bool mayBeReachable(const ExtendedResource& device, const std::string& node);

}  // namespace ker

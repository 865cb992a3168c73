#pragma once

#include <string>
#include <vector>

#include "model/objects.h"

namespace ker {

// Everything the invariant check reads, as listed from the API at one moment.
struct ClusterSnapshot {
  std::vector<ExtendedResource> devices;
  std::vector<ExtendedResourceClaim> claims;
  std::vector<Pod> pods;
  std::vector<Node> nodes;
};

// Checks every invariant of the data model and returns one readable line per violation:
// - a device is in at most one claim's allocation (a Lost claim keeps the devices it still
//   lists);
// - a Bound device's claimRef names an existing Bound claim (same UID) that lists it, or one
//   whose release freed it (freedByClaim) and that no claim lists now, or a claim since deleted
//   while a pod the device's holders name still runs; and every device a Bound claim lists is
//   Bound to that claim, as its current allocation;
// - a device a Lost claim lost is Bound to no other claim (only to that one, once it is back);
// - every allocation satisfies its claim (resource, selector, named list, count) and each
//   device's node affinity matches the claim's node;
// - no claim is held by a pod that no longer exists (or by a finished pod), or that runs on
//   another node than the claim's; a shared claim lists each holder once and at most
//   kMaxClaimHolders of them; a claim that is not shareable has at most one holder;
// - every scheduled, running pod with claims holds all of them on its own node;
// - written conditions agree with the typed status they were derived from.
// Transient states of a bind or release in flight are violations too: check a quiet cluster,
// or check again until a check is clean (ker-check-invariants --settle).
std::vector<std::string> checkInvariants(const ClusterSnapshot& snapshot);

}  // namespace ker

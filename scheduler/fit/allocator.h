#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/objects.h"

namespace ker {

enum class ScoringStrategy { kBinpack, kSpread };

// How nodes are ranked and, on a node, devices chosen: the extender's --scoring and
// --topology-property.
struct Scoring {
  ScoringStrategy strategy = ScoringStrategy::kBinpack;
  // The device property naming a device's island (its NUMA node, PCIe root, NVLink domain):
  // devices sharing its value form one island, devices without it one more. Empty: islands are
  // not looked at, and devices are taken in the order given.
  std::string topologyProperty;
  bool operator==(const Scoring&) const = default;
};

// What giving a pod its devices costs a node, compared in this order: the earliest combination
// of firstAvailable alternatives first, whatever the strategy; then binpack prefers the least,
// spread the most.
struct NodeCost {
  // Which combination of the claims' firstAvailable alternatives fits (0: the first, or no
  // alternatives).
  uint32_t alternative = 0;
  // Σ k(2f − k) over the islands the devices come from, k taken of an island's f free matching
  // devices, plus K(2F − K) for the node's K of F: how far the sums of squared free devices
  // drop, a measure of how concentrated the free devices stay. Finishing a nearly used island
  // on a nearly full node costs least, breaking a whole island or node most, so the lowest
  // cost keeps the most islands and nodes whole for later multi-device requests. 0 without a
  // topology property.
  uint64_t fragmentation = 0;
  size_t leftover = 0;  // matching free devices left on the node
  auto operator<=>(const NodeCost&) const = default;
};

// The outcome of fitting a pod's claims onto one node's free devices.
struct Fit {
  bool fits = false;
  // claim key (namespace/name) -> chosen device names, when fits.
  std::map<std::string, std::vector<std::string>> assignment;
  // Devices that match at least one claim, free on the node; the scorer uses it.
  size_t matchingFree = 0;
  // NodeCost::fragmentation of the chosen devices, when fits with a topology property.
  uint64_t fragmentation = 0;
  // Why not, when !fits: reads well in a FailedScheduling event.
  std::string message;
};

// Finds distinct devices for every claim at once. Selectors may overlap, so this is a
// bipartite b-matching (each claim needs extendedResourceNum devices); augmenting paths find
// an assignment whenever one exists. `freeDevices` must already be restricted to devices that
// are Available, not held for another pod, and reachable from the node. Pure: no I/O.
Fit fitClaims(const std::vector<const ExtendedResourceClaim*>& claims,
              const std::vector<const ExtendedResource*>& freeDevices, const Scoring& scoring = {});

// What failure messages say of each claim, indexed like the claims: worked out once per
// request, as a filter may fail hundreds of nodes in the same words.
struct ClaimTexts {
  ClaimTexts() = default;
  explicit ClaimTexts(const std::vector<const ExtendedResourceClaim*>& claims);
  std::vector<std::string> keys;   // namespace/name
  std::vector<std::string> wants;  // "nvidia.com/gpu with type=k80"
  // What a claim's comparison could not read on some device: `memory "lots" is not a
  // quantity`; empty when nothing (NodeFitter fills it).
  std::vector<std::string> unparsed;
};

// fitClaims once eligibility is known: eligible[c] lists the indexes (into the node's free
// devices, deviceCount of them, matchingFree matching some claim) that claim c may take.
// `names`, when given, names each device so the assignment can be filled; without it only
// fits/message/matchingFree are worked out, which is all filter and prioritize need.
// `texts`, when given, must be the claims' ClaimTexts; otherwise a failure works them out.
// `properties`, each device's, is needed when a claim has constraints (fitConstrained: all its
// devices from one group sharing the constrained properties) or `scoring` names a topology
// property (islandOrder); without it both are ignored.
Fit fitEligible(const std::vector<const ExtendedResourceClaim*>& claims,
                const std::vector<std::vector<size_t>>& eligible, size_t deviceCount,
                size_t matchingFree, const std::vector<const std::string*>* names,
                const ClaimTexts* texts = nullptr,
                const std::vector<const std::map<std::string, std::string>*>* properties = nullptr,
                const Scoring* scoring = nullptr);

// "binpack" or "spread" (the --scoring flag); nullopt for anything else.
std::optional<ScoringStrategy> parseScoringStrategy(std::string_view name);
// The inverse: "binpack" or "spread".
const char* scoringStrategyName(ScoringStrategy strategy);

// Scores candidate nodes 0..10 (the extender maximum) by their NodeCost: binpack prefers the
// least (the fewest islands broken, then the fewest matching devices left), spread the most.
// Scores are normalised across the candidates of the earliest alternative so the best node
// gets 10 and the worst 0; a node that fits only as a later alternative, or does not fit
// (nullopt), scores 0. Indexed like the input.
std::vector<int> scoreNodes(const std::vector<std::optional<NodeCost>>& costs,
                            ScoringStrategy strategy);

// The filter's choice among the nodes a pod fits, best first: the one node it passes on to
// kube-scheduler (see Extender::filter) and where it holds the devices. `held` (an index, if
// any) is the node the pod already holds devices on, from an earlier attempt: a retry keeps
// it while it still fits. Then the nodes in the order scoreNodes ranks them, ties in the order
// given. Nodes that do not fit (nullopt) are left out, and only the first `limit` are ranked
// and returned (the filter tries a few; ranking thousands in full cost more than deciding
// them). Pure.
std::vector<size_t> rankNodes(const std::vector<std::optional<NodeCost>>& costs,
                              ScoringStrategy strategy, std::optional<size_t> held = {},
                              size_t limit = SIZE_MAX);

}  // namespace ker

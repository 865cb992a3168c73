#include "scheduler/fit/allocator.h"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <tuple>

#include "common/comma_list.h"
#include "common/label_selector.h"
#include "model/suitability.h"
#include "scheduler/fit/distinct_fit.h"

namespace ker {

namespace {

std::string claimKey(const ExtendedResourceClaim& c) {
  return unitKey(c);
}

// "nvidia.com/gpu with type=k80" or just "nvidia.com/gpu" when the selector is empty.
std::string describeWant(const ExtendedResourceClaim& c) {
  std::string want = c.rawResourceName;
  std::string sel = describe(c.metadataRequirements);
  if (!sel.empty()) {
    want += " with " + sel;
  }
  if (c.extendedResourceNames) {
    want += " among the " + std::to_string(c.extendedResourceNames->size()) + " named devices";
  }
  bool sharing = false;
  for (const auto& k : c.constraints) {
    if (!k.matchProperty.empty()) {
      want += sharing ? ", " : " sharing ";
      want += k.matchProperty;
      sharing = true;
    }
  }
  if (const std::string& distinct = distinctProperty(c); !distinct.empty()) {
    want += " each with its own ";
    want += distinct;
    if (const DeviceConstraint* spanning = spanningDistinct(c)) {
      want += " across requests ";
      want += joinNames(spanning->requests);
    }
  }
  return want;
}

// Kuhn's augmenting-path matching with each claim expanded into extendedResourceNum slots;
// a slot's edges are its claim's eligible devices, referenced rather than copied.
class SlotMatcher {
 public:
  SlotMatcher(const std::vector<std::vector<size_t>>& eligible, std::vector<size_t> slotClaim,
              size_t deviceCount)
      : eligible_(eligible),
        slotClaim_(std::move(slotClaim)),
        deviceToSlot_(deviceCount, kNone),
        visitedIn_(deviceCount, 0) {}

  // Returns the number of slots matched.
  size_t run() {
    size_t matched = 0;
    for (size_t slot = 0; slot < slotClaim_.size(); ++slot) {
      ++round_;  // a new round forgets the previous one's visits without clearing them
      if (augment(slot)) {
        ++matched;
      } else {
        // A claim slot that cannot be matched means the whole pod cannot fit; stop early.
        return matched;
      }
    }
    return matched;
  }

  size_t slotOfDevice(size_t device) const { return deviceToSlot_[device]; }
  size_t claimOfSlot(size_t slot) const { return slotClaim_[slot]; }
  static constexpr size_t kNone = static_cast<size_t>(-1);

 private:
  bool augment(size_t slot) {
    for (size_t dev : eligible_[slotClaim_[slot]]) {
      if (visitedIn_[dev] == round_) {
        continue;
      }
      visitedIn_[dev] = round_;
      if (deviceToSlot_[dev] == kNone || augment(deviceToSlot_[dev])) {
        deviceToSlot_[dev] = slot;
        return true;
      }
    }
    return false;
  }

  const std::vector<std::vector<size_t>>& eligible_;
  std::vector<size_t> slotClaim_;
  std::vector<size_t> deviceToSlot_;
  std::vector<size_t> visitedIn_;
  size_t round_ = 0;
};

// Whether taking, claim by claim, the first eligible devices not yet taken serves every
// claim. Usually it does, and then a matching exists without searching for one. Taken
// devices are a bitmask, so this answers only for nodes with at most 64 devices.
bool greedyFits(const std::vector<const ExtendedResourceClaim*>& claims,
                const std::vector<std::vector<size_t>>& eligible, size_t deviceCount) {
  if (deviceCount > 64) {
    return false;
  }
  uint64_t taken = 0;
  for (size_t c = 0; c < claims.size(); ++c) {
    auto want = std::max<int64_t>(claims[c]->extendedResourceNum, 0);
    for (size_t d : eligible[c]) {
      if (want == 0) {
        break;
      }
      if ((taken & (uint64_t{1} << d)) == 0) {
        taken |= uint64_t{1} << d;
        --want;
      }
    }
    if (want != 0) {
      return false;
    }
  }
  return true;
}

}  // namespace

Fit fitClaims(const std::vector<const ExtendedResourceClaim*>& claims,
              const std::vector<const ExtendedResource*>& freeDevices, const Scoring& scoring) {
  std::vector<std::vector<size_t>> eligible(claims.size());
  std::vector<bool> matchesAny(freeDevices.size(), false);
  for (size_t c = 0; c < claims.size(); ++c) {
    for (size_t d = 0; d < freeDevices.size(); ++d) {
      if (suits(*freeDevices[d], *claims[c])) {
        eligible[c].push_back(d);
        matchesAny[d] = true;
      }
    }
  }
  std::vector<const std::string*> names;
  std::vector<const std::map<std::string, std::string>*> properties;
  names.reserve(freeDevices.size());
  properties.reserve(freeDevices.size());
  for (const auto* d : freeDevices) {
    names.push_back(&d->meta.name);
    properties.push_back(&d->properties);
  }
  return fitEligible(claims, eligible, freeDevices.size(),
                     static_cast<size_t>(std::count(matchesAny.begin(), matchesAny.end(), true)),
                     &names, nullptr, &properties, &scoring);
}

ClaimTexts::ClaimTexts(const std::vector<const ExtendedResourceClaim*>& claims) {
  for (const auto* c : claims) {
    keys.push_back(claimKey(*c));
    wants.push_back(describeWant(*c));
  }
  unparsed.resize(claims.size());
}

namespace {

// Why fitDistinct found no fit, in the words of the claims it failed.
std::string distinctMiss(const std::vector<const ExtendedResourceClaim*>& claims,
                         const ClaimTexts& texts, const Distinctness& distinct,
                         const DistinctFit& found, size_t matchingFree) {
  if (found.miss == DistinctMiss::kValues) {
    const ExtendedResourceClaim& first = *claims[found.group];
    size_t want = 0;
    std::string requests;
    for (size_t c = 0; c < claims.size(); ++c) {
      if (distinct.group[c] == found.group) {
        want += static_cast<size_t>(std::max<int64_t>(claims[c]->extendedResourceNum, 0));
        requests += requests.empty() ? "" : ", ";
        requests += claims[c]->request;
      }
    }
    return "claim " + objectKey(first.meta.ns, first.meta.name) + ": requests " + requests +
           ": at most " + std::to_string(found.most) + " of " + std::to_string(want) +
           " free devices with a " + distinctProperty(first) + " of their own on this node";
  }
  std::string m = "claims ";
  for (size_t c = 0; c < claims.size(); ++c) {
    m += c != 0 ? ", " : "";
    m += texts.keys[c];
  }
  if (found.miss == DistinctMiss::kTries) {
    return m + ": no way of giving their devices values of their own found in " +
           std::to_string(kMaxValueChoices) + " tries on this node";
  }
  return m + ": the " + std::to_string(matchingFree) +
         " matching free devices on this node cannot serve every claim at once";
}

// fitEligible for claims without matchProperty constraints (or with their devices already
// restricted to one group each). `picks`, when given, receives the chosen devices of a fit.
Fit fitMatching(const std::vector<const ExtendedResourceClaim*>& claims,
                const std::vector<std::vector<size_t>>& eligible, size_t deviceCount,
                size_t matchingFree, Picks* picks, const ClaimTexts* texts,
                const Distinctness* distinct) {
  Fit fit;
  fit.matchingFree = matchingFree;
  std::optional<ClaimTexts> ownTexts;
  auto words = [&]() -> const ClaimTexts& {
    if (texts == nullptr && !ownTexts) {
      ownTexts.emplace(claims);
    }
    return texts != nullptr ? *texts : *ownTexts;
  };

  // Each claim on its own first: the message then names the claim that cannot be served.
  for (size_t c = 0; c < claims.size(); ++c) {
    const auto want = static_cast<size_t>(std::max<int64_t>(claims[c]->extendedResourceNum, 0));
    const size_t most =
        distinct != nullptr ? mostTaken(eligible[c], distinct->values[c]) : eligible[c].size();
    if (most < want) {
      const ClaimTexts& w = words();
      std::string& m = fit.message;
      m.reserve(48 + w.keys[c].size() + w.wants[c].size());
      m += "claim ";
      m += w.keys[c];
      m += ": ";
      m += std::to_string(most);
      m += " of ";
      m += std::to_string(want);
      m += " free ";
      m += w.wants[c];
      m += " on this node";
      if (!w.unparsed[c].empty()) {
        m += " (a device's ";
        m += w.unparsed[c];
        m += ")";
      }
      return fit;
    }
  }
  if (distinct != nullptr) {
    DistinctFit found = fitDistinct(claims, eligible, *distinct, deviceCount);
    if (!found.picks) {
      fit.message = distinctMiss(claims, words(), *distinct, found, matchingFree);
      return fit;
    }
    fit.fits = true;
    if (picks != nullptr) {
      *picks = std::move(*found.picks);
    }
    return fit;
  }
  // One claim with enough eligible devices fits by the check above, and takes the first
  // ones, as the matching below would.
  if (claims.size() == 1) {
    fit.fits = true;
    if (picks != nullptr) {
      const auto want = static_cast<size_t>(std::max<int64_t>(claims[0]->extendedResourceNum, 0));
      picks->assign(1, std::vector<size_t>(eligible[0].begin(), eligible[0].begin() + want));
    }
    return fit;
  }

  if (picks == nullptr && greedyFits(claims, eligible, deviceCount)) {
    fit.fits = true;
    return fit;
  }

  std::vector<size_t> slotClaim;
  for (size_t c = 0; c < claims.size(); ++c) {
    for (int64_t k = 0; k < claims[c]->extendedResourceNum; ++k) {
      slotClaim.push_back(c);
    }
  }
  const size_t totalWanted = slotClaim.size();
  SlotMatcher matcher(eligible, std::move(slotClaim), deviceCount);
  if (fit.matchingFree < totalWanted || matcher.run() < totalWanted) {
    std::ostringstream msg;
    msg << "claims ";
    for (size_t c = 0; c < claims.size(); ++c) {
      msg << (c ? ", " : "") << words().keys[c];
    }
    msg << ": need " << totalWanted << " distinct devices together";
    if (fit.matchingFree < totalWanted) {
      msg << ", only " << fit.matchingFree << " matching devices free on this node";
    } else {
      msg << "; the " << fit.matchingFree
          << " matching free devices on this node cannot serve every claim at once";
    }
    fit.message = msg.str();
    return fit;
  }
  fit.fits = true;
  if (picks == nullptr) {
    return fit;
  }
  picks->assign(claims.size(), {});
  for (size_t d = 0; d < deviceCount; ++d) {
    size_t slot = matcher.slotOfDevice(d);
    if (slot != SlotMatcher::kNone) {
      (*picks)[matcher.claimOfSlot(slot)].push_back(d);
    }
  }
  return fit;
}

// The most ways of grouping the constrained claims' devices tried on one node; past it the
// node does not fit (in practice a node has a handful of NUMA nodes or PCIe roots).
constexpr size_t kMaxGroupings = 4096;

// A constrained claim takes all its devices from one group of its eligible devices (those
// sharing the properties its constraints name). Tries the groupings, each claim's groups
// smallest first (the tightest fit leaves the larger groups whole for later claims; spread:
// largest first), and
// returns the first that serves every claim.
Fit fitConstrained(const std::vector<const ExtendedResourceClaim*>& claims,
                   const std::vector<std::vector<size_t>>& eligible, size_t deviceCount,
                   size_t matchingFree, Picks* picks, const ClaimTexts& texts,
                   const std::vector<const std::map<std::string, std::string>*>& properties,
                   ScoringStrategy strategy, const Distinctness* distinct) {
  std::vector<size_t> constrained;
  std::vector<std::vector<std::vector<size_t>>> candidates;
  for (size_t c = 0; c < claims.size(); ++c) {
    if (std::none_of(claims[c]->constraints.begin(), claims[c]->constraints.end(),
                     [](const DeviceConstraint& k) { return !k.matchProperty.empty(); })) {
      continue;
    }
    const auto want = static_cast<size_t>(std::max<int64_t>(claims[c]->extendedResourceNum, 0));
    std::map<std::string, std::vector<size_t>> groups;
    for (size_t d : eligible[c]) {
      if (auto key = constraintKey(*claims[c], *properties[d])) {
        groups[*key].push_back(d);
      }
    }
    std::vector<std::vector<size_t>> fitting;
    size_t largest = 0;
    for (auto& [key, devices] : groups) {
      largest = std::max(largest, devices.size());
      if (devices.size() >= want) {
        fitting.push_back(std::move(devices));
      }
    }
    if (fitting.empty()) {
      Fit fit;
      fit.matchingFree = matchingFree;
      fit.message = "claim " + texts.keys[c] + ": at most " + std::to_string(largest) + " of " +
                    std::to_string(want) + " free " + texts.wants[c] + " on this node";
      return fit;
    }
    std::stable_sort(fitting.begin(), fitting.end(), [&](const auto& a, const auto& b) {
      return strategy == ScoringStrategy::kSpread ? a.size() > b.size() : a.size() < b.size();
    });
    constrained.push_back(c);
    candidates.push_back(std::move(fitting));
  }
  // Two requests of one claim under a matchProperty constraint spanning both take groups with
  // the same value of it: a group's devices share every value its unit's constraints name, so
  // one device of each tells.
  auto agree = [&](const std::vector<size_t>& choice) {
    for (size_t i = 0; i < constrained.size(); ++i) {
      for (size_t j = i + 1; j < constrained.size(); ++j) {
        if (!sharedValuesAgree(*claims[constrained[i]], *properties[candidates[i][choice[i]][0]],
                               *claims[constrained[j]], *properties[candidates[j][choice[j]][0]])) {
          return false;
        }
      }
    }
    return true;
  };
  std::vector<size_t> choice(constrained.size(), 0);
  std::vector<std::vector<size_t>> restricted = eligible;
  std::optional<Fit> firstFailure;
  for (size_t tried = 0; tried < kMaxGroupings; ++tried) {
    if (agree(choice)) {
      for (size_t i = 0; i < constrained.size(); ++i) {
        restricted[constrained[i]] = candidates[i][choice[i]];
      }
      Fit fit = fitMatching(claims, restricted, deviceCount, matchingFree, picks, &texts, distinct);
      if (fit.fits) {
        return fit;
      }
      if (!firstFailure) {
        firstFailure = std::move(fit);
      }
    }
    size_t i = 0;  // the next grouping, as an odometer over the claims' groups
    while (i < choice.size() && ++choice[i] == candidates[i].size()) {
      choice[i++] = 0;
    }
    if (i == choice.size()) {
      break;
    }
  }
  if (!firstFailure) {
    Fit fit;
    fit.matchingFree = matchingFree;
    fit.message = "no value of the properties their constraints share serves every request of " +
                  std::string(constrained.size() > 1 ? "claims " : "claim ");
    for (size_t i = 0; i < constrained.size(); ++i) {
      fit.message += (i ? ", " : "") + texts.keys[constrained[i]];
    }
    fit.message += " together on this node";
    return fit;
  }
  firstFailure->message =
      "claims' devices must each share their constraints' properties; " + firstFailure->message;
  return *firstFailure;
}

// Each device's island (the topology property's value, "" for a device without it), and how
// many devices some claim may take each island holds, counted once per fit.
class Islands {
 public:
  Islands(const std::vector<const std::map<std::string, std::string>*>& properties,
          const std::string& property, const std::vector<std::vector<size_t>>& eligible,
          size_t deviceCount)
      : properties_(properties), property_(property), matching_(deviceCount, false) {
    for (const auto& list : eligible) {
      for (size_t d : list) {
        matching_[d] = true;
      }
    }
    for (size_t d = 0; d < deviceCount; ++d) {
      if (matching_[d]) {
        ++free_[of(d)];
      }
    }
  }
  const std::string& of(size_t device) const { return value(device, property_); }
  // Whether some claim may take the device.
  bool matching(size_t device) const { return matching_[device]; }
  // The matching devices per island.
  const std::map<std::string_view, size_t>& free() const { return free_; }
  // Another property of the device, "" when it has none.
  const std::string& value(size_t device, const std::string& property) const {
    static const std::string kNone;
    auto it = properties_[device]->find(property);
    return it == properties_[device]->end() ? kNone : it->second;
  }

 private:
  const std::vector<const std::map<std::string, std::string>*>& properties_;
  const std::string& property_;
  std::vector<bool> matching_;
  std::map<std::string_view, size_t> free_;
};

// The claims' eligible devices reordered so that the fits above, which take devices in list
// order, choose by island. Binpack is best fit: first the islands that can hold all a claim
// wants, fewest free devices first (their last devices before a whole island), then the
// others, most free first (spanning the fewest). Spread goes round-robin over the islands,
// most free first. The order depends only on each device's island and the claims it may
// serve (and their distinct properties' values), so interchangeable devices in any order give
// the same islands (the counted and exact paths of the planner agree on the cost).
std::vector<std::vector<size_t>> islandOrder(
    const std::vector<const ExtendedResourceClaim*>& claims,
    const std::vector<std::vector<size_t>>& eligible, size_t deviceCount, const Islands& islands,
    ScoringStrategy strategy) {
  std::vector<uint64_t> serves(deviceCount, 0);  // claim bits; past 64 claims, the first 64
  for (size_t c = 0; c < eligible.size() && c < 64; ++c) {
    for (size_t d : eligible[c]) {
      serves[d] |= uint64_t{1} << c;
    }
  }
  std::vector<size_t> order;
  for (size_t d = 0; d < deviceCount; ++d) {
    if (islands.matching(d)) {
      order.push_back(d);
    }
  }
  // Devices that differ in a claim's distinctProperty are not interchangeable either.
  std::vector<const std::string*> distinct;
  for (const auto* c : claims) {
    if (const std::string& p = distinctProperty(*c); !p.empty()) {
      distinct.push_back(&p);
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const std::string& ia = islands.of(a);
    const std::string& ib = islands.of(b);
    if (ia != ib) {
      return ia < ib;
    }
    if (serves[a] != serves[b]) {
      return serves[a] < serves[b];
    }
    for (const std::string* p : distinct) {
      if (int cmp = islands.value(a, *p).compare(islands.value(b, *p)); cmp != 0) {
        return cmp < 0;
      }
    }
    return false;
  });
  std::vector<size_t> position(deviceCount, 0);  // in island, then claims-served order
  std::vector<size_t> rank(deviceCount, 0);      // a device's place in its island
  std::vector<size_t> freeOf(deviceCount, 0);    // its island's free devices
  for (size_t k = 0; k < order.size(); ++k) {
    position[order[k]] = k;
    freeOf[order[k]] = islands.free().at(islands.of(order[k]));
    if (k > 0 && islands.of(order[k]) == islands.of(order[k - 1])) {
      rank[order[k]] = rank[order[k - 1]] + 1;
    }
  }
  std::vector<std::vector<size_t>> reordered = eligible;
  for (size_t c = 0; c < reordered.size(); ++c) {
    const auto want = static_cast<size_t>(std::max<int64_t>(claims[c]->extendedResourceNum, 0));
    auto key = [&](size_t d) {
      if (strategy == ScoringStrategy::kSpread) {
        return std::tuple(rank[d], SIZE_MAX - freeOf[d], position[d]);
      }
      const bool holdsAll = freeOf[d] >= want;
      return std::tuple(holdsAll ? size_t{0} : size_t{1},
                        holdsAll ? freeOf[d] : SIZE_MAX - freeOf[d], position[d]);
    };
    std::sort(reordered[c].begin(), reordered[c].end(),
              [&](size_t a, size_t b) { return key(a) < key(b); });
  }
  return reordered;
}

// NodeCost::fragmentation of taking `picks` from the node's matching free devices.
uint64_t fragmentation(const Picks& picks, const Islands& islands) {
  std::map<std::string_view, uint64_t> takenIn;
  for (const auto& chosen : picks) {
    for (size_t d : chosen) {
      ++takenIn[islands.of(d)];
    }
  }
  uint64_t cost = 0;
  uint64_t free = 0;
  uint64_t taken = 0;
  for (const auto& [island, f] : islands.free()) {
    const auto it = takenIn.find(island);
    const uint64_t k = it == takenIn.end() ? 0 : it->second;
    cost += k * (2 * f - k);
    free += f;
    taken += k;
  }
  return cost + taken * (2 * free - taken);
}

}  // namespace

Fit fitEligible(const std::vector<const ExtendedResourceClaim*>& claims,
                const std::vector<std::vector<size_t>>& eligible, size_t deviceCount,
                size_t matchingFree, const std::vector<const std::string*>* names,
                const ClaimTexts* texts,
                const std::vector<const std::map<std::string, std::string>*>* properties,
                const Scoring* scoring) {
  auto anyClaim = [&](auto&& pred) {
    return properties != nullptr && std::any_of(claims.begin(), claims.end(), [&](const auto* c) {
             return std::any_of(c->constraints.begin(), c->constraints.end(), pred);
           });
  };
  const bool constrained =
      anyClaim([](const DeviceConstraint& k) { return !k.matchProperty.empty(); });
  std::optional<Distinctness> distinct;
  if (properties != nullptr) {
    distinct = distinctness(claims, eligible, *properties);
  }
  const bool byIsland =
      properties != nullptr && scoring != nullptr && !scoring->topologyProperty.empty();
  const ScoringStrategy strategy =
      scoring != nullptr ? scoring->strategy : ScoringStrategy::kBinpack;
  std::optional<ClaimTexts> ownTexts;
  if ((constrained || distinct) && texts == nullptr) {
    texts = &ownTexts.emplace(claims);
  }
  std::optional<Islands> islands;
  std::vector<std::vector<size_t>> reordered;
  if (byIsland) {
    islands.emplace(*properties, scoring->topologyProperty, eligible, deviceCount);
    reordered = islandOrder(claims, eligible, deviceCount, *islands, strategy);
  }
  const auto& lists = byIsland ? reordered : eligible;
  Picks picks;
  Picks* wanted = names != nullptr || byIsland ? &picks : nullptr;
  const Distinctness* values = distinct ? &*distinct : nullptr;
  Fit fit = constrained
                ? fitConstrained(claims, lists, deviceCount, matchingFree, wanted, *texts,
                                 *properties, strategy, values)
                : fitMatching(claims, lists, deviceCount, matchingFree, wanted, texts, values);
  if (!fit.fits || wanted == nullptr) {
    return fit;
  }
  if (byIsland) {
    fit.fragmentation = fragmentation(picks, *islands);
  }
  if (names != nullptr) {
    for (size_t c = 0; c < picks.size(); ++c) {
      auto& chosen = fit.assignment[claimKey(*claims[c])];
      for (size_t d : picks[c]) {
        chosen.push_back(*(*names)[d]);
      }
      std::sort(chosen.begin(), chosen.end());
    }
  }
  return fit;
}

std::optional<ScoringStrategy> parseScoringStrategy(std::string_view name) {
  for (ScoringStrategy s : {ScoringStrategy::kBinpack, ScoringStrategy::kSpread}) {
    if (name == scoringStrategyName(s)) {
      return s;
    }
  }
  return std::nullopt;
}

const char* scoringStrategyName(ScoringStrategy strategy) {
  return strategy == ScoringStrategy::kSpread ? "spread" : "binpack";
}

std::vector<int> scoreNodes(const std::vector<std::optional<NodeCost>>& all,
                            ScoringStrategy strategy) {
  uint32_t earliest = UINT32_MAX;
  for (const auto& c : all) {
    if (c) {
      earliest = std::min(earliest, c->alternative);
    }
  }
  std::vector<std::optional<NodeCost>> costs(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i] && all[i]->alternative == earliest) {
      costs[i] = all[i];
    }
  }
  // One number per node that orders as NodeCost does: fragmentation first, then leftover.
  size_t mostLeft = 0;
  for (const auto& c : costs) {
    if (c) {
      mostLeft = std::max(mostLeft, c->leftover);
    }
  }
  auto value = [&](const NodeCost& c) { return c.fragmentation * (mostLeft + 1) + c.leftover; };
  std::vector<int> scores(costs.size(), 0);
  uint64_t lo = UINT64_MAX;
  uint64_t hi = 0;
  for (const auto& c : costs) {
    if (c) {
      lo = std::min(lo, value(*c));
      hi = std::max(hi, value(*c));
    }
  }
  for (size_t i = 0; i < costs.size(); ++i) {
    if (!costs[i]) {
      continue;
    }
    if (hi == lo) {
      scores[i] = 10;
      continue;
    }
    // Fraction of the way from the best to the worst candidate, in integer arithmetic so the
    // result is exact and stable.
    const uint64_t v = value(*costs[i]);
    const uint64_t fromBest = strategy == ScoringStrategy::kBinpack ? v - lo : hi - v;
    scores[i] = static_cast<int>(10 - (fromBest * 10 + (hi - lo) / 2) / (hi - lo));
  }
  return scores;
}

std::vector<size_t> rankNodes(const std::vector<std::optional<NodeCost>>& costs,
                              ScoringStrategy strategy, std::optional<size_t> held, size_t limit) {
  std::vector<size_t> order;
  const bool keepHeld = held && *held < costs.size() && costs[*held];
  if (keepHeld) {
    order.push_back(*held);
  }
  const size_t first = order.size();
  for (size_t i = 0; i < costs.size(); ++i) {
    if (costs[i] && i != held) {
      order.push_back(i);
    }
  }
  // Ties in the order given: the index decides last, so a partial sort is as stable as a
  // full one.
  auto before = [&](size_t a, size_t b) {
    const NodeCost& x = *costs[a];
    const NodeCost& y = *costs[b];
    if (x.alternative != y.alternative) {
      return x.alternative < y.alternative;
    }
    if (x != y) {
      return strategy == ScoringStrategy::kBinpack ? x < y : x > y;
    }
    return a < b;
  };
  const size_t ranked = std::min(order.size(), limit);
  if (ranked < order.size()) {
    std::partial_sort(order.begin() + static_cast<ptrdiff_t>(first),
                      order.begin() + static_cast<ptrdiff_t>(std::max(ranked, first)), order.end(),
                      before);
    order.resize(ranked);
  } else {
    std::sort(order.begin() + static_cast<ptrdiff_t>(first), order.end(), before);
  }
  return order;
}

}  // namespace ker

#include "scheduler/allocator.h"

#include <algorithm>
#include <cstdint>
#include <sstream>

#include "common/label_selector.h"
#include "model/suitability.h"

namespace ker {

namespace {

std::string claimKey(const ExtendedResourceClaim& c) {
  return objectKey(c.meta.ns, c.meta.name);
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
  for (size_t i = 0; i < c.constraints.size(); ++i) {
    want += (i == 0 ? " sharing " : ", ") + c.constraints[i].matchProperty;
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
              const std::vector<const ExtendedResource*>& freeDevices) {
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
                     &names, nullptr, &properties);
}

ClaimTexts::ClaimTexts(const std::vector<const ExtendedResourceClaim*>& claims) {
  for (const auto* c : claims) {
    keys.push_back(claimKey(*c));
    wants.push_back(describeWant(*c));
  }
  unparsed.resize(claims.size());
}

namespace {

// fitEligible for claims without constraints (or with their devices already restricted to
// one group each).
Fit fitMatching(const std::vector<const ExtendedResourceClaim*>& claims,
                const std::vector<std::vector<size_t>>& eligible, size_t deviceCount,
                size_t matchingFree, const std::vector<const std::string*>* names,
                const ClaimTexts* texts) {
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
    if (eligible[c].size() < want) {
      const ClaimTexts& w = words();
      std::string& m = fit.message;
      m.reserve(48 + w.keys[c].size() + w.wants[c].size());
      m += "claim ";
      m += w.keys[c];
      m += ": ";
      m += std::to_string(eligible[c].size());
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
  // One claim with enough eligible devices fits by the check above, and takes the first
  // ones, as the matching below would.
  if (claims.size() == 1) {
    fit.fits = true;
    if (names != nullptr) {
      auto& chosen = fit.assignment[claimKey(*claims[0])];
      const auto want = static_cast<size_t>(std::max<int64_t>(claims[0]->extendedResourceNum, 0));
      for (size_t k = 0; k < want; ++k) {
        chosen.push_back(*(*names)[eligible[0][k]]);
      }
      std::sort(chosen.begin(), chosen.end());
    }
    return fit;
  }

  if (names == nullptr && greedyFits(claims, eligible, deviceCount)) {
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
  if (names == nullptr) {
    return fit;
  }
  for (size_t d = 0; d < deviceCount; ++d) {
    size_t slot = matcher.slotOfDevice(d);
    if (slot != SlotMatcher::kNone) {
      fit.assignment[claimKey(*claims[matcher.claimOfSlot(slot)])].push_back(*(*names)[d]);
    }
  }
  for (auto& [key, chosen] : fit.assignment) {
    std::sort(chosen.begin(), chosen.end());
  }
  return fit;
}

// The most ways of grouping the constrained claims' devices tried on one node; past it the
// node does not fit (in practice a node has a handful of NUMA nodes or PCIe roots).
constexpr size_t kMaxGroupings = 4096;

// A constrained claim takes all its devices from one group of its eligible devices (those
// sharing the properties its constraints name). Tries the groupings, each claim's groups
// smallest first (the tightest fit leaves the larger groups whole for later claims), and
// returns the first that serves every claim.
Fit fitConstrained(const std::vector<const ExtendedResourceClaim*>& claims,
                   const std::vector<std::vector<size_t>>& eligible, size_t deviceCount,
                   size_t matchingFree, const std::vector<const std::string*>* names,
                   const ClaimTexts& texts,
                   const std::vector<const std::map<std::string, std::string>*>& properties) {
  std::vector<size_t> constrained;
  std::vector<std::vector<std::vector<size_t>>> candidates;
  for (size_t c = 0; c < claims.size(); ++c) {
    if (claims[c]->constraints.empty()) {
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
    std::stable_sort(fitting.begin(), fitting.end(),
                     [](const auto& a, const auto& b) { return a.size() < b.size(); });
    constrained.push_back(c);
    candidates.push_back(std::move(fitting));
  }
  std::vector<size_t> choice(constrained.size(), 0);
  std::vector<std::vector<size_t>> restricted = eligible;
  std::optional<Fit> firstFailure;
  for (size_t tried = 0; tried < kMaxGroupings; ++tried) {
    for (size_t i = 0; i < constrained.size(); ++i) {
      restricted[constrained[i]] = candidates[i][choice[i]];
    }
    Fit fit = fitMatching(claims, restricted, deviceCount, matchingFree, names, &texts);
    if (fit.fits) {
      return fit;
    }
    if (!firstFailure) {
      firstFailure = std::move(fit);
    }
    size_t i = 0;  // the next grouping, as an odometer over the claims' groups
    while (i < choice.size() && ++choice[i] == candidates[i].size()) {
      choice[i++] = 0;
    }
    if (i == choice.size()) {
      break;
    }
  }
  firstFailure->message =
      "claims' devices must each share their constraints' properties; " + firstFailure->message;
  return *firstFailure;
}

}  // namespace

Fit fitEligible(const std::vector<const ExtendedResourceClaim*>& claims,
                const std::vector<std::vector<size_t>>& eligible, size_t deviceCount,
                size_t matchingFree, const std::vector<const std::string*>* names,
                const ClaimTexts* texts,
                const std::vector<const std::map<std::string, std::string>*>* properties) {
  const bool constrained =
      properties != nullptr && std::any_of(claims.begin(), claims.end(),
                                           [](const auto* c) { return !c->constraints.empty(); });
  if (!constrained) {
    return fitMatching(claims, eligible, deviceCount, matchingFree, names, texts);
  }
  std::optional<ClaimTexts> ownTexts;
  if (texts == nullptr) {
    ownTexts.emplace(claims);
  }
  return fitConstrained(claims, eligible, deviceCount, matchingFree, names,
                        texts != nullptr ? *texts : *ownTexts, *properties);
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

std::vector<int> scoreNodes(const std::vector<std::optional<size_t>>& leftover,
                            ScoringStrategy strategy) {
  std::vector<int> scores(leftover.size(), 0);
  size_t lo = SIZE_MAX;
  size_t hi = 0;
  for (const auto& l : leftover) {
    if (l) {
      lo = std::min(lo, *l);
      hi = std::max(hi, *l);
    }
  }
  for (size_t i = 0; i < leftover.size(); ++i) {
    if (!leftover[i]) {
      continue;
    }
    if (hi == lo) {
      scores[i] = 10;
      continue;
    }
    // Fraction of the way from the best to the worst candidate, in integer arithmetic so the
    // result is exact and stable.
    const size_t fromBest =
        strategy == ScoringStrategy::kBinpack ? *leftover[i] - lo : hi - *leftover[i];
    scores[i] = static_cast<int>(10 - (fromBest * 10 + (hi - lo) / 2) / (hi - lo));
  }
  return scores;
}

std::vector<size_t> rankNodes(const std::vector<std::optional<size_t>>& leftover,
                              ScoringStrategy strategy, std::optional<size_t> held) {
  std::vector<size_t> order;
  for (size_t i = 0; i < leftover.size(); ++i) {
    if (leftover[i] && i != held) {
      order.push_back(i);
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return strategy == ScoringStrategy::kBinpack ? *leftover[a] < *leftover[b]
                                                 : *leftover[a] > *leftover[b];
  });
  if (held && *held < leftover.size() && leftover[*held]) {
    order.insert(order.begin(), *held);
  }
  return order;
}

}  // namespace ker

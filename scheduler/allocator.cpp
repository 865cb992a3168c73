#include "scheduler/allocator.h"

#include <algorithm>
#include <sstream>

#include "common/label_selector.h"

namespace ker {

bool deviceSatisfiesClaim(const ExtendedResource& device, const ExtendedResourceClaim& claim) {
  if (device.rawResourceName != claim.rawResourceName) {
    return false;
  }
  if (claim.extendedResourceNames) {
    const auto& names = *claim.extendedResourceNames;
    if (std::find(names.begin(), names.end(), device.meta.name) == names.end()) {
      return false;
    }
  }
  return matches(claim.metadataRequirements, device.properties);
}

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
  return want;
}

// Kuhn's augmenting-path matching with each claim expanded into extendedResourceNum slots.
class SlotMatcher {
 public:
  SlotMatcher(std::vector<std::vector<size_t>> slotEdges, size_t deviceCount)
      : edges_(std::move(slotEdges)), deviceToSlot_(deviceCount, kNone) {}

  // Returns the number of slots matched.
  size_t run() {
    size_t matched = 0;
    for (size_t slot = 0; slot < edges_.size(); ++slot) {
      visited_.assign(deviceToSlot_.size(), false);
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
  static constexpr size_t kNone = static_cast<size_t>(-1);

 private:
  bool augment(size_t slot) {
    for (size_t dev : edges_[slot]) {
      if (visited_[dev]) {
        continue;
      }
      visited_[dev] = true;
      if (deviceToSlot_[dev] == kNone || augment(deviceToSlot_[dev])) {
        deviceToSlot_[dev] = slot;
        return true;
      }
    }
    return false;
  }

  std::vector<std::vector<size_t>> edges_;
  std::vector<size_t> deviceToSlot_;
  std::vector<bool> visited_;
};

}  // namespace

Fit fitClaims(const std::vector<const ExtendedResourceClaim*>& claims,
              const std::vector<const ExtendedResource*>& freeDevices) {
  Fit fit;
  std::vector<std::vector<size_t>> eligible(claims.size());
  std::vector<bool> matchesAny(freeDevices.size(), false);
  for (size_t c = 0; c < claims.size(); ++c) {
    for (size_t d = 0; d < freeDevices.size(); ++d) {
      if (deviceSatisfiesClaim(*freeDevices[d], *claims[c])) {
        eligible[c].push_back(d);
        matchesAny[d] = true;
      }
    }
  }
  fit.matchingFree = static_cast<size_t>(std::count(matchesAny.begin(), matchesAny.end(), true));

  // Each claim on its own first: the message then names the claim that cannot be served.
  for (size_t c = 0; c < claims.size(); ++c) {
    const auto want = static_cast<size_t>(std::max<int64_t>(claims[c]->extendedResourceNum, 0));
    if (eligible[c].size() < want) {
      fit.message = "claim " + claimKey(*claims[c]) + ": " + std::to_string(eligible[c].size()) +
                    " of " + std::to_string(want) + " free " + describeWant(*claims[c]) +
                    " on this node";
      return fit;
    }
  }

  std::vector<std::vector<size_t>> slotEdges;
  std::vector<size_t> slotClaim;
  size_t totalWanted = 0;
  for (size_t c = 0; c < claims.size(); ++c) {
    for (int64_t k = 0; k < claims[c]->extendedResourceNum; ++k) {
      slotEdges.push_back(eligible[c]);
      slotClaim.push_back(c);
    }
    totalWanted += static_cast<size_t>(claims[c]->extendedResourceNum);
  }
  SlotMatcher matcher(std::move(slotEdges), freeDevices.size());
  if (matcher.run() < totalWanted) {
    std::ostringstream msg;
    msg << "claims ";
    for (size_t c = 0; c < claims.size(); ++c) {
      msg << (c ? ", " : "") << claimKey(*claims[c]);
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
  for (size_t d = 0; d < freeDevices.size(); ++d) {
    size_t slot = matcher.slotOfDevice(d);
    if (slot != SlotMatcher::kNone) {
      fit.assignment[claimKey(*claims[slotClaim[slot]])].push_back(freeDevices[d]->meta.name);
    }
  }
  for (auto& [key, names] : fit.assignment) {
    std::sort(names.begin(), names.end());
  }
  fit.fits = true;
  return fit;
}

std::map<std::string, int> scoreNodes(const std::map<std::string, size_t>& leftoverByNode,
                                      ScoringStrategy strategy) {
  std::map<std::string, int> scores;
  if (leftoverByNode.empty()) {
    return scores;
  }
  auto [minIt, maxIt] =
      std::minmax_element(leftoverByNode.begin(), leftoverByNode.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; });
  const size_t lo = minIt->second;
  const size_t hi = maxIt->second;
  for (const auto& [node, leftover] : leftoverByNode) {
    if (hi == lo) {
      scores[node] = 10;
      continue;
    }
    // Fraction of the way from the best to the worst candidate, in integer arithmetic so the
    // result is exact and stable.
    size_t fromBest = strategy == ScoringStrategy::kBinpack ? leftover - lo : hi - leftover;
    scores[node] = static_cast<int>(10 - (fromBest * 10 + (hi - lo) / 2) / (hi - lo));
  }
  return scores;
}

}  // namespace ker

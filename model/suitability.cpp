#include "model/suitability.h"

#include <algorithm>
#include <set>

#include "common/label_selector.h"
#include "common/node_selector.h"
#include "model/device_transitions.h"

namespace ker {

bool namedBy(const ExtendedResourceClaim& claim, const std::string& deviceName) {
  if (!claim.extendedResourceNames) {
    return true;
  }
  const auto& names = *claim.extendedResourceNames;
  return std::find(names.begin(), names.end(), deviceName) != names.end();
}

bool selectedBy(const ExtendedResourceClaim& claim,
                const std::map<std::string, std::string>& properties) {
  if (!constraintKey(claim, properties)) {
    return false;
  }
  if (claim.firstAvailable.empty()) {
    return matches(claim.metadataRequirements, properties);
  }
  if (const ClaimAlternative* a = claim.chosen()) {
    return matches(a->metadataRequirements, properties);
  }
  return std::any_of(
      claim.firstAvailable.begin(), claim.firstAvailable.end(),
      [&](const ClaimAlternative& a) { return matches(a.metadataRequirements, properties); });
}

std::optional<std::string> constraintKey(const ExtendedResourceClaim& claim,
                                         const std::map<std::string, std::string>& properties) {
  std::string key;
  for (const auto& c : claim.constraints) {
    auto it = properties.find(c.property());
    if (it == properties.end()) {
      return std::nullopt;
    }
    if (!c.matchProperty.empty()) {
      // A separator no value can hold keeps ("a", "b,c") apart from ("a,b", "c").
      key.append(it->second).push_back('\0');
    }
  }
  return key;
}

const std::string& distinctProperty(const ExtendedResourceClaim& claim) {
  static const std::string kNone;
  for (const auto& c : claim.constraints) {
    if (!c.distinctProperty.empty()) {
      return c.distinctProperty;
    }
  }
  return kNone;
}

bool meetConstraints(const ExtendedResourceClaim& claim,
                     const std::vector<const std::map<std::string, std::string>*>& properties) {
  std::optional<std::string> first;
  std::set<std::string> seen;
  const std::string& distinct = distinctProperty(claim);
  for (const auto* p : properties) {
    auto key = constraintKey(claim, *p);
    if (!key || (first && *key != *first)) {
      return false;
    }
    first = std::move(key);
    if (!distinct.empty() && !seen.insert(p->at(distinct)).second) {
      return false;
    }
  }
  return true;
}

namespace {

// How close a device comes to serving a unit, closest first.
int closeness(Unsuited u) {
  switch (u) {
    case Unsuited::kNone:
      return 0;
    case Unsuited::kSelectorMismatch:
      return 1;
    case Unsuited::kNotNamed:
      return 2;
    case Unsuited::kOtherResource:
      break;
  }
  return 3;
}

// Whether, for each of a's constraints spanning b's request, both devices have its property and
// `check` accepts the constraint given whether their values are the same.
template <class Check>
bool everySpanning(const ExtendedResourceClaim& a,
                   const std::map<std::string, std::string>& aProperties,
                   const ExtendedResourceClaim& b,
                   const std::map<std::string, std::string>& bProperties, Check check) {
  if (a.request == b.request || a.meta.uid != b.meta.uid || a.meta.name != b.meta.name ||
      a.meta.ns != b.meta.ns) {
    return true;
  }
  for (const auto& k : a.constraints) {
    if (std::find(k.requests.begin(), k.requests.end(), b.request) == k.requests.end()) {
      continue;
    }
    auto x = aProperties.find(k.property());
    auto y = bProperties.find(k.property());
    if (x == aProperties.end() || y == bProperties.end() || !check(k, x->second == y->second)) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool sharedValuesAgree(const ExtendedResourceClaim& a,
                       const std::map<std::string, std::string>& aProperties,
                       const ExtendedResourceClaim& b,
                       const std::map<std::string, std::string>& bProperties) {
  return everySpanning(a, aProperties, b, bProperties, [](const DeviceConstraint& k, bool same) {
    return k.matchProperty.empty() || same;
  });
}

bool sharedConstraintsMet(const ExtendedResourceClaim& a,
                          const std::map<std::string, std::string>& aProperties,
                          const ExtendedResourceClaim& b,
                          const std::map<std::string, std::string>& bProperties) {
  return everySpanning(a, aProperties, b, bProperties, [](const DeviceConstraint& k, bool same) {
    return k.matchProperty.empty() != same;
  });
}

Unsuited suitability(const ExtendedResource& device, const ExtendedResourceClaim& claim) {
  if (!claim.requests.empty()) {
    const auto units = claim.units();
    for (const auto& unit : units) {
      const auto& names = unit.allocated;
      if (std::find(names.begin(), names.end(), device.meta.name) != names.end()) {
        return suitability(device, unit);
      }
    }
    Unsuited closest = Unsuited::kOtherResource;
    for (const auto& unit : units) {
      if (const Unsuited u = suitability(device, unit); closeness(u) < closeness(closest)) {
        closest = u;
      }
    }
    return closest;
  }
  if (device.rawResourceName != claim.rawResourceName) {
    return Unsuited::kOtherResource;
  }
  if (!namedBy(claim, device.meta.name)) {
    return Unsuited::kNotNamed;
  }
  if (!selectedBy(claim, device.properties)) {
    return Unsuited::kSelectorMismatch;
  }
  return Unsuited::kNone;
}

bool reachable(const ExtendedResource& device, const std::string& node,
               const std::map<std::string, std::string>& nodeLabels) {
  return matches(device.nodeAffinity, node, nodeLabels);
}

ClaimAllocation allocationOf(const ExtendedResourceClaim& claim) {
  return {claim.meta.uid, claim.allocation,
          !claim.statusReadable || claim.phase != ClaimPhase::kPending};
}

bool freedByClaim(const ExtendedResource& device, const ClaimAllocation& claim) {
  if (device.phase != DevicePhase::kBound || !device.claimRef || device.claimRef->uid.empty() ||
      device.claimRef->uid != claim.uid || device.allocation == 0) {
    return false;
  }
  return claim.allocation > device.allocation ||
         (claim.allocation == device.allocation && !claim.holding);
}

bool offerable(const ExtendedResource& device, const std::optional<ClaimAllocation>& claim) {
  if (!device.invalid.empty() || device.meta.deleting) {
    return false;
  }
  if (device.phase == DevicePhase::kAvailable && !device.claimRef) {
    return true;
  }
  return claim && freedByClaim(device, *claim) && !markedUnhealthy(device);
}

bool mayBeReachable(const ExtendedResource& device, const std::string& node) {
  const auto& terms = device.nodeAffinity.terms;
  return std::any_of(terms.begin(), terms.end(), [&](const NodeSelectorTerm& term) {
    if (term.matchFields.empty()) {
      return !term.matchExpressions.empty();
    }
    return matches(NodeSelector{{NodeSelectorTerm{{}, term.matchFields}}}, node, {});
  });
}

}  // namespace ker

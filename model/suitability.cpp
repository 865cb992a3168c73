#include "model/suitability.h"

#include <algorithm>

#include "common/label_selector.h"
#include "common/node_selector.h"

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
  return matches(claim.metadataRequirements, properties);
}

Unsuited suitability(const ExtendedResource& device, const ExtendedResourceClaim& claim) {
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

bool offerable(const ExtendedResource& device) {
  return device.invalid.empty() && device.phase == DevicePhase::kAvailable && !device.claimRef &&
         !device.meta.deleting;
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

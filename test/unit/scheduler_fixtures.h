#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/objects.h"
#include "scheduler/fit/allocator.h"

namespace ker::testing {

// A device as the index and the planner hold it.
inline std::shared_ptr<const ExtendedResource> ptr(ExtendedResource d) {
  return std::make_shared<const ExtendedResource>(std::move(d));
}

// A device pinned to one node by matchFields metadata.name, as most real devices are.
inline ExtendedResource device(const std::string& name, const std::string& node,
                               std::map<std::string, std::string> props,
                               const std::string& res = "nvidia.com/gpu") {
  ExtendedResource d;
  d.meta.name = name;
  d.meta.uid = "uid-" + name;
  d.rawResourceName = res;
  d.deviceID = name + "-id";
  d.properties = std::move(props);
  d.nodeAffinity.terms.push_back(
      NodeSelectorTerm{{}, {{"metadata.name", SelectorOperator::kIn, {node}}}});
  return d;
}

inline ExtendedResourceClaim claim(const std::string& name, int64_t num,
                                   std::map<std::string, std::string> matchLabels = {},
                                   const std::string& res = "nvidia.com/gpu",
                                   const std::string& ns = "default") {
  ExtendedResourceClaim c;
  c.meta.name = name;
  c.meta.ns = ns;
  c.meta.uid = "uid-" + name;
  c.rawResourceName = res;
  c.extendedResourceNum = num;
  c.metadataRequirements.matchLabels = std::move(matchLabels);
  return c;
}

inline std::vector<const ExtendedResource*> ptrs(const std::vector<ExtendedResource>& v) {
  std::vector<const ExtendedResource*> out;
  for (const auto& d : v) {
    out.push_back(&d);
  }
  return out;
}

// Node costs that differ only in the matching devices left, as without a topology property.
inline std::vector<std::optional<NodeCost>> leftovers(
    std::initializer_list<std::optional<size_t>> left) {
  std::vector<std::optional<NodeCost>> out;
  for (const auto& l : left) {
    out.push_back(l ? std::optional<NodeCost>(NodeCost{.leftover = *l}) : std::nullopt);
  }
  return out;
}

}  // namespace ker::testing

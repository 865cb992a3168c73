#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/allocator.h"
#include "scheduler/binder.h"
#include "scheduler/device_index.h"
#include "scheduler/extender_wire.h"
#include "scheduler/planner.h"

namespace ker {

// Labels of a node from the extender's own cache (nodeCacheCapable mode); nullopt when the
// node is not known.
using CachedNodeLabels =
    std::function<std::optional<std::map<std::string, std::string>>(const std::string& node)>;

struct ExtenderStats {
  std::atomic<uint64_t> nodesPassed{0};
  std::atomic<uint64_t> nodesFailed{0};
  std::atomic<uint64_t> podsWithoutClaims{0};
};

// The extender's three verbs over the in-memory state; no HTTP here.
class Extender {
 public:
  Extender(DeviceIndex& index, ClaimLookup claims, CachedNodeLabels nodeLabels, Binder& binder,
           ScoringStrategy scoring);

  FilterReply filter(const ExtenderArgs& args);
  std::vector<std::pair<std::string, int>> prioritize(const ExtenderArgs& args);
  std::string bind(const BindingArgs& args) { return binder_.bind(args); }

  const ExtenderStats& stats() const { return stats_; }

 private:
  // Labels of the i-th candidate: from the request's Node object, else the cache.
  std::optional<std::map<std::string, std::string>> labelsOf(const ExtenderArgs& args, size_t i);

  DeviceIndex& index_;
  ClaimLookup claims_;
  CachedNodeLabels nodeLabels_;
  Binder& binder_;
  ScoringStrategy scoring_;
  ExtenderStats stats_;
};

}  // namespace ker

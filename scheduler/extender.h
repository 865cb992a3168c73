#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
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

// A node from the extender's own cache (nodeCacheCapable mode); null when it is not known.
using CachedNode = std::function<std::shared_ptr<const Node>(const std::string& node)>;

struct ExtenderStats {
  std::atomic<uint64_t> nodesPassed{0};
  std::atomic<uint64_t> nodesFailed{0};
  std::atomic<uint64_t> podsWithoutClaims{0};
};

// The extender's three verbs over the in-memory state; no HTTP here.
class Extender {
 public:
  Extender(DeviceIndex& index, ClaimLookup claims, CachedNode nodes, Binder& binder,
           ScoringStrategy scoring);

  FilterReply filter(const ExtenderArgs& args);
  // Scores by node name; the names are views of args.nodeNames.
  std::vector<std::pair<std::string_view, int>> prioritize(const ExtenderArgs& args);
  std::string bind(const BindingArgs& args) { return binder_.bind(args); }

  const ExtenderStats& stats() const { return stats_; }

 private:
  // Fits the pod on each candidate in turn: fn(i, NodePlan*), which may take from the plan,
  // or fn(i, nullptr) for a node the extender does not know.
  template <class Fn>
  void planEach(const ExtenderArgs& args, NodeFitter& fitter, bool withMessage, Fn&& fn);

  DeviceIndex& index_;
  ClaimLookup claims_;
  CachedNode nodes_;
  Binder& binder_;
  ScoringStrategy scoring_;
  ExtenderStats stats_;
};

}  // namespace ker

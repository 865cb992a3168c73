#pragma once

#include <atomic>
#include <chrono>
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

  using Clock = DeviceIndex::Clock;
  // How long the devices a filter holds for a pod stay held when no bind comes for it.
  static constexpr std::chrono::seconds kHoldTtl = DeviceIndex::kHoldTtl;

  // Passes a pod with claims to pend on at most one node: the best the scoring strategy
  // finds, whose devices it then holds for the pod (DeviceIndex::hold) until its bind. See
  // decide().
  FilterReply filter(const ExtenderArgs& args, Clock::time_point now = Clock::now());
  // Scores by node name; the names are views of args.nodeNames.
  std::vector<std::pair<std::string_view, int>> prioritize(const ExtenderArgs& args);
  std::string bind(const BindingArgs& args) { return binder_.bind(args); }
  // The pod was deleted, or bound by anyone: what the filter held for it is let go.
  void forgetPod(const std::string& podUid) { index_.dropHolds(podUid); }

  const ExtenderStats& stats() const { return stats_; }

 private:
  // Fits the pod on each candidate in turn: fn(i, NodePlan*), which may take from the plan,
  // or fn(i, nullptr) for a node the extender does not know.
  template <class Fn>
  void planEach(const ExtenderArgs& args, NodeFitter& fitter, bool withMessage, Fn&& fn);

  // Narrows reply.passing (the nodes the pod fits, fitting[k] its index in the request, with
  // leftover[k] for the scoring) to the one node it chooses, and holds the devices there.
  void decide(const ExtenderArgs& args, const PodClaims& claims, bool needsNodeLabels,
              const std::vector<size_t>& fitting,
              const std::vector<std::optional<size_t>>& leftover, Clock::time_point now,
              FilterReply& reply);

  DeviceIndex& index_;
  ClaimLookup claims_;
  CachedNode nodes_;
  Binder& binder_;
  ScoringStrategy scoring_;
  ExtenderStats stats_;
};

}  // namespace ker

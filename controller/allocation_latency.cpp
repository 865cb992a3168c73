#include "controller/allocation_latency.h"

#include "common/api_time.h"

namespace ker {

const char* toString(AllocationStage stage) {
  return stage == AllocationStage::kBound ? "bound" : "running";
}

std::vector<StageLatency> stagesReached(const WatchedPod& before, const WatchedPod& after) {
  std::vector<StageLatency> out;
  const auto created = parseTime(after.meta.creationTimestamp);
  if ((after.claims.empty() && after.claimTemplates.empty()) || !created) {
    return out;
  }
  auto reached = [&](AllocationStage stage, const std::optional<SystemTime>& was,
                     const std::optional<SystemTime>& now) {
    if (!was && now) {
      out.push_back({stage, std::chrono::duration<double>(*now - *created).count()});
    }
  };
  reached(AllocationStage::kBound, before.scheduledAt, after.scheduledAt);
  // Ready turns True again after a container restart; only the first start counts.
  if (before.phase.empty() || before.phase == "Pending") {
    reached(AllocationStage::kRunning, before.readyAt, after.readyAt);
  }
  return out;
}

}  // namespace ker

#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "common/clocks.h"
#include "model/objects.h"
#include "model/typed_client.h"

namespace ker {

// A pod as the controller caches it: the shared typed view plus the scheduling facts the
// pending-pod nudge and the allocation latencies need.
struct WatchedPod : Pod {
  // Condition PodScheduled is False with reason Unschedulable: kube-scheduler tried the pod
  // and parked it until a cluster event might make it schedulable.
  bool unschedulable = false;
  // When conditions PodScheduled and Ready last turned True, while they are True.
  std::optional<SystemTime> scheduledAt;
  std::optional<SystemTime> readyAt;

  static WatchedPod fromJson(const nlohmann::json& obj);
};

template <>
inline const Resource& resourceOf<WatchedPod>() {
  return resources::kPods;
}

}  // namespace ker

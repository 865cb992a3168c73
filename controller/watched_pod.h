#pragma once

#include <nlohmann/json.hpp>

#include "model/objects.h"

namespace ker {

// A pod as the controller caches it: the shared typed view plus the one scheduling fact the
// pending-pod nudge needs.
struct WatchedPod : Pod {
  // Condition PodScheduled is False with reason Unschedulable: kube-scheduler tried the pod
  // and parked it until a cluster event might make it schedulable.
  bool unschedulable = false;

  static WatchedPod fromJson(const nlohmann::json& obj);
};

}  // namespace ker

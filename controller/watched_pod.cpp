#include "controller/watched_pod.h"

namespace ker {

WatchedPod WatchedPod::fromJson(const nlohmann::json& obj) {
  WatchedPod pod;
  static_cast<Pod&>(pod) = Pod::fromJson(obj);
  static const auto kConditions = nlohmann::json::json_pointer("/status/conditions");
  if (!obj.is_object() || !obj.contains(kConditions) || !obj.at(kConditions).is_array()) {
    return pod;
  }
  for (const auto& c : obj.at(kConditions)) {
    if (c.is_object() && c.value("type", nlohmann::json()) == "PodScheduled") {
      pod.unschedulable = c.value("status", nlohmann::json()) == "False" &&
                          c.value("reason", nlohmann::json()) == "Unschedulable";
    }
  }
  return pod;
}

}  // namespace ker

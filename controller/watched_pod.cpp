#include "controller/watched_pod.h"

#include "common/api_time.h"

namespace ker {

WatchedPod WatchedPod::fromJson(const nlohmann::json& obj) {
  WatchedPod pod;
  static_cast<Pod&>(pod) = Pod::fromJson(obj);
  static const auto kConditions = nlohmann::json::json_pointer("/status/conditions");
  if (!obj.is_object() || !obj.contains(kConditions) || !obj.at(kConditions).is_array()) {
    return pod;
  }
  for (const auto& c : obj.at(kConditions)) {
    if (!c.is_object()) {
      continue;
    }
    const auto type = c.value("type", nlohmann::json());
    const bool isTrue = c.value("status", nlohmann::json()) == "True";
    std::optional<SystemTime> since;
    if (const auto t = c.value("lastTransitionTime", nlohmann::json()); isTrue && t.is_string()) {
      since = parseTime(t.get<std::string>());
    }
    if (type == "PodScheduled") {
      pod.unschedulable = c.value("status", nlohmann::json()) == "False" &&
                          c.value("reason", nlohmann::json()) == "Unschedulable";
      pod.scheduledAt = since;
    } else if (type == "Ready") {
      pod.readyAt = since;
    }
  }
  return pod;
}

}  // namespace ker

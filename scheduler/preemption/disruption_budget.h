#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "model/objects.h"

namespace ker {

// A policy/v1 PodDisruptionBudget, only what preemption reads.
struct PodDisruptionBudget {
  ObjectMeta meta;
  LabelSelector selector;
  // kube-scheduler lets a nil, empty or invalid selector match no pod at all (unlike a label
  // selector elsewhere, where empty means everything).
  bool selectsNothing = true;
  int32_t disruptionsAllowed = 0;       // status.disruptionsAllowed
  std::set<std::string> disruptedPods;  // names in status.disruptedPods
  std::string invalid;                  // why the object could not be read; it then selects nothing

  // Lenient: never throws; a garbled object selects nothing and says why in `invalid`.
  static PodDisruptionBudget fromJson(const nlohmann::json& obj);
};

}  // namespace ker

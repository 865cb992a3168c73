#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/reasons.h"

// status.conditions in the standard Kubernetes shape, for people and tools to read. Programs of
// this project decide from the typed status (phase, allocation, lost devices), never from these:
// the conditions are derived from it (model/conditions.h) in every status write. Their
// reasons are the project's one vocabulary (model/reasons.h).
namespace ker {

enum class ConditionType {
  kAllocated,  // claims and devices: holds (is held by) an allocation
  kLost,       // claims: devices of the allocation vanished while the pod ran
  kHealthy,    // devices: no problem reported on the host
};

enum class ConditionStatus { kTrue, kFalse, kUnknown };

const char* toString(ConditionType type);
const char* toString(ConditionStatus status);

struct Condition {
  ConditionType type = ConditionType::kAllocated;
  ConditionStatus status = ConditionStatus::kUnknown;
  Reason reason = Reason::kOther;
  std::string message;
  std::string lastTransitionTime;  // RFC 3339, as written
  int64_t observedGeneration = 0;  // metadata.generation it was computed from; 0: not written
  bool operator==(const Condition&) const = default;
};

// The conditions of this project's types in status.conditions; entries of other types, or not
// in the standard shape, are skipped (a write keeps them as they are).
std::vector<Condition> readConditions(const nlohmann::json& status);
// status.conditions with ours replaced by `ours` (in that order, first) and the other objects
// kept after them. Nothing is written when both are empty.
void writeConditions(nlohmann::json& status, const std::vector<Condition>& ours);

// The condition of this type in the list, if any.
const Condition* findCondition(const std::vector<Condition>& conditions, ConditionType type);

}  // namespace ker

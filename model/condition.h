#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

// status.conditions in the standard Kubernetes shape, for people and tools to read. Programs of
// this project decide from the typed status (phase, allocation, lost devices), never from these:
// the conditions are derived from it (common/conditions.h) in every status write.
namespace ker {

enum class ConditionType {
  kAllocated,  // claims and devices: holds (is held by) an allocation
  kLost,       // claims: devices of the allocation vanished while the pod ran
  kHealthy,    // devices: no problem reported on the host
};

enum class ConditionStatus { kTrue, kFalse, kUnknown };

// The reasons a condition can give, CamelCase as the API writes them.
enum class ConditionReason {
  kBound,              // allocated to a pod (claim) or a claim (device)
  kPending,            // claim: waiting for a pod to be scheduled with it
  kInvalid,            // claim or device: cannot be parsed, so cannot be allocated
  kDevicesLost,        // claim: some devices of its allocation are gone
  kNoDevicesLost,      // claim: every device it lists is there (or it lists none)
  kAvailable,          // device: free to be allocated
  kNotOffered,         // device: Pending, not offered to claims
  kDeviceUnhealthy,    // device: the node agent found its device node or mount missing
  kNoProblemReported,  // device: nobody reported a problem
  kDeletionWaiting,    // claim or device: deleted while in use, it stays until released
  kUnrecognized,       // read from the API, not one of ours
};

const char* toString(ConditionType type);
const char* toString(ConditionStatus status);
const char* toString(ConditionReason reason);

struct Condition {
  ConditionType type = ConditionType::kAllocated;
  ConditionStatus status = ConditionStatus::kUnknown;
  ConditionReason reason = ConditionReason::kUnrecognized;
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

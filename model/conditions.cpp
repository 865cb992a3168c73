#include "model/conditions.h"

#include "common/api_time.h"
#include "model/device_transitions.h"

namespace ker {

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    out += (out.empty() ? "" : ", ") + n;
  }
  return out;
}

// The condition as computed, with the transition time carried over while the status is the
// one `previous` recorded.
Condition stamped(ConditionType type, ConditionStatus status, Reason reason, std::string message,
                  int64_t generation, const std::vector<Condition>& previous, SystemTime now) {
  Condition c{type, status, reason, std::move(message), "", generation};
  const Condition* before = findCondition(previous, type);
  c.lastTransitionTime = before && before->status == status && !before->lastTransitionTime.empty()
                             ? before->lastTransitionTime
                             : formatTime(now);
  return c;
}

}  // namespace

std::vector<Condition> claimConditions(const ExtendedResourceClaim& claim,
                                       const std::vector<Condition>& previous, SystemTime now) {
  const int64_t gen = claim.meta.generation;
  // A shared claim names every holder.
  std::vector<std::string> holderNames;
  for (const auto& ref : claim.holders()) {
    holderNames.push_back(ref.name);
  }
  const std::string pod = holderNames.empty()       ? std::string("pod <none>")
                          : holderNames.size() == 1 ? "pod " + holderNames.front()
                                                    : "pods " + joined(holderNames);
  std::vector<Condition> out;
  switch (claim.phase) {
    case ClaimPhase::kBound:
    case ClaimPhase::kLost: {
      std::string message = "for " + pod + " on node " + claim.nodeName + ": " +
                            (claim.allocated.empty() ? "no devices left" : joined(claim.allocated));
      // Deleted while held: kept by its protection finalizer until released.
      if (claim.meta.deleting) {
        message += "; deleted once " + pod +
                   (holderNames.size() > 1 ? " no longer hold it" : " no longer holds it");
      }
      out.push_back(stamped(ConditionType::kAllocated, ConditionStatus::kTrue,
                            claim.meta.deleting ? Reason::kDeletionWaiting : Reason::kBound,
                            std::move(message), gen, previous, now));
      break;
    }
    case ClaimPhase::kPending:
      if (!claim.invalid.empty()) {
        out.push_back(stamped(ConditionType::kAllocated, ConditionStatus::kFalse, Reason::kInvalid,
                              claim.invalid, gen, previous, now));
      } else {
        out.push_back(stamped(ConditionType::kAllocated, ConditionStatus::kFalse, Reason::kPending,
                              "waiting for a pod to be scheduled with it", gen, previous, now));
      }
      break;
  }
  if (claim.phase == ClaimPhase::kLost) {
    out.push_back(stamped(ConditionType::kLost, ConditionStatus::kTrue, Reason::kDevicesLost,
                          "lost while " + pod + " held them: " + joined(claim.lost), gen, previous,
                          now));
  } else {
    out.push_back(stamped(ConditionType::kLost, ConditionStatus::kFalse, Reason::kNoDevicesLost, "",
                          gen, previous, now));
  }
  return out;
}

std::vector<Condition> deviceConditions(const ExtendedResource& device,
                                        const std::vector<Condition>& previous, SystemTime now) {
  const int64_t gen = device.meta.generation;
  std::vector<Condition> out;
  if (device.phase == DevicePhase::kBound) {
    const std::string claim =
        device.claimRef ? objectKey(device.claimRef->ns, device.claimRef->name) : "<none>";
    // Deleted while allocated: kept by its protection finalizer until the claim lets it go.
    out.push_back(stamped(
        ConditionType::kAllocated, ConditionStatus::kTrue,
        device.meta.deleting ? Reason::kDeletionWaiting : Reason::kBound,
        "to claim " + claim + (device.meta.deleting ? "; deleted once the claim is released" : ""),
        gen, previous, now));
  } else if (!device.invalid.empty()) {
    out.push_back(stamped(ConditionType::kAllocated, ConditionStatus::kFalse, Reason::kInvalid,
                          device.invalid, gen, previous, now));
  } else if (device.phase == DevicePhase::kPending) {
    out.push_back(stamped(ConditionType::kAllocated, ConditionStatus::kFalse, Reason::kNotOffered,
                          device.message, gen, previous, now));
  } else {
    out.push_back(stamped(ConditionType::kAllocated, ConditionStatus::kFalse, Reason::kAvailable,
                          "", gen, previous, now));
  }
  // Bound too: the pod keeps a device that turned unhealthy, and its status says so.
  if (markedUnhealthy(device)) {
    out.push_back(stamped(ConditionType::kHealthy, ConditionStatus::kFalse,
                          parseReason(device.reason), device.message, gen, previous, now));
  } else {
    out.push_back(stamped(ConditionType::kHealthy, ConditionStatus::kTrue,
                          Reason::kNoProblemReported, "", gen, previous, now));
  }
  return out;
}

}  // namespace ker

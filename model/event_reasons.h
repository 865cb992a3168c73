#pragma once

// The reasons of the Events the components post, in one place (kubectl describe and event
// selectors match on them, so they are API). Claim and device status reasons that also name
// events (Released, Recovered, Bound, DeletionWaiting, Invalid) come from Reason
// (model/reasons.h), which the statuses and their conditions use.
namespace ker::event_reason {

// The extender's preemption.
inline constexpr const char* kPreempting = "Preempting";
inline constexpr const char* kPreemptionFailed = "PreemptionFailed";
inline constexpr const char* kPreempted = "Preempted";

// The controller.
inline constexpr const char* kInvalidClaims = "InvalidClaims";
inline constexpr const char* kClaimTemplateUnusable = "ClaimTemplateUnusable";
inline constexpr const char* kClaimsGenerated = "ClaimsGenerated";
inline constexpr const char* kClaimReleased = "ClaimReleased";
inline constexpr const char* kHoldersLeft = "HoldersLeft";
inline constexpr const char* kLost = "Lost";
inline constexpr const char* kClaimLost = "ClaimLost";
inline constexpr const char* kClaimRecovered = "ClaimRecovered";
inline constexpr const char* kClaimDeleted = "ClaimDeleted";

// The node agent. Its warnings about a held device are named by the device's mark (Reason).
inline constexpr const char* kDeviceNameTaken = "DeviceNameTaken";

}  // namespace ker::event_reason

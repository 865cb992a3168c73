#include "controller/plan.h"

namespace ker {

const char* toString(Change change) {
  switch (change) {
    case Change::kReleased:
      return "released";
    case Change::kHoldersLeft:
      return "holders_left";
    case Change::kClaimLost:
      return "claim_lost";
    case Change::kClaimRecovered:
      return "claim_recovered";
    case Change::kClaimInitialized:
      return "claim_initialized";
    case Change::kDeviceRebound:
      return "device_rebound";
    case Change::kDeviceFreed:
      return "device_freed";
    case Change::kDeviceInitialized:
      return "device_initialized";
    case Change::kMarkedInvalid:
      return "marked_invalid";
    case Change::kValidAgain:
      return "valid_again";
    case Change::kProtected:
      return "protected";
    case Change::kUnprotected:
      return "unprotected";
  }
  return "unknown";
}

namespace {

StatusWrite statusPatch(const Resource& resource, const ObjectMeta& meta, nlohmann::json status) {
  return {
      &resource,
      meta.ns,
      meta.name,
      {{"metadata", {{"resourceVersion", meta.resourceVersion}}}, {"status", std::move(status)}},
      true};
}

}  // namespace

std::optional<StatusWrite> invalidWrite(const Resource& resource, const ObjectMeta& meta,
                                        const std::string& invalid, const std::string& reason,
                                        const std::string& message, bool phaseWritten,
                                        const char* initPhase) {
  const bool marked = parseStatusReason(reason) == StatusReason::kInvalid;
  if (invalid.empty()) {
    if (!marked) {
      return std::nullopt;
    }
    return statusPatch(resource, meta, {{"reason", nullptr}, {"message", nullptr}});
  }
  // Marked already with this very problem: the desired status is the status.
  if (marked && message == invalid && phaseWritten) {
    return std::nullopt;
  }
  nlohmann::json status = {{"reason", toString(StatusReason::kInvalid)}, {"message", invalid}};
  if (!phaseWritten) {
    status["phase"] = initPhase;
  }
  return statusPatch(resource, meta, std::move(status));
}

bool planProtection(Plan& plan, const Resource& resource, const ObjectMeta& meta,
                    const std::string& finalizer, bool inUse) {
  if (plan.write || plan.verify) {
    return false;
  }
  const auto on = protectionChange(meta, finalizer, inUse);
  if (!on) {
    return false;
  }
  // A merge patch replaces the whole list: the others are written back as they are.
  std::vector<std::string> finalizers = meta.finalizers;
  std::erase(finalizers, finalizer);
  if (*on) {
    finalizers.push_back(finalizer);
  }
  plan.write = StatusWrite{
      &resource,
      meta.ns,
      meta.name,
      {{"metadata", {{"resourceVersion", meta.resourceVersion}, {"finalizers", finalizers}}}},
      true,
      ""};
  plan.change = *on ? Change::kProtected : Change::kUnprotected;
  return true;
}

ExtendedResource freed(ExtendedResource device, const FreedStatus& status) {
  device.phase = DevicePhase::kAvailable;
  device.claimRef.reset();
  device.releasedFrom = status.releasedFrom;
  device.reason = toString(status.reason);
  device.message = status.message;
  return device;
}

}  // namespace ker

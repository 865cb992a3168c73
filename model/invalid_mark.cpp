#include "model/invalid_mark.h"

#include "model/reasons.h"

namespace ker {

namespace {

template <typename Object>
Status mark(Object& o, const std::string& kind) {
  const bool marked = parseReason(o.reason) == Reason::kInvalid;
  if (o.invalid.empty() && !marked) {
    return Status::failedPrecondition(kind + " " + objectKey(o.meta.ns, o.meta.name) +
                                      " cannot be marked: it is valid and not marked Invalid");
  }
  o.reason = toString(o.invalid.empty() ? Reason::kNone : Reason::kInvalid);
  o.message = o.invalid;
  return {};
}

}  // namespace

Status markInvalid(ExtendedResourceClaim& claim) {
  return mark(claim, "claim");
}

Status markInvalid(ExtendedResource& device) {
  if (Status marked = mark(device, "device"); !marked.ok()) {
    return marked;
  }
  if (device.invalid.empty() && device.phase == DevicePhase::kPending && !device.claimRef) {
    if (device.labelledNode().empty()) {
      device.phase = DevicePhase::kAvailable;
    } else {
      device.reason = toString(Reason::kDeviceUnhealthy);
      device.message = "not offered until the node agent of " + device.labelledNode() +
                       " checks it again: it was Pending when its spec became invalid";
    }
  }
  return {};
}

}  // namespace ker

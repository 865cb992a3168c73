#include "controller/plan.h"

#include <algorithm>

#include "model/conditions.h"
#include "model/invalid_mark.h"
#include "model/objects.h"
#include "model/suitability.h"
#include "model/typed_client.h"

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
    case Change::kDeviceParked:
      return "device_parked";
    case Change::kDeviceUnparked:
      return "device_unparked";
    case Change::kMarkedInvalid:
      return "marked_invalid";
    case Change::kValidAgain:
      return "valid_again";
    case Change::kProtected:
      return "protected";
    case Change::kUnprotected:
      return "unprotected";
    case Change::kDeletionWaiting:
      return "deletion_waiting";
  }
  return "unknown";
}

namespace {

std::vector<Condition> conditionsOf(const ExtendedResourceClaim& c, SystemTime now) {
  return claimConditions(c, c.conditions, now);
}
std::vector<Condition> conditionsOf(const ExtendedResource& d, SystemTime now) {
  return deviceConditions(d, d.conditions, now);
}

// Each wanted condition is written, alike but for its times and generation.
bool alreadyWritten(const std::vector<Condition>& want, const std::vector<Condition>& got) {
  return std::all_of(want.begin(), want.end(), [&](const Condition& w) {
    const Condition* g = findCondition(got, w.type);
    return g && g->status == w.status && g->reason == w.reason && g->message == w.message;
  });
}

template <typename Object>
std::optional<Plan> invalidMark(const Object& o, SystemTime now) {
  const bool marked = parseReason(o.reason) == Reason::kInvalid;
  if (o.invalid.empty() && !marked) {
    return std::nullopt;
  }
  // The object as the patch leaves it; its typed phase already reads as the initial one when
  // none is written.
  Object next = o;
  if (Status mark = markInvalid(next); !mark.ok()) {
    return std::nullopt;
  }
  const std::vector<Condition> conditions = conditionsOf(next, now);
  const bool saidAlready = marked && o.message == o.invalid;
  if (!o.invalid.empty() && saidAlready && o.phaseWritten &&
      alreadyWritten(conditions, o.conditions)) {
    return std::nullopt;
  }
  Plan p;
  p.change = o.invalid.empty() ? Change::kValidAgain : Change::kMarkedInvalid;
  p.why = o.invalid;
  if (!o.invalid.empty() && !saidAlready) {
    p.events.push_back({referenceTo(o), EventType::kWarning, next.reason, o.invalid});
  }
  const bool phaseChanged = next.phase != o.phase;
  p.write = StatusWrite{&resourceOf<Object>(), o.meta.ns, o.meta.name,
                        InvalidMarkPatch<Object>{std::move(next), phaseChanged}, now};
  return p;
}

}  // namespace

StatusWrite statusUpdate(ExtendedResourceClaim next, SystemTime now) {
  std::string ns = next.meta.ns;
  std::string name = next.meta.name;
  return {&resourceOf<ExtendedResourceClaim>(), std::move(ns), std::move(name),
          WholeStatus<ExtendedResourceClaim>{std::move(next)}, now};
}

StatusWrite statusUpdate(ExtendedResource next, SystemTime now) {
  std::string name = next.meta.name;
  return {&resourceOf<ExtendedResource>(), "", std::move(name),
          WholeStatus<ExtendedResource>{std::move(next)}, now};
}

std::vector<Condition> writtenConditions(const StatusWrite& w) {
  if (const auto* claim = writtenObject<ExtendedResourceClaim>(w)) {
    return conditionsOf(*claim, w.now);
  }
  if (const auto* device = writtenObject<ExtendedResource>(w)) {
    return conditionsOf(*device, w.now);
  }
  return {};
}

std::optional<Plan> planInvalidMark(const ExtendedResourceClaim& claim, SystemTime now) {
  return invalidMark(claim, now);
}

std::optional<Plan> planInvalidMark(const ExtendedResource& device, SystemTime now) {
  return invalidMark(device, now);
}

void planDeletionWait(Plan& plan, const ObjectMeta& meta, bool inUse,
                      const std::vector<Condition>& written, bool mayRewrite,
                      const std::function<StatusWrite()>& rewrite,
                      const std::function<PlannedEvent(const StatusWrite&)>& event) {
  if (plan.verify || !deletionWaitUnannounced(meta, inUse, written)) {
    return;
  }
  if (!plan.write && mayRewrite) {
    plan.write = rewrite();
    plan.change = Change::kDeletionWaiting;
  }
  // The write's own conditions tell: a release (no longer in use) or a finalizer patch (no
  // status) does not say it.
  if (plan.write && saysDeletionWaiting(writtenConditions(*plan.write))) {
    plan.events.push_back(event(*plan.write));
    if (plan.change == Change::kDeletionWaiting) {
      plan.why = plan.events.back().message;
    }
  }
}

bool planProtection(Plan& plan, const Resource& resource, const ObjectMeta& meta,
                    const std::string& finalizer, bool inUse, bool protect) {
  if (plan.write || plan.verify) {
    return false;
  }
  const auto on = protectionChange(meta, finalizer, inUse, protect);
  if (!on) {
    return false;
  }
  // A merge patch replaces the whole list: the others are written back as they are.
  std::vector<std::string> finalizers = meta.finalizers;
  std::erase(finalizers, finalizer);
  if (*on) {
    finalizers.push_back(finalizer);
  }
  plan.write = StatusWrite{&resource,
                           meta.ns,
                           meta.name,
                           FinalizersPatch{meta.resourceVersion, std::move(finalizers)},
                           {}};
  plan.change = *on ? Change::kProtected : Change::kUnprotected;
  return true;
}

bool DeviceFrees::freedByRelease(const ExtendedResource& device) const {
  return freedByClaim(device, ClaimAllocation{from.uid, allocation, false});
}

bool DeviceFrees::freesAllowed(const ExtendedResource& device, bool claimGone) const {
  auto among = [](const PodRef& holder, const std::vector<PodRef>& pods) {
    return std::any_of(pods.begin(), pods.end(), [&](const PodRef& p) {
      return p.uid.empty() || holder.uid.empty() ? p.name == holder.name : p.uid == holder.uid;
    });
  };
  const auto seen = seenHolders.find(device.meta.name);
  return std::all_of(device.holders.begin(), device.holders.end(), [&](const PodRef& holder) {
    return among(holder, released) ||
           (!claimGone && seen != seenHolders.end() && among(holder, seen->second));
  });
}

}  // namespace ker

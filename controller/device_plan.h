#pragma once

#include <string>

#include "controller/plan.h"
#include "controller/reconcile_decisions.h"
#include "model/objects.h"

namespace ker {

struct DeviceInputs {
  DeviceView view;
  // With decideDevice's RebindDevice: that claim as a live read has it now (nullptr when it is
  // gone), or unset while not yet read. The cache may not have seen the claim released:
  // binding the device to a claim that no longer waits for it would keep it from everyone
  // until the orphan repair.
  bool rebindClaimRead = false;
  const ExtendedResourceClaim* rebindClaimLive = nullptr;
  bool protect = false;  // keep devices in use from deletion (the protection finalizer)
  SystemTime now;        // as ClaimInputs::now
};

// Everything the controller does about one device, decided without I/O: mark it Invalid (or
// valid again; an invalid device is never repaired), then decideDevice's action turned into
// the exact status to write; with no status to write, its protection finalizer, and once, when
// it is deleted while allocated, its status again with conditions and an event saying what its
// deletion waits for (deletionWaitUnannounced).
Plan planDevice(const DeviceInputs& in);

// As for claims: the status a bind writes, as one string.
std::string statusFingerprint(const ExtendedResource& device);

}  // namespace ker

#pragma once

#include <string>
#include <string_view>

namespace ker {

// Every reason this project writes, as one type: in status.reason, in each of its conditions'
// reason, and as the reason of the events that say the same. Code switches on these, never on
// message text, and a reason carries no data (that goes in the status's fields and the
// message). The strings are the API's (kubectl's Reason column shows them).
enum class Reason {
  kNone,  // no reason written
  // status.reason (and the conditions and events that say the same)
  kBound,      // a claim the extender allocated; a device allocated to a claim
  kReleased,   // a claim released when its pod went, and the devices it freed
  kLost,       // a claim whose devices vanished (status.lostExtendedResourceNames)
  kRecovered,  // a Lost claim that got all its devices back
  kRebound,    // a device bound back to the claim that lists it
  kOrphaned,   // a device freed from a claim that no longer holds it
  kInvalid,    // spec or status cannot be parsed; the message says why
  // The node agent's marks: a device it will not give a container. A free device goes Pending
  // (not offered), a Bound one stays with its pod; either way its Healthy condition is False.
  kDeviceUnhealthy,  // its check failed (device node or mount source missing, check command)
  kDeviceNotListed,  // its node file and discovery no longer list it (kept while a claim holds it)
  kNoNodeFile,       // its agent has no node file in force, so it gives no device
  kNodeNotRegistered,  // a free device whose node has no Node object: not offered until it has
  // conditions only
  kPending,            // claim: waiting for a pod to be scheduled with it
  kDevicesLost,        // claim: some devices of its allocation are gone
  kNoDevicesLost,      // claim: every device it lists is there (or it lists none)
  kAvailable,          // device: free to be allocated
  kNotOffered,         // device: Pending, not offered to claims
  kNoProblemReported,  // device: nobody reported a problem
  kDeletionWaiting,    // claim or device: deleted while in use, it stays until released
  kOther,              // written by someone else (a person, an older version)
};

const char* toString(Reason reason);
// The reason these exact words name; kOther for any other text, kNone for none.
Reason parseReason(std::string_view reason);

}  // namespace ker

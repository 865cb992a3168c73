#pragma once

#include <string>
#include <string_view>

namespace ker {

// The status.reason values this project writes, as one type: code switches on these, never on
// message text, and a reason carries no data (that goes in the status's fields and message).
// The strings are the API's (kubectl's Reason column shows them).
enum class StatusReason {
  kNone,             // no reason written
  kBound,            // a claim the extender allocated
  kReleased,         // a claim released when its pod went, and the devices it freed
  kLost,             // a claim whose devices vanished (status.lostExtendedResourceNames)
  kRecovered,        // a Lost claim that got all its devices back
  kRebound,          // a device bound back to the claim that lists it
  kOrphaned,         // a device freed from a claim that no longer holds it
  kInvalid,          // spec or status cannot be parsed; the message says why
  kDeviceUnhealthy,  // a device its node agent found unhealthy; the message says why
  kOther,            // written by someone else (a person, an older version)
};

const char* toString(StatusReason reason);
// The reason these exact words name; kOther for any other text.
StatusReason parseStatusReason(std::string_view reason);

}  // namespace ker

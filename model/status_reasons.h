#pragma once

#include <string>
#include <string_view>

namespace ker {

// The status.reason values the controller and the extender write, as one type: code switches on
// these, never on message text. The strings are the API's (kubectl's Reason column shows them).
enum class StatusReason {
  kNone,       // no reason written
  kBound,      // a claim the extender allocated
  kReleased,   // a claim released when its pod went, and the devices it freed
  kLost,       // a claim whose devices vanished ("ExtendedResourceLost: <names>")
  kRecovered,  // a Lost claim that got all its devices back
  kRebound,    // a device bound back to the claim that lists it
  kOrphaned,   // a device freed from a claim that no longer holds it
  kInvalid,    // spec or status cannot be parsed; the message says why
  kOther,      // written by someone else (the node agent, a person)
};

const char* toString(StatusReason reason);
// kLost for any reason starting "ExtendedResourceLost"; kOther for unknown text.
StatusReason parseStatusReason(std::string_view reason);

}  // namespace ker

#pragma once

#include <string>

#include "model/objects.h"

namespace ker {

// Whether the components serve the pod: its spec.schedulerName is the profile they were given
// (--scheduler-name; "" serves every pod). The extender binds and preempts only for these, and
// the controller nudges only these.
bool servedPod(const Pod& pod, const std::string& schedulerName);

}  // namespace ker

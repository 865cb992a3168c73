#pragma once

#include <string>

#include "common/clocks.h"

namespace ker {

// metav1.Time as the API server writes it, UTC to the second: "2006-01-02T15:04:05Z".
std::string formatTime(SystemTime t);
// metav1.MicroTime, UTC to the microsecond: "2006-01-02T15:04:05.000000Z".
std::string formatMicroTime(SystemTime t);

}  // namespace ker

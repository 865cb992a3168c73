#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/clocks.h"

namespace ker {

// metav1.Time as the API server writes it, UTC to the second: "2006-01-02T15:04:05Z".
std::string formatTime(SystemTime t);
// metav1.MicroTime, UTC to the microsecond: "2006-01-02T15:04:05.000000Z".
std::string formatMicroTime(SystemTime t);
// A metav1.Time as formatTime writes it; nullopt for anything else.
std::optional<SystemTime> parseTime(std::string_view text);

}  // namespace ker

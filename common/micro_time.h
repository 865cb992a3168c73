#pragma once

#include <chrono>
#include <string>

namespace ker {

using SystemTime = std::chrono::system_clock::time_point;

// metav1.MicroTime as the API server writes it: "2006-01-02T15:04:05.000000Z".
std::string formatMicroTime(SystemTime t);

}  // namespace ker

#pragma once

#include <chrono>
#include <functional>

namespace ker {

// Time points and injectable clocks, one spelling for the whole project: durations that decide
// anything are timed on the steady clock; the system clock only stamps what people read.
using SteadyTime = std::chrono::steady_clock::time_point;
using SystemTime = std::chrono::system_clock::time_point;
using SteadyClock = std::function<SteadyTime()>;
using SystemClock = std::function<SystemTime()>;

}  // namespace ker

#pragma once

#include <chrono>

namespace ker {

// Exponential backoff in the shape of apimachinery's wait.Backoff, the one rule every retry in
// this project waits by: the wait after the n-th failure in a row (n from 0) is
// initial * factor^n, capped at `cap`, then jittered down by up to `jitter` of itself so that
// many clients failing at once do not retry in lockstep.
struct Backoff {
  std::chrono::nanoseconds initial = std::chrono::milliseconds(200);
  double factor = 2.0;
  std::chrono::nanoseconds cap = std::chrono::seconds(30);
  // The share of the wait jitter may take off: 0.5 waits between half and all of it; 0 exactly.
  double jitter = 0.5;

  // The wait after `failures` failures in a row before jitter (never above cap, never
  // overflowing however many failures).
  std::chrono::nanoseconds base(int failures) const;
  // That wait jittered by `unit`, a number in [0, 1): 0 waits the least, towards 1 the most.
  std::chrono::nanoseconds delay(int failures, double unit) const;
  // delay() with a unit drawn from a per-thread generator.
  std::chrono::nanoseconds next(int failures) const;
};

}  // namespace ker

#include "common/backoff.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace ker {

std::chrono::nanoseconds Backoff::base(int failures) const {
  const double start = static_cast<double>(initial.count());
  const double limit = static_cast<double>(cap.count());
  // pow saturates to infinity rather than overflowing; min brings it back to the cap.
  const double wait = std::min(start * std::pow(factor, std::max(failures, 0)), limit);
  return std::chrono::nanoseconds(static_cast<int64_t>(std::max(wait, 0.0)));
}

std::chrono::nanoseconds Backoff::delay(int failures, double unit) const {
  const double full = static_cast<double>(base(failures).count());
  const double share = std::clamp(jitter, 0.0, 1.0);
  const double wait = full * (1.0 - share + share * std::clamp(unit, 0.0, 1.0));
  return std::chrono::nanoseconds(static_cast<int64_t>(wait));
}

std::chrono::nanoseconds Backoff::next(int failures) const {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return delay(failures, std::uniform_real_distribution<double>(0.0, 1.0)(rng));
}

}  // namespace ker

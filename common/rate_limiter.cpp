#include "common/rate_limiter.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ker {

ItemExponentialRateLimiter::ItemExponentialRateLimiter(Duration base, Duration maxDelay)
    : backoff_{base, 2.0, maxDelay, 0} {}

Duration ItemExponentialRateLimiter::when(const std::string& key) {
  int exp = 0;
  {
    std::lock_guard lock(mu_);
    exp = failures_[key]++;
  }
  return backoff_.base(exp);
}

void ItemExponentialRateLimiter::forget(const std::string& key) {
  std::lock_guard lock(mu_);
  failures_.erase(key);
}

int ItemExponentialRateLimiter::numRequeues(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

BucketRateLimiter::BucketRateLimiter(double qps, int burst, SteadyClock clock)
    : qps_(qps), burst_(burst), clock_(std::move(clock)), tokens_(burst), last_(clock_()) {
  if (!(qps > 0) || burst < 1) {
    throw std::invalid_argument("BucketRateLimiter needs qps > 0 and burst >= 1");
  }
}

Duration BucketRateLimiter::when(const std::string&) {
  std::lock_guard lock(mu_);
  const auto now = clock_();
  if (now > last_) {
    const double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
    last_ = now;
  }
  // Every call reserves a token even when none is left, so the waits of a failure storm queue
  // up one refill interval apart instead of all firing together.
  tokens_ -= 1;
  if (tokens_ >= 0) {
    return Duration::zero();
  }
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(-tokens_ / qps_));
}

MaxOfRateLimiter::MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters)
    : limiters_(std::move(limiters)) {}

Duration MaxOfRateLimiter::when(const std::string& key) {
  Duration longest = Duration::zero();
  // Every limiter is asked, so each records the failure.
  for (auto& l : limiters_) {
    longest = std::max(longest, l->when(key));
  }
  return longest;
}

void MaxOfRateLimiter::forget(const std::string& key) {
  for (auto& l : limiters_) {
    l->forget(key);
  }
}

int MaxOfRateLimiter::numRequeues(const std::string& key) {
  int most = 0;
  for (auto& l : limiters_) {
    most = std::max(most, l->numRequeues(key));
  }
  return most;
}

std::unique_ptr<RateLimiter> makeControllerRateLimiter(ControllerRateLimiterOptions opts) {
  std::vector<std::unique_ptr<RateLimiter>> limiters;
  limiters.push_back(std::make_unique<ItemExponentialRateLimiter>(opts.baseDelay, opts.maxDelay));
  limiters.push_back(
      std::make_unique<BucketRateLimiter>(opts.qps, opts.burst, std::move(opts.clock)));
  return std::make_unique<MaxOfRateLimiter>(std::move(limiters));
}

}  // namespace ker

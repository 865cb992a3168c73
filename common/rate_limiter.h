#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/backoff.h"
#include "common/clocks.h"

namespace ker {

using Duration = std::chrono::nanoseconds;

// How long to wait before an item is retried, in the manner of client-go's workqueue rate
// limiters. Implementations are thread-safe.
class RateLimiter {
 public:
  virtual ~RateLimiter() = default;
  // The delay before `key` may be processed again; records one more failure for it.
  virtual Duration when(const std::string& key) = 0;
  // Clears the failure history of `key` (it succeeded or was dropped).
  virtual void forget(const std::string& key) = 0;
  virtual int numRequeues(const std::string& key) = 0;
};

// Per-item exponential backoff: base * 2^failures, capped at maxDelay (Backoff, without jitter).
class ItemExponentialRateLimiter : public RateLimiter {
 public:
  explicit ItemExponentialRateLimiter(Duration base = std::chrono::milliseconds(5),
                                      Duration maxDelay = std::chrono::seconds(1000));
  Duration when(const std::string& key) override;
  void forget(const std::string& key) override;
  int numRequeues(const std::string& key) override;

 private:
  const Backoff backoff_;
  std::mutex mu_;
  std::map<std::string, int> failures_;
};

// One token bucket shared by all items (qps refill, burst capacity): bounds the overall retry
// rate however many items fail. It never tracks items, so numRequeues is always 0. Throws
// std::invalid_argument unless qps > 0 and burst >= 1.
class BucketRateLimiter : public RateLimiter {
 public:
  BucketRateLimiter(double qps, int burst, SteadyClock clock = std::chrono::steady_clock::now);
  Duration when(const std::string& key) override;
  void forget(const std::string&) override {}
  int numRequeues(const std::string&) override { return 0; }

 private:
  const double qps_;
  const double burst_;
  const SteadyClock clock_;
  std::mutex mu_;
  double tokens_;  // negative once reservations run ahead of the refill
  std::chrono::steady_clock::time_point last_;
};

// The longest delay any of the limiters asks for.
class MaxOfRateLimiter : public RateLimiter {
 public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters);
  Duration when(const std::string& key) override;
  void forget(const std::string& key) override;
  int numRequeues(const std::string& key) override;

 private:
  std::vector<std::unique_ptr<RateLimiter>> limiters_;
};

struct ControllerRateLimiterOptions {
  Duration baseDelay = std::chrono::milliseconds(5);
  Duration maxDelay = std::chrono::seconds(1000);
  double qps = 10;
  int burst = 100;
  SteadyClock clock = std::chrono::steady_clock::now;
};

// Exponential per-item backoff combined with an overall token bucket, as client-go's
// DefaultControllerRateLimiter.
std::unique_ptr<RateLimiter> makeControllerRateLimiter(ControllerRateLimiterOptions opts = {});

}  // namespace ker

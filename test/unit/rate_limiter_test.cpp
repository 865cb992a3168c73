#include "common/rate_limiter.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace ker {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A clock the test moves by hand, so no expectation depends on how fast the machine is.
struct FakeClock {
  std::chrono::steady_clock::time_point now{};
  SteadyClock fn() {
    return [this] { return now; };
  }
};

TEST(ItemExponentialRateLimiter, DoublesPerFailureFromBase) {
  ItemExponentialRateLimiter l(milliseconds(5), seconds(1000));
  EXPECT_EQ(l.numRequeues("a"), 0);
  EXPECT_EQ(l.when("a"), milliseconds(5));
  EXPECT_EQ(l.when("a"), milliseconds(10));
  EXPECT_EQ(l.when("a"), milliseconds(20));
  EXPECT_EQ(l.when("a"), milliseconds(40));
  EXPECT_EQ(l.numRequeues("a"), 4);
}

TEST(ItemExponentialRateLimiter, KeysAreIndependentAndForgetResets) {
  ItemExponentialRateLimiter l(milliseconds(1), seconds(10));
  l.when("a");
  l.when("a");
  EXPECT_EQ(l.when("b"), milliseconds(1));
  EXPECT_EQ(l.numRequeues("b"), 1);
  l.forget("a");
  EXPECT_EQ(l.numRequeues("a"), 0);
  EXPECT_EQ(l.when("a"), milliseconds(1));
  EXPECT_EQ(l.numRequeues("b"), 1);
}

TEST(ItemExponentialRateLimiter, CapsAtMaxWithoutOverflow) {
  ItemExponentialRateLimiter l(milliseconds(5), seconds(1));
  Duration last{};
  for (int i = 0; i < 200; ++i) {
    Duration d = l.when("a");
    EXPECT_GE(d, last) << i;
    EXPECT_LE(d, Duration(seconds(1))) << i;
    last = d;
  }
  EXPECT_EQ(last, Duration(seconds(1)));
  EXPECT_EQ(l.numRequeues("a"), 200);
  // 5ms * 2^7 = 640ms is the last step below the cap.
  l.forget("a");
  for (int i = 0; i < 7; ++i) {
    l.when("a");
  }
  EXPECT_EQ(l.when("a"), milliseconds(640));
  EXPECT_EQ(l.when("a"), seconds(1));
}

TEST(BucketRateLimiter, BurstThenOneTokenPerInterval) {
  FakeClock clock;
  BucketRateLimiter l(2, 3, clock.fn());  // 2 qps: a token every 500ms
  EXPECT_EQ(l.when("a"), Duration::zero());
  EXPECT_EQ(l.when("b"), Duration::zero());
  EXPECT_EQ(l.when("a"), Duration::zero());
  // Out of tokens: each further reservation waits one more interval.
  EXPECT_EQ(l.when("c"), milliseconds(500));
  EXPECT_EQ(l.when("d"), milliseconds(1000));
  EXPECT_EQ(l.numRequeues("a"), 0);

  clock.now += milliseconds(1000);  // pays back the two reservations
  EXPECT_EQ(l.when("e"), milliseconds(500));

  clock.now += seconds(60);  // refill stops at the burst
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(l.when("f"), Duration::zero()) << i;
  }
  EXPECT_EQ(l.when("f"), milliseconds(500));
}

TEST(BucketRateLimiter, RejectsNonsenseParameters) {
  EXPECT_THROW(BucketRateLimiter(0, 10), std::invalid_argument);
  EXPECT_THROW(BucketRateLimiter(-1, 10), std::invalid_argument);
  EXPECT_THROW(BucketRateLimiter(10, 0), std::invalid_argument);
}

TEST(ControllerRateLimiter, PerItemBackoffUntilTheBucketRunsDry) {
  FakeClock clock;
  auto l = makeControllerRateLimiter({milliseconds(5), seconds(1000), 10, 100, clock.fn()});
  EXPECT_EQ(l->when("a"), milliseconds(5));
  EXPECT_EQ(l->when("a"), milliseconds(10));
  EXPECT_EQ(l->numRequeues("a"), 2);
  for (int i = 0; i < 98; ++i) {
    EXPECT_EQ(l->when("k" + std::to_string(i)), milliseconds(5)) << i;
  }
  // The 101st failure overall waits for the bucket (qps 10) even for a fresh key.
  EXPECT_EQ(l->when("fresh"), milliseconds(100));
  EXPECT_EQ(l->numRequeues("fresh"), 1);
  // A key deep in backoff waits longer than the bucket would make it.
  for (int i = 0; i < 10; ++i) {
    l->when("a");
  }
  clock.now += seconds(100);
  EXPECT_EQ(l->when("a"), milliseconds(5 << 12));
  l->forget("a");
  EXPECT_EQ(l->numRequeues("a"), 0);
  EXPECT_EQ(l->when("a"), milliseconds(5));
}

TEST(ControllerRateLimiter, DefaultsMatchClientGo) {
  FakeClock clock;
  ControllerRateLimiterOptions opts;
  EXPECT_EQ(opts.baseDelay, milliseconds(5));
  EXPECT_EQ(opts.maxDelay, seconds(1000));
  EXPECT_EQ(opts.qps, 10);
  EXPECT_EQ(opts.burst, 100);
  opts.clock = clock.fn();
  auto l = makeControllerRateLimiter(opts);
  Duration last{};
  for (int i = 0; i < 40; ++i) {
    last = l->when("a");
  }
  EXPECT_EQ(last, seconds(1000));
}

}  // namespace
}  // namespace ker

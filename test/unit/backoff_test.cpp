#include "common/backoff.h"

#include <gtest/gtest.h>

namespace ker {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(Backoff, GrowsByItsFactorUpToTheCap) {
  const Backoff b{milliseconds(100), 2.0, seconds(1), 0};
  EXPECT_EQ(b.base(0), milliseconds(100));
  EXPECT_EQ(b.base(1), milliseconds(200));
  EXPECT_EQ(b.base(3), milliseconds(800));
  EXPECT_EQ(b.base(4), seconds(1)) << "capped";
  EXPECT_EQ(b.base(100000), seconds(1)) << "no overflow however long it fails";
  EXPECT_EQ(b.base(-1), milliseconds(100));
}

TEST(Backoff, JitterTakesOffAtMostItsShare) {
  const Backoff b{milliseconds(100), 2.0, seconds(30), 0.5};
  EXPECT_EQ(b.delay(1, 0.0), milliseconds(100)) << "half of 200 ms at the least";
  EXPECT_EQ(b.delay(1, 0.5), milliseconds(150));
  EXPECT_EQ(b.delay(1, 1.0), milliseconds(200)) << "all of it at the most";
  for (int i = 0; i < 100; ++i) {
    const auto d = b.next(2);
    EXPECT_GE(d, milliseconds(200));
    EXPECT_LE(d, milliseconds(400));
  }
  const Backoff exact{milliseconds(100), 2.0, seconds(30), 0};
  EXPECT_EQ(exact.next(1), milliseconds(200)) << "no jitter: the wait itself";
}

}  // namespace
}  // namespace ker

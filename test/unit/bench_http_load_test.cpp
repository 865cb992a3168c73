#include <gtest/gtest.h>

#include "bench/http_load.h"

namespace ker::bench {
namespace {

TEST(PercentileTest, IsTheNearestRankOfTheSortedSamples) {
  std::vector<double> samples;
  for (int i = 100; i >= 1; --i) {
    samples.push_back(i);
  }
  EXPECT_EQ(percentile(samples, 50), 50);
  EXPECT_EQ(percentile(samples, 99), 99);
  EXPECT_EQ(percentile(samples, 100), 100);
  EXPECT_EQ(percentile(samples, 0), 1);
  EXPECT_EQ(percentile({7, 3, 5}, 99), 7);
}

TEST(PercentileTest, TheMedianOfAnEvenCountIsTheMeanOfTheTwoMiddleSamples) {
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({9, 12}), 10.5);
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({5}), 5);
}

TEST(PercentileTest, NoSamplesGiveZero) {
  EXPECT_EQ(percentile({}, 99), 0);
  EXPECT_EQ(median({}), 0);
}

}  // namespace
}  // namespace ker::bench

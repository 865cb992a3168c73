#include "common/api_time.h"

#include <gtest/gtest.h>

namespace ker {
namespace {

using namespace std::chrono_literals;

TEST(ApiTimeTest, TimeIsUtcToTheSecond) {
  const SystemTime t = SystemTime(std::chrono::seconds(1136214245)) + 999ms;
  EXPECT_EQ(formatTime(t), "2006-01-02T15:04:05Z");
}

TEST(ApiTimeTest, MicroTimeIsUtcToTheMicrosecond) {
  const SystemTime t = SystemTime(std::chrono::seconds(1136214245)) + 123456789ns;
  EXPECT_EQ(formatMicroTime(t), "2006-01-02T15:04:05.123456Z");
  EXPECT_EQ(formatMicroTime(SystemTime(std::chrono::seconds(1136214245))),
            "2006-01-02T15:04:05.000000Z");
}

}  // namespace
}  // namespace ker

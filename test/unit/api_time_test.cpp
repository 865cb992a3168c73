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
TEST(ApiTime, ParsesWhatFormatTimeWritesAndNothingElse) {
  const auto t = std::chrono::sys_days{std::chrono::year{2026} / 11 / 29} + std::chrono::hours{23} +
                 std::chrono::minutes{59} + std::chrono::seconds{58};
  ASSERT_TRUE(parseTime("2026-11-29T23:59:58Z").has_value());
  EXPECT_EQ(*parseTime("2026-11-29T23:59:58Z"), t);
  EXPECT_EQ(parseTime(formatTime(t)), t);
  for (const char* bad :
       {"", "2026-11-29T23:59:58", "2026-11-29T23:59:58.5Z", "2026-13-01T00:00:00Z",
        "2026-11-29 23:59:58Z", "2026-11-29T23:59:58Zjunk", "yesterday"}) {
    EXPECT_FALSE(parseTime(bad).has_value()) << bad;
  }
}

}  // namespace ker

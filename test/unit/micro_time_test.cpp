#include "common/micro_time.h"

#include <gtest/gtest.h>

namespace ker {
namespace {

using namespace std::chrono_literals;

TEST(MicroTimeTest, FormatsWithMicrosecondsInUtc) {
  const SystemTime t = SystemTime(std::chrono::seconds(1136214245)) + 123456789ns;
  EXPECT_EQ(formatMicroTime(t), "2006-01-02T15:04:05.123456Z");
  EXPECT_EQ(formatMicroTime(SystemTime(std::chrono::seconds(1136214245))),
            "2006-01-02T15:04:05.000000Z");
}

}  // namespace
}  // namespace ker

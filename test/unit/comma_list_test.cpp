#include "common/comma_list.h"

#include <gtest/gtest.h>

namespace ker {
namespace {

using Items = std::vector<std::string>;

TEST(CommaList, SplitsTrimsAndDropsEmptyItems) {
  EXPECT_EQ(splitCommaList(""), Items{});
  EXPECT_EQ(splitCommaList(" , ,"), Items{});
  EXPECT_EQ(splitCommaList("a"), Items{"a"});
  EXPECT_EQ(splitCommaList("a, b,,c "), (Items{"a", "b", "c"}));
  EXPECT_EQ(splitCommaList("\ta\r\n,b"), (Items{"a", "b"}));
  EXPECT_EQ(splitCommaList("a,a"), (Items{"a", "a"}));
  EXPECT_EQ(splitCommaList("x y,z"), (Items{"x y", "z"}));
}

TEST(CommaList, JoinIsTheInverseOfSplit) {
  EXPECT_EQ(joinCommaList({}), "");
  EXPECT_EQ(joinCommaList({"a"}), "a");
  const Items items = {"kube-system", "gpu-team", "x"};
  EXPECT_EQ(splitCommaList(joinCommaList(items)), items);
}

}  // namespace
}  // namespace ker

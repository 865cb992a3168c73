#include "scheduler/preemption/preemption_node.h"

#include <gtest/gtest.h>

#include <climits>

namespace ker {
namespace {

std::optional<std::string> pick(const std::vector<NodePreemption>& nodes) {
  auto i = pickPreemptionNode(nodes);
  return i ? std::optional(nodes[*i].node) : std::nullopt;
}

TEST(PickPreemptionNode, NothingToPickFromIsNullopt) {
  EXPECT_EQ(pick({}), std::nullopt);
  EXPECT_EQ(pick({{"n1", 0, {}}}), std::nullopt);
}

TEST(PickPreemptionNode, FewestPdbViolationsFirst) {
  EXPECT_EQ(pick({{"n1", 1, {1}}, {"n2", 0, {50, 50}}}), "n2");
}

TEST(PickPreemptionNode, ThenTheLowestHighestVictimPriority) {
  EXPECT_EQ(pick({{"n1", 0, {10}}, {"n2", 0, {5, 5, 5}}}), "n2");
}

TEST(PickPreemptionNode, ThenTheSmallestSumOfPriorities) {
  EXPECT_EQ(pick({{"n1", 0, {10, 9}}, {"n2", 0, {10, 1}}}), "n2");
}

TEST(PickPreemptionNode, NegativePrioritiesDoNotFavourMorePods) {
  // Shifted sums: two pods at -5 weigh more than one, as in kube-scheduler.
  EXPECT_EQ(pick({{"n1", 0, {-5, -5}}, {"n2", 0, {-5}}}), "n2");
}

TEST(PickPreemptionNode, ThenFewestVictimsThenTheFirstName) {
  EXPECT_EQ(pick({{"n2", 0, {3}}, {"n1", 0, {3}}}), "n1");
  EXPECT_EQ(pick({{"n1", 0, {INT32_MIN, INT32_MAX}}, {"n2", 0, {INT32_MAX}}}), "n2");
}

TEST(PickPreemptionNode, SkipsNodesWithoutVictims) {
  EXPECT_EQ(pick({{"n1", 0, {}}, {"n2", 3, {100}}}), "n2");
}

}  // namespace
}  // namespace ker

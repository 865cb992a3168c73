#include <gtest/gtest.h>

#include "controller/allocation_latency.h"

namespace ker {
namespace {

WatchedPod pod(const nlohmann::json& conditions, const std::string& phase = "Pending") {
  return WatchedPod::fromJson({{"metadata",
                                {{"name", "p"},
                                 {"namespace", "ns"},
                                 {"creationTimestamp", "2026-11-29T10:00:00Z"},
                                 {"annotations", {{kClaimsAnnotation, "c1"}}}}},
                               {"status", {{"phase", phase}, {"conditions", conditions}}}});
}

nlohmann::json condition(const std::string& type, const std::string& status,
                         const std::string& at) {
  return {{"type", type}, {"status", status}, {"lastTransitionTime", at}};
}

TEST(AllocationLatency, EachStageCountsOnceFromTheConditionsTimes) {
  const WatchedPod created =
      pod(nlohmann::json::array({condition("PodScheduled", "False", "2026-11-29T10:00:01Z")}));
  const WatchedPod bound = pod({condition("PodScheduled", "True", "2026-11-29T10:00:03Z"),
                                condition("Ready", "False", "2026-11-29T10:00:03Z")});
  const WatchedPod running = pod({condition("PodScheduled", "True", "2026-11-29T10:00:03Z"),
                                  condition("Ready", "True", "2026-11-29T10:00:10Z")},
                                 "Running");

  auto first = stagesReached(created, bound);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].stage, AllocationStage::kBound);
  EXPECT_EQ(first[0].seconds, 3);
  auto second = stagesReached(bound, running);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].stage, AllocationStage::kRunning);
  EXPECT_EQ(second[0].seconds, 10);
  // A resync, and a pod first seen when it already ran, add nothing.
  EXPECT_TRUE(stagesReached(running, running).empty());
  // Ready again after a container restart: the pod had run already.
  WatchedPod restarting = running;
  restarting.readyAt.reset();
  EXPECT_TRUE(stagesReached(restarting, running).empty());
}

TEST(AllocationLatency, PodsWithoutClaimsAndUndatedConditionsAreNotCounted) {
  WatchedPod plainBefore = pod(nlohmann::json::array());
  WatchedPod plainAfter = pod({condition("PodScheduled", "True", "2026-11-29T10:00:03Z")});
  plainBefore.claims.clear();
  plainAfter.claims.clear();
  EXPECT_TRUE(stagesReached(plainBefore, plainAfter).empty());
  EXPECT_TRUE(stagesReached(pod(nlohmann::json::array()),
                            pod({condition("PodScheduled", "True", "yesterday")}))
                  .empty());
}

}  // namespace
}  // namespace ker

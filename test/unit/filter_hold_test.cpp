// Holds: the devices the filter chose for a pod, taken tentatively until the pod's bind, and
// the order in which the filter tries nodes.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "scheduler/allocator.h"
#include "scheduler/device_index.h"
#include "scheduler_fixtures.h"

namespace ker {
namespace {

using testing::device;
using Clock = DeviceIndex::Clock;

DevicePtr ptr(ExtendedResource d) {
  return std::make_shared<const ExtendedResource>(std::move(d));
}

std::vector<std::string> freeNames(const DeviceIndex& idx, const std::string& node,
                                   const std::string& podUid) {
  std::vector<std::string> out;
  for (const auto& d : idx.freeOnNode("nvidia.com/gpu", node, {}, podUid)) {
    out.push_back(d->meta.name);
  }
  return out;
}

TEST(RankNodes, BinpackFirstTheFewestLeftSpreadTheMostTiesInOrder) {
  const std::vector<std::optional<size_t>> leftover{3, std::nullopt, 1, 3, 1};
  EXPECT_EQ(rankNodes(leftover, ScoringStrategy::kBinpack), (std::vector<size_t>{2, 4, 0, 3}));
  EXPECT_EQ(rankNodes(leftover, ScoringStrategy::kSpread), (std::vector<size_t>{0, 3, 2, 4}));
  EXPECT_TRUE(rankNodes({std::nullopt}, ScoringStrategy::kBinpack).empty());
}

TEST(RankNodes, ANodeThePodAlreadyHoldsComesFirstWhileItFits) {
  const std::vector<std::optional<size_t>> leftover{3, std::nullopt, 1};
  EXPECT_EQ(rankNodes(leftover, ScoringStrategy::kBinpack, 0), (std::vector<size_t>{0, 2}));
  // Held but no longer fitting: ranked as if nothing were held.
  EXPECT_EQ(rankNodes(leftover, ScoringStrategy::kBinpack, 1), (std::vector<size_t>{2, 0}));
}

TEST(DeviceHolds, AHeldDeviceIsFreeOnlyToItsPodUntilTheHoldExpires) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  idx.upsert(ptr(device("b", "n1", {})));
  const auto now = Clock::now();
  ASSERT_TRUE(idx.hold("n1", {"a"}, "pod-1", now, std::chrono::seconds(15)));
  EXPECT_EQ(freeNames(idx, "n1", "pod-2"), (std::vector<std::string>{"b"}));
  EXPECT_EQ(freeNames(idx, "n1", "pod-1"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(idx.heldNode("pod-1", now), "n1");
  // Another pod cannot hold it, nor can a bind of another pod reserve it.
  EXPECT_FALSE(idx.hold("n1", {"a"}, "pod-2", now, std::chrono::seconds(15)));
  EXPECT_FALSE(idx.reserve({"a"}, "pod-2"));
  EXPECT_TRUE(idx.hold("n1", {"b"}, "pod-2", now, std::chrono::seconds(15)));
  EXPECT_EQ(idx.holdCount(), 2u);

  // Expired, the hold no longer counts, and the next hold sweeps it away.
  const auto later = now + std::chrono::seconds(16);
  EXPECT_EQ(idx.heldNode("pod-1", later), "");
  EXPECT_TRUE(idx.hold("n1", {"a"}, "pod-3", later, std::chrono::seconds(15)));
  EXPECT_EQ(idx.holdCount(), 1u);
}

TEST(DeviceHolds, AHoldMadeLongAgoHasExpiredForTheReadersToo) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  ASSERT_TRUE(idx.hold("n1", {"a"}, "pod-1", Clock::now() - std::chrono::seconds(60),
                       std::chrono::seconds(15)));
  EXPECT_EQ(freeNames(idx, "n1", "pod-2"), (std::vector<std::string>{"a"}));
  EXPECT_TRUE(idx.reserve({"a"}, "pod-2"));
}

TEST(DeviceHolds, APodHoldsOnOneNodeAtATime) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  idx.upsert(ptr(device("b", "n2", {})));
  const auto now = Clock::now();
  ASSERT_TRUE(idx.hold("n1", {"a"}, "pod-1", now, std::chrono::seconds(15)));
  ASSERT_TRUE(idx.hold("n2", {"b"}, "pod-1", now, std::chrono::seconds(15)));
  EXPECT_EQ(idx.heldNode("pod-1", now), "n2");
  EXPECT_EQ(freeNames(idx, "n1", "pod-2"), (std::vector<std::string>{"a"}));
  EXPECT_TRUE(freeNames(idx, "n2", "pod-2").empty());
}

TEST(DeviceHolds, TheBindReplacesTheHoldWhereverItBinds) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  idx.upsert(ptr(device("b", "n2", {})));
  const auto now = Clock::now();
  ASSERT_TRUE(idx.hold("n1", {"a"}, "pod-1", now, std::chrono::seconds(15)));
  // Bound elsewhere: the hold on n1 ends, the bind's reservation on n2 stays.
  ASSERT_TRUE(idx.reserve({"b"}, "pod-1"));
  EXPECT_EQ(idx.holdCount(), 0u);
  EXPECT_EQ(idx.heldNode("pod-1", now), "");
  EXPECT_EQ(freeNames(idx, "n1", "pod-2"), (std::vector<std::string>{"a"}));
  EXPECT_TRUE(freeNames(idx, "n2", "pod-2").empty());
  // A hold later in the pod's life does not weaken the bind's reservation.
  ASSERT_TRUE(idx.hold("n2", {"b"}, "pod-1", now, std::chrono::seconds(15)));
  idx.dropHolds("pod-1");
  EXPECT_TRUE(freeNames(idx, "n2", "pod-2").empty());
  EXPECT_FALSE(idx.reserve({"b"}, "pod-2"));
}

TEST(DeviceHolds, DroppedWhenThePodGoesOrItsDeviceIsTaken) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  idx.upsert(ptr(device("b", "n1", {})));
  const auto now = Clock::now();
  ASSERT_TRUE(idx.hold("n1", {"a"}, "pod-1", now, std::chrono::seconds(15)));
  idx.dropHolds("pod-1");
  EXPECT_EQ(idx.holdCount(), 0u);
  EXPECT_EQ(freeNames(idx, "n1", "pod-2"), (std::vector<std::string>{"a", "b"}));

  ASSERT_TRUE(idx.hold("n1", {"b"}, "pod-1", now, std::chrono::seconds(15)));
  auto bound = device("b", "n1", {});
  bound.phase = DevicePhase::kBound;
  idx.upsert(ptr(bound));
  EXPECT_EQ(idx.reservedCount(), 0u);
  // Freed again by hand: the hold it had is not revived.
  idx.upsert(ptr(device("b", "n1", {})));
  EXPECT_EQ(freeNames(idx, "n1", "pod-2"), (std::vector<std::string>{"a", "b"}));
}

// A bind attempt undone (a write conflict) keeps its devices from other pods until its next
// attempt, which may take them again; the bind's end lets them go.
TEST(DeviceHolds, AnUndoneBindAttemptHoldsItsDevicesForTheNextAttempt) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  ASSERT_TRUE(idx.reserve({"a"}, "pod-1"));
  const auto now = Clock::now();
  idx.holdReserved("n1", "pod-1", now, DeviceIndex::kHoldTtl);
  EXPECT_EQ(idx.heldNode("pod-1", now), "n1");
  EXPECT_TRUE(freeNames(idx, "n1", "pod-2").empty());
  EXPECT_FALSE(idx.hold("n1", {"a"}, "pod-2", now, DeviceIndex::kHoldTtl));
  EXPECT_EQ(freeNames(idx, "n1", "pod-1"), (std::vector<std::string>{"a"}));
  ASSERT_TRUE(idx.reserve({"a"}, "pod-1"));
  EXPECT_EQ(idx.holdCount(), 0u);
  idx.holdReserved("n1", "pod-1", now, DeviceIndex::kHoldTtl);
  idx.unreserve("pod-1");
  EXPECT_EQ(idx.reservedCount(), 0u);
  EXPECT_EQ(idx.holdCount(), 0u);
}

}  // namespace
}  // namespace ker

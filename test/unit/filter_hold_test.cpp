// The filter decides a pod's node and holds its devices there until the pod's bind: pods
// filtered one after another before any bind never count on the same device.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "scheduler/extender.h"
#include "scheduler_fixtures.h"
#include "test/unit/extender_parts.h"
#include "test/unit/fake_api_client.h"

namespace ker {
namespace {

using testing::leftovers;
using testing::ptr;

using nlohmann::json;
using testing::claim;
using testing::device;
using Clock = DeviceIndex::Clock;

std::vector<std::string> freeNames(const DeviceIndex& idx, const std::string& node,
                                   const std::string& podUid) {
  std::vector<std::string> out;
  for (const auto& d : idx.freeOnNode("nvidia.com/gpu", node, {}, podUid)) {
    out.push_back(d->meta.name);
  }
  return out;
}

TEST(RankNodes, BinpackFirstTheFewestLeftSpreadTheMostTiesInOrder) {
  const auto leftover = leftovers({3, std::nullopt, 1, 3, 1});
  EXPECT_EQ(rankNodes(leftover, ScoringStrategy::kBinpack), (std::vector<size_t>{2, 4, 0, 3}));
  EXPECT_EQ(rankNodes(leftover, ScoringStrategy::kSpread), (std::vector<size_t>{0, 3, 2, 4}));
  EXPECT_TRUE(rankNodes(leftovers({std::nullopt}), ScoringStrategy::kBinpack).empty());
}

// Ranking only the first few gives the full ranking's first few, ties in order included.
TEST(RankNodes, ALimitGivesTheFullRankingsFirstNodes) {
  std::vector<std::optional<NodeCost>> costs;
  for (size_t i = 0; i < 200; ++i) {
    if (i % 7 == 3) {
      costs.emplace_back(std::nullopt);
    } else {
      costs.push_back(NodeCost{.alternative = static_cast<uint32_t>(i % 3 == 0),
                               .fragmentation = (i * 37) % 11,
                               .leftover = (i * 13) % 5});
    }
  }
  for (ScoringStrategy s : {ScoringStrategy::kBinpack, ScoringStrategy::kSpread}) {
    for (std::optional<size_t> held :
         {std::optional<size_t>{}, std::optional<size_t>{150}, std::optional<size_t>{3}}) {
      const auto full = rankNodes(costs, s, held);
      for (size_t limit : {0, 1, 8, 500}) {
        const auto some = rankNodes(costs, s, held, limit);
        ASSERT_EQ(some.size(), std::min(limit, full.size()));
        EXPECT_TRUE(std::equal(some.begin(), some.end(), full.begin())) << limit;
      }
    }
  }
}

TEST(RankNodes, ANodeThePodAlreadyHoldsComesFirstWhileItFits) {
  const auto leftover = leftovers({3, std::nullopt, 1});
  EXPECT_EQ(rankNodes(leftover, ScoringStrategy::kBinpack, 0), (std::vector<size_t>{0, 2}));
  // Held but no longer fitting: ranked as if nothing were held.
  EXPECT_EQ(rankNodes(leftover, ScoringStrategy::kBinpack, 1), (std::vector<size_t>{2, 0}));
}

TEST(DeviceHolds, AHeldDeviceIsFreeOnlyToItsPodUntilTheHoldExpires) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  idx.upsert(ptr(device("b", "n1", {})));
  const auto now = Clock::now();
  ASSERT_TRUE(idx.holdForFilter("n1", {"a"}, "pod-1", now, std::chrono::seconds(15)));
  EXPECT_EQ(freeNames(idx, "n1", "pod-2"), (std::vector<std::string>{"b"}));
  EXPECT_EQ(freeNames(idx, "n1", "pod-1"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(idx.filterHoldNode("pod-1", now), "n1");
  // Another pod cannot hold it, nor can a bind of another pod reserve it.
  EXPECT_FALSE(idx.holdForFilter("n1", {"a"}, "pod-2", now, std::chrono::seconds(15)));
  EXPECT_FALSE(idx.holdForBind({"a"}, "pod-2"));
  EXPECT_TRUE(idx.holdForFilter("n1", {"b"}, "pod-2", now, std::chrono::seconds(15)));
  EXPECT_EQ(idx.filteredPods(), 2u);

  // Expired, the hold no longer counts, and the next hold sweeps it away.
  const auto later = now + std::chrono::seconds(16);
  EXPECT_EQ(idx.filterHoldNode("pod-1", later), "");
  EXPECT_TRUE(idx.holdForFilter("n1", {"a"}, "pod-3", later, std::chrono::seconds(15)));
  EXPECT_EQ(idx.filteredPods(), 1u);
}

TEST(DeviceHolds, AHoldMadeLongAgoHasExpiredForTheReadersToo) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  ASSERT_TRUE(idx.holdForFilter("n1", {"a"}, "pod-1", Clock::now() - std::chrono::seconds(60),
                                std::chrono::seconds(15)));
  EXPECT_EQ(freeNames(idx, "n1", "pod-2"), (std::vector<std::string>{"a"}));
  EXPECT_TRUE(idx.holdForBind({"a"}, "pod-2"));
}

TEST(DeviceHolds, APodHoldsOnOneNodeAtATime) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  idx.upsert(ptr(device("b", "n2", {})));
  const auto now = Clock::now();
  ASSERT_TRUE(idx.holdForFilter("n1", {"a"}, "pod-1", now, std::chrono::seconds(15)));
  ASSERT_TRUE(idx.holdForFilter("n2", {"b"}, "pod-1", now, std::chrono::seconds(15)));
  EXPECT_EQ(idx.filterHoldNode("pod-1", now), "n2");
  EXPECT_EQ(freeNames(idx, "n1", "pod-2"), (std::vector<std::string>{"a"}));
  EXPECT_TRUE(freeNames(idx, "n2", "pod-2").empty());
}

TEST(DeviceHolds, TheBindReplacesTheHoldWhereverItBinds) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  idx.upsert(ptr(device("b", "n2", {})));
  const auto now = Clock::now();
  ASSERT_TRUE(idx.holdForFilter("n1", {"a"}, "pod-1", now, std::chrono::seconds(15)));
  // Bound elsewhere: the hold on n1 ends, the bind's hold on n2 stays.
  ASSERT_TRUE(idx.holdForBind({"b"}, "pod-1"));
  EXPECT_EQ(idx.filteredPods(), 0u);
  EXPECT_EQ(idx.filterHoldNode("pod-1", now), "");
  EXPECT_EQ(freeNames(idx, "n1", "pod-2"), (std::vector<std::string>{"a"}));
  EXPECT_TRUE(freeNames(idx, "n2", "pod-2").empty());
  // A hold later in the pod's life does not weaken the bind's hold.
  ASSERT_TRUE(idx.holdForFilter("n2", {"b"}, "pod-1", now, std::chrono::seconds(15)));
  idx.dropFilterHold("pod-1");
  EXPECT_TRUE(freeNames(idx, "n2", "pod-2").empty());
  EXPECT_FALSE(idx.holdForBind({"b"}, "pod-2"));
}

TEST(DeviceHolds, DroppedWhenThePodGoesOrItsDeviceIsTaken) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  idx.upsert(ptr(device("b", "n1", {})));
  const auto now = Clock::now();
  ASSERT_TRUE(idx.holdForFilter("n1", {"a"}, "pod-1", now, std::chrono::seconds(15)));
  idx.dropFilterHold("pod-1");
  EXPECT_EQ(idx.filteredPods(), 0u);
  EXPECT_EQ(freeNames(idx, "n1", "pod-2"), (std::vector<std::string>{"a", "b"}));

  ASSERT_TRUE(idx.holdForFilter("n1", {"b"}, "pod-1", now, std::chrono::seconds(15)));
  auto bound = device("b", "n1", {});
  bound.phase = DevicePhase::kBound;
  idx.upsert(ptr(bound));
  EXPECT_EQ(idx.holdCount(), 0u);
  // Freed again by hand: the hold it had is not revived.
  idx.upsert(ptr(device("b", "n1", {})));
  EXPECT_EQ(freeNames(idx, "n1", "pod-2"), (std::vector<std::string>{"a", "b"}));
}

// A bind attempt undone (a write conflict) keeps its devices from other pods until its next
// attempt, which may take them again; the bind's end lets them go.
TEST(DeviceHolds, AnUndoneBindAttemptHoldsItsDevicesForTheNextAttempt) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  ASSERT_TRUE(idx.holdForBind({"a"}, "pod-1"));
  const auto now = Clock::now();
  idx.holdAgain("n1", {"a"}, "pod-1", now, DeviceIndex::kHoldTtl);
  EXPECT_EQ(idx.filterHoldNode("pod-1", now), "n1");
  EXPECT_TRUE(freeNames(idx, "n1", "pod-2").empty());
  EXPECT_FALSE(idx.holdForFilter("n1", {"a"}, "pod-2", now, DeviceIndex::kHoldTtl));
  EXPECT_EQ(freeNames(idx, "n1", "pod-1"), (std::vector<std::string>{"a"}));
  ASSERT_TRUE(idx.holdForBind({"a"}, "pod-1"));
  EXPECT_EQ(idx.filteredPods(), 0u);
  idx.holdAgain("n1", {"a"}, "pod-1", now, DeviceIndex::kHoldTtl);
  idx.dropAllHolds("pod-1");
  EXPECT_EQ(idx.holdCount(), 0u);
  EXPECT_EQ(idx.filteredPods(), 0u);
}

// The device watch may show an attempt's write (ending its bind hold) before the attempt is
// undone: the devices it took are still held for the pod, and stay held once the undo makes
// them Available again. A device another pod holds meanwhile stays that pod's.
TEST(DeviceHolds, AnUndoneAttemptHoldsItsDevicesEvenAfterTheWatchShowedThemBound) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  idx.upsert(ptr(device("b", "n1", {})));
  idx.upsert(ptr(device("c", "n1", {})));
  ASSERT_TRUE(idx.holdForBind({"a", "b"}, "pod-1"));
  auto bound = device("a", "n1", {});
  bound.phase = DevicePhase::kBound;
  idx.upsert(ptr(bound));                  // the attempt's device write, seen by the watch
  idx.upsert(ptr(device("a", "n1", {})));  // the undo's write
  const auto now = Clock::now();
  ASSERT_TRUE(idx.holdForFilter("n1", {"c"}, "pod-2", now, DeviceIndex::kHoldTtl));
  idx.holdAgain("n1", {"a", "b", "c"}, "pod-1", now, DeviceIndex::kHoldTtl);
  EXPECT_EQ(idx.filterHoldNode("pod-1", now), "n1");
  EXPECT_TRUE(freeNames(idx, "n1", "pod-3").empty());
  EXPECT_EQ(freeNames(idx, "n1", "pod-1"), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(idx.holdForFilter("n1", {"a"}, "pod-3", now, DeviceIndex::kHoldTtl));
  EXPECT_EQ(freeNames(idx, "n1", "pod-2"), (std::vector<std::string>{"c"}));
  idx.dropAllHolds("pod-1");
  EXPECT_EQ(freeNames(idx, "n1", "pod-3"), (std::vector<std::string>{"a", "b"}));
}

// The extender over nodes n0..n3 with `perNode` free k80s each, under a strategy.
class FilterHoldTest : public ::testing::TestWithParam<ScoringStrategy>,
                       protected testing::ExtenderParts {
 protected:
  FilterHoldTest() : ExtenderParts(Scoring{GetParam()}) {}
  void addDevices(int nodes, int perNode) {
    for (int n = 0; n < nodes; ++n) {
      nodeNames_.push_back("n" + std::to_string(n));
      for (int d = 0; d < perNode; ++d) {
        index_.upsert(ptr(device(nodeNames_.back() + "-gpu" + std::to_string(d), nodeNames_.back(),
                                 {{"type", "k80"}})));
      }
    }
  }
  void addPodClaim(int i) {
    ExtendedResourceClaim c = claim("c" + std::to_string(i), 1, {{"type", "k80"}});
    claims_[objectKey(c.meta.ns, c.meta.name)] = std::make_shared<const ExtendedResourceClaim>(c);
  }
  // The body of a filter call for pod i over every node, in NodeNames mode.
  std::string filterBody(int i) const {
    const json pod = {
        {"metadata",
         {{"name", "p" + std::to_string(i)},
          {"namespace", "default"},
          {"uid", "uid-p" + std::to_string(i)},
          {"annotations", {{"extendedresource.io/claims", "c" + std::to_string(i)}}}}}};
    return json{{"Pod", pod}, {"NodeNames", nodeNames_}, {"Nodes", nullptr}}.dump();
  }
  std::vector<std::string> filter(int i, Clock::time_point now = Clock::now()) {
    const std::string body = filterBody(i);
    const ExtenderArgs args = parseExtenderArgs(body);
    const FilterReply reply = extender_.filter(args, now).reply;
    EXPECT_EQ(reply.error, "");
    return {reply.passing.begin(), reply.passing.end()};
  }

  std::vector<std::string> nodeNames_;
};

// Before any bind, every pod is passed on to exactly one node, and no two pods hold the same
// device: the devices run out exactly when the pods outnumber them.
TEST_P(FilterHoldTest, PodsFilteredBeforeAnyBindNeverShareADevice) {
  addDevices(4, 3);
  std::map<std::string, int> perNode;
  for (int i = 0; i < 14; ++i) {
    addPodClaim(i);
    const auto passing = filter(i);
    if (i >= 12) {
      EXPECT_TRUE(passing.empty()) << "pod " << i << " passed on " << passing[0];
      continue;
    }
    ASSERT_EQ(passing.size(), 1u) << "pod " << i;
    ++perNode[passing[0]];
  }
  for (const auto& node : nodeNames_) {
    EXPECT_EQ(perNode[node], 3) << node;
  }
  EXPECT_EQ(index_.filteredPods(), 12u);
  EXPECT_EQ(index_.holdCount(), 12u);
}

TEST_P(FilterHoldTest, TheStrategyPicksTheNode) {
  addDevices(3, 2);
  // n1 has one device fewer: binpack fills it first, spread avoids it.
  index_.remove("n1-gpu1");
  addPodClaim(0);
  EXPECT_EQ(filter(0),
            std::vector<std::string>{GetParam() == ScoringStrategy::kBinpack ? "n1" : "n0"});
}

TEST_P(FilterHoldTest, ARetryKeepsItsNodeAndAnExpiredHoldIsGivenUp) {
  addDevices(2, 2);
  addPodClaim(0);
  addPodClaim(1);
  const auto now = Clock::now();
  const auto first = filter(0, now);
  ASSERT_EQ(first.size(), 1u);
  // The pod is tried again (a later plugin rejected the node): same node, same devices.
  EXPECT_EQ(filter(0, now + std::chrono::seconds(1)), first);
  EXPECT_EQ(index_.filteredPods(), 1u);
  EXPECT_EQ(index_.holdCount(), 1u);
  // Its hold expired: another pod's filter may take its device.
  const auto later = now + Extender::kHoldTtl + std::chrono::seconds(1);
  const auto second = filter(1, later);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(index_.filterHoldNode("uid-p0", later), "");
}

TEST_P(FilterHoldTest, AForgottenPodsDevicesAreOfferedAgain) {
  addDevices(1, 1);
  addPodClaim(0);
  addPodClaim(1);
  ASSERT_EQ(filter(0).size(), 1u);
  EXPECT_TRUE(filter(1).empty());
  extender_.forgetPod("uid-p0");
  EXPECT_EQ(filter(1), std::vector<std::string>{"n0"});
}

// Once a node is chosen, no other node is answered: kube-scheduler reads failures only when
// no node passes.
TEST_P(FilterHoldTest, TheChosenNodeIsTheWholeReply) {
  addDevices(3, 1);
  nodeNames_.push_back("n0");  // asked twice
  nodeNames_.push_back("unknown-node");
  addPodClaim(0);
  const std::string body = filterBody(0);
  const ExtenderArgs args = parseExtenderArgs(body);
  const FilterReply reply = extender_.filter(args, Clock::now()).reply;
  ASSERT_EQ(reply.passing.size(), 1u);
  EXPECT_EQ(reply.passing[0], "n0");
  EXPECT_TRUE(reply.failed.empty());
  EXPECT_TRUE(reply.failedUnresolvable.empty());
}

// A pod whose claim an earlier bind already allocated to it is pinned to that node: nothing to
// hold, but the node is recorded as the filter's choice, which its bind is checked against.
TEST_P(FilterHoldTest, APinnedPodHoldsItsNodeWithoutDevices) {
  addDevices(2, 1);
  ExtendedResourceClaim c = claim("c0", 1, {{"type", "k80"}});
  c.phase = ClaimPhase::kBound;
  c.allocated = {"n1-gpu0"};
  c.nodeName = "n1";
  c.podRef = PodRef{"p0", "uid-p0"};
  claims_["default/c0"] = std::make_shared<const ExtendedResourceClaim>(c);
  const auto now = Clock::now();
  EXPECT_EQ(filter(0, now), std::vector<std::string>{"n1"});
  EXPECT_EQ(index_.filterHoldNode("uid-p0", now), "n1");
  EXPECT_EQ(index_.holdCount(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Strategies, FilterHoldTest,
                         ::testing::Values(ScoringStrategy::kBinpack, ScoringStrategy::kSpread),
                         [](const auto& info) {
                           return info.param == ScoringStrategy::kBinpack ? "Binpack" : "Spread";
                         });

}  // namespace
}  // namespace ker

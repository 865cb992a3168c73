// The index answers from what upsert worked out; these cases make sure that shortcut never
// changes an answer the full node-selector evaluation would give.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <span>
#include <string_view>

#include "scheduler/cache/device_index.h"
#include "scheduler_fixtures.h"

namespace ker {
namespace {

using testing::ptr;

using testing::device;

std::vector<std::string> names(const std::vector<DevicePtr>& v) {
  std::vector<std::string> out;
  for (const auto& d : v) {
    out.push_back(d->meta.name);
  }
  return out;
}

NodeSelectorRequirement pin(std::vector<std::string> nodes) {
  return {"metadata.name", SelectorOperator::kIn, std::move(nodes)};
}

TEST(DeviceIndexFastPath, PinsWithMoreConditionsAreStillEvaluated) {
  DeviceIndex idx;
  auto zoned = device("zoned", "n1", {});
  zoned.nodeAffinity.terms = {
      NodeSelectorTerm{{{"zone", SelectorOperator::kIn, {"a"}}}, {pin({"n1"})}}};
  idx.upsert(ptr(zoned));
  // Several names in one requirement: the API refuses that, so it never matches.
  auto multi = device("multi", "n1", {});
  multi.nodeAffinity.terms = {NodeSelectorTerm{{}, {pin({"n1", "n2"})}}};
  idx.upsert(ptr(multi));
  auto twoTerms = device("two-terms", "n1", {});
  twoTerms.nodeAffinity.terms = {NodeSelectorTerm{{}, {pin({"n1"})}},
                                 NodeSelectorTerm{{}, {pin({"n2"})}}};
  idx.upsert(ptr(twoTerms));

  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n1", {{"zone", "a"}})),
            (std::vector<std::string>{"two-terms", "zoned"}));
  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n1", {{"zone", "b"}})),
            (std::vector<std::string>{"two-terms"}));
  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n2", {})),
            (std::vector<std::string>{"two-terms"}));
}

TEST(DeviceIndexFastPath, EligibilityFollowsEachNewVersion) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  auto deleting = device("a", "n1", {});
  deleting.meta.deleting = true;
  idx.upsert(ptr(deleting));
  EXPECT_TRUE(idx.freeOnNode("nvidia.com/gpu", "n1", {}).empty());
  idx.upsert(ptr(device("a", "n1", {})));
  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n1", {})), (std::vector<std::string>{"a"}));
  EXPECT_EQ(idx.size(), 1u);
}

TEST(DeviceIndexFastPath, DevicesComeInNameOrderWhateverTheArrivalOrder) {
  DeviceIndex idx;
  for (const char* n : {"gpu3", "gpu1", "gpu2", "gpu0"}) {
    idx.upsert(ptr(device(n, "n1", {})));
  }
  idx.remove("gpu2");
  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n1", {})),
            (std::vector<std::string>{"gpu0", "gpu1", "gpu3"}));
}

TEST(DeviceIndexFastPath, ReservationsAreCheckedOnlyWhileAnyExist) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  ASSERT_TRUE(idx.holdForBind({"a"}, "pod-1"));
  EXPECT_TRUE(idx.freeOnNode("nvidia.com/gpu", "n1", {}, "pod-2").empty());
  idx.remove("a");
  EXPECT_EQ(idx.holdCount(), 0u);
  idx.upsert(ptr(device("a", "n1", {})));
  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n1", {}, "pod-2")),
            (std::vector<std::string>{"a"}));
}

// What visitFreeGroups reports for a node, as free devices by type; nullopt when it declines.
std::optional<std::map<std::string, uint32_t>> groups(const DeviceIndex& idx,
                                                      const std::string& node) {
  std::map<std::string, uint32_t> out;
  if (!idx.visitFreeGroups(
          idx.resource("nvidia.com/gpu"), node,
          [&](const DeviceIndex::FreeGroup& g) { out[g.properties.at("type")] += g.count; })) {
    return std::nullopt;
  }
  return out;
}

TEST(DeviceIndexFastPath, GroupsCountEligiblePinnedDevicesBySet) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {{"type", "k80"}})));
  idx.upsert(ptr(device("b", "n1", {{"type", "k80"}})));
  idx.upsert(ptr(device("c", "n1", {{"type", "p100"}})));
  auto bound = device("d", "n1", {{"type", "p100"}});
  bound.phase = DevicePhase::kBound;
  idx.upsert(ptr(bound));
  idx.upsert(ptr(device("e", "n2", {{"type", "k80"}})));
  using Counts = std::map<std::string, uint32_t>;
  EXPECT_EQ(groups(idx, "n1"), (Counts{{"k80", 2}, {"p100", 1}}));
  EXPECT_EQ(groups(idx, "n2"), (Counts{{"k80", 1}}));
  EXPECT_EQ(groups(idx, "n3"), Counts{});
  // Kept current as devices change and go.
  idx.remove("a");
  auto nowFree = device("d", "n1", {{"type", "p100"}});
  idx.upsert(ptr(nowFree));
  EXPECT_EQ(groups(idx, "n1"), (Counts{{"k80", 1}, {"p100", 2}}));
  idx.remove("e");
  EXPECT_EQ(groups(idx, "n2"), Counts{});
}

// The run form answers each node as the single-node form does, whether few or many binds
// are in flight (they are checked by slot or by name), for nodes with and without devices.
TEST(DeviceIndexFastPath, RunsAnswerAsSingleNodesDo) {
  DeviceIndex idx;
  std::vector<std::string> nodes;
  for (int i = 0; i < 100; ++i) {
    const std::string node = "node-" + std::to_string(i);
    nodes.push_back(node);
    if (i % 5 == 4) {
      continue;  // no devices
    }
    for (int d = 0; d < 3; ++d) {
      idx.upsert(ptr(
          device(node + "-gpu-" + std::to_string(d), node, {{"type", d == 0 ? "p100" : "k80"}})));
    }
  }
  const std::vector<std::string_view> views(nodes.begin(), nodes.end());
  auto check = [&](const std::string& when) {
    for (size_t start = 0; start < views.size(); start += DeviceIndex::kRun) {
      const auto run =
          std::span(views).subspan(start, std::min(DeviceIndex::kRun, views.size() - start));
      std::vector<uint8_t> counted(run.size());
      std::vector<std::map<std::string, uint32_t>> got(run.size());
      idx.visitFreeGroups(idx.resource("nvidia.com/gpu"), run, counted.data(),
                          [&](size_t k, const DeviceIndex::FreeGroup& g) {
                            got[k][g.properties.at("type")] += g.count;
                          });
      for (size_t k = 0; k < run.size(); ++k) {
        const auto want = groups(idx, std::string(run[k]));
        EXPECT_EQ(counted[k] != 0, want.has_value()) << when << " " << run[k];
        if (want && counted[k] != 0) {
          EXPECT_EQ(got[k], *want) << when << " " << run[k];
        }
      }
    }
  };
  check("no binds");
  ASSERT_TRUE(idx.holdForBind({"node-3-gpu-1", "node-77-gpu-0"}, "pod-a"));
  check("two nodes reserved");
  std::vector<std::string> many;
  for (int i = 10; i < 70; i += 2) {
    if (i % 5 != 4) {
      many.push_back("node-" + std::to_string(i) + "-gpu-2");
    }
  }
  ASSERT_TRUE(idx.holdForBind(many, "pod-b"));
  ASSERT_GT(many.size(), 16u);
  check("many nodes reserved");
  idx.dropAllHolds("pod-b");
  idx.remove("node-3-gpu-0");
  idx.remove("node-3-gpu-1");
  idx.remove("node-3-gpu-2");
  check("a reserved node's devices gone");
}

TEST(DeviceIndexFastPath, GroupsDeclineWhatNeedsDevicesOneByOne) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {{"type", "k80"}})));
  ASSERT_TRUE(idx.holdForBind({"a"}, "pod-1"));
  EXPECT_EQ(groups(idx, "n1"), std::nullopt);  // a bind in flight on this node
  idx.dropAllHolds("pod-1");
  ASSERT_TRUE(groups(idx, "n1").has_value());

  auto zoned = device("zoned", "n1", {{"type", "k80"}});
  zoned.nodeAffinity.terms = {
      NodeSelectorTerm{{{"zone", SelectorOperator::kIn, {"a"}}}, {pin({"n1"})}}};
  idx.upsert(ptr(zoned));
  EXPECT_EQ(groups(idx, "n1"), std::nullopt);  // the node's labels decide
  idx.remove("zoned");

  for (int i = 0; i < 8; ++i) {  // more property sets than a summary holds
    idx.upsert(ptr(device("many" + std::to_string(i), "n2", {{"type", std::to_string(i)}})));
  }
  EXPECT_EQ(groups(idx, "n2"), std::nullopt);
  EXPECT_TRUE(groups(idx, "n1").has_value());

  auto floating = device("floating", "", {{"type", "k80"}});
  floating.nodeAffinity =
      NodeSelector{{NodeSelectorTerm{{{"zone", SelectorOperator::kIn, {"a"}}}, {}}}};
  idx.upsert(ptr(floating));
  EXPECT_EQ(groups(idx, "n1"), std::nullopt);  // may be on any node
}

// Binds are nearly always in flight under load: only the nodes holding a reserved device
// lose the summary, and only until the hold ends, however it ends.
TEST(DeviceIndexFastPath, AReservationSendsOnlyItsOwnNodesDeviceByDevice) {
  using Counts = std::map<std::string, uint32_t>;
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {{"type", "k80"}})));
  idx.upsert(ptr(device("b", "n1", {{"type", "k80"}})));
  idx.upsert(ptr(device("c", "n2", {{"type", "k80"}})));
  auto both = device("both", "n3", {{"type", "k80"}});
  both.nodeAffinity.terms = {NodeSelectorTerm{{}, {pin({"n3"})}},
                             NodeSelectorTerm{{}, {pin({"n4"})}}};
  idx.upsert(ptr(both));

  ASSERT_TRUE(idx.holdForBind({"a", "b"}, "pod-1"));
  EXPECT_EQ(groups(idx, "n1"), std::nullopt);
  EXPECT_EQ(groups(idx, "n2"), (Counts{{"k80", 1}}));
  // One of two bind holds on n1 ends: the other still holds it back.
  auto aBound = device("a", "n1", {{"type", "k80"}});
  aBound.phase = DevicePhase::kBound;
  idx.upsert(ptr(aBound));
  EXPECT_EQ(groups(idx, "n1"), std::nullopt);
  idx.remove("b");
  EXPECT_EQ(groups(idx, "n1"), Counts{});

  ASSERT_TRUE(idx.holdForBind({"both"}, "pod-2"));
  EXPECT_EQ(groups(idx, "n3"), std::nullopt);
  EXPECT_EQ(groups(idx, "n4"), std::nullopt);
  // A retried bind reserving again counts once.
  ASSERT_TRUE(idx.holdForBind({"both"}, "pod-2"));
  idx.dropAllHolds("pod-2");
  EXPECT_EQ(groups(idx, "n3"), (Counts{{"k80", 1}}));
  EXPECT_EQ(groups(idx, "n4"), (Counts{{"k80", 1}}));

  // A refused bind hold counts nothing.
  ASSERT_TRUE(idx.holdForBind({"c"}, "pod-3"));
  EXPECT_FALSE(idx.holdForBind({"both", "c"}, "pod-4"));
  EXPECT_EQ(groups(idx, "n3"), (Counts{{"k80", 1}}));
  EXPECT_EQ(groups(idx, "n2"), std::nullopt);
  EXPECT_EQ(idx.holdCount(), 1u);
}

}  // namespace
}  // namespace ker

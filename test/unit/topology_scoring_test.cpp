// With a topology property, the fit takes devices island by island and a node's cost counts the
// islands it breaks: binpack keeps whole islands whole for later multi-device requests.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "scheduler/extender.h"
#include "scheduler/fit/allocator.h"
#include "scheduler/wire/extender_wire.h"
#include "scheduler_fixtures.h"
#include "test/unit/extender_parts.h"

namespace ker {
namespace {

using nlohmann::json;
using testing::claim;
using testing::device;
using testing::ptr;
using testing::ptrs;

const Scoring kBinpackByNuma{ScoringStrategy::kBinpack, "numa"};
const Scoring kSpreadByNuma{ScoringStrategy::kSpread, "numa"};

// A node of islands numa 0 and 1 with the given free devices in each.
std::vector<ExtendedResource> islands(const std::string& node, int free0, int free1) {
  std::vector<ExtendedResource> out;
  for (int i = 0; i < free0; ++i) {
    out.push_back(device(node + "-a" + std::to_string(i), node, {{"numa", "0"}}));
  }
  for (int i = 0; i < free1; ++i) {
    out.push_back(device(node + "-b" + std::to_string(i), node, {{"numa", "1"}}));
  }
  return out;
}

TEST(TopologyFit, BinpackTakesTheLastDevicesOfTheFullestIsland) {
  const auto devs = islands("n", 4, 1);
  auto one = claim("one", 1);
  const Fit fit = fitClaims({&one}, ptrs(devs), kBinpackByNuma);
  ASSERT_TRUE(fit.fits) << fit.message;
  EXPECT_EQ(fit.assignment.at("default/one"), std::vector<std::string>{"n-b0"});
  // 1 of the island's 1 free, and 1 of the node's 5: 1·(2·1 − 1) + 1·(2·5 − 1).
  EXPECT_EQ(fit.fragmentation, 1u + 9u);

  // Without the property, devices are taken in the order given.
  EXPECT_EQ(fitClaims({&one}, ptrs(devs)).assignment.at("default/one"),
            std::vector<std::string>{"n-a0"});
}

TEST(TopologyFit, BinpackPutsARequestInTheSmallestIslandThatHoldsItAll) {
  const auto devs = islands("n", 1, 4);
  auto four = claim("four", 4);
  const Fit fit = fitClaims({&four}, ptrs(devs), kBinpackByNuma);
  ASSERT_TRUE(fit.fits) << fit.message;
  EXPECT_EQ(fit.assignment.at("default/four"),
            (std::vector<std::string>{"n-b0", "n-b1", "n-b2", "n-b3"}));
  // More than any island holds: the fewest islands, the fullest first.
  auto five = claim("five", 5);
  EXPECT_EQ(fitClaims({&five}, ptrs(devs), kBinpackByNuma).assignment.at("default/five"),
            (std::vector<std::string>{"n-a0", "n-b0", "n-b1", "n-b2", "n-b3"}));
}

TEST(TopologyFit, BinpackKeepsAnUnconstrainedRequestInOneIslandWhenItCan) {
  const auto devs = islands("n", 4, 4);
  auto four = claim("four", 4);
  const Fit fit = fitClaims({&four}, ptrs(devs), kBinpackByNuma);
  ASSERT_TRUE(fit.fits) << fit.message;
  EXPECT_EQ(fit.assignment.at("default/four"),
            (std::vector<std::string>{"n-a0", "n-a1", "n-a2", "n-a3"}));
  EXPECT_EQ(fit.fragmentation, 16u + 48u);  // 4·(2·4 − 4) + 4·(2·8 − 4)
}

TEST(TopologyFit, SpreadTakesRoundRobinFromTheFreestIslands) {
  const auto devs = islands("n", 3, 2);
  auto two = claim("two", 2);
  const Fit fit = fitClaims({&two}, ptrs(devs), kSpreadByNuma);
  ASSERT_TRUE(fit.fits) << fit.message;
  EXPECT_EQ(fit.assignment.at("default/two"), (std::vector<std::string>{"n-a0", "n-b0"}));
  EXPECT_EQ(fit.fragmentation, 5u + 3u + 16u);
}

TEST(TopologyFit, AConstrainedClaimUnderSpreadTakesTheLargestGroup) {
  const auto devs = islands("n", 2, 3);
  auto two = claim("two", 2);
  two.constraints = {{"numa"}};
  EXPECT_EQ(fitClaims({&two}, ptrs(devs), kBinpackByNuma).assignment.at("default/two"),
            (std::vector<std::string>{"n-a0", "n-a1"}));
  EXPECT_EQ(fitClaims({&two}, ptrs(devs), kSpreadByNuma).assignment.at("default/two"),
            (std::vector<std::string>{"n-b0", "n-b1"}));
}

TEST(TopologyRank, FragmentationDecidesBeforeTheDevicesLeft) {
  const std::vector<std::optional<NodeCost>> costs = {
      NodeCost{.fragmentation = 7, .leftover = 7}, std::nullopt,
      NodeCost{.fragmentation = 1, .leftover = 4}, NodeCost{.fragmentation = 1, .leftover = 0}};
  EXPECT_EQ(rankNodes(costs, ScoringStrategy::kBinpack), (std::vector<size_t>{3, 2, 0}));
  EXPECT_EQ(rankNodes(costs, ScoringStrategy::kSpread), (std::vector<size_t>{0, 2, 3}));
  const auto scores = scoreNodes(costs, ScoringStrategy::kBinpack);
  EXPECT_EQ(scores[3], 10);
  EXPECT_EQ(scores[1], 0);
  EXPECT_EQ(scores[0], 0);
  EXPECT_GT(scores[2], scores[0]);
  EXPECT_LT(scores[2], scores[3]);
}

// Through the filter: a 2-device request goes to the node where it finishes a broken island,
// not to the idle node whose islands are both whole, though both would keep as many devices.
class TopologyFilterTest : public ::testing::TestWithParam<ScoringStrategy>,
                           protected testing::ExtenderParts {
 protected:
  TopologyFilterTest() : ExtenderParts(Scoring{GetParam(), "numa"}) {}

  std::vector<std::string> filter(const std::string& pod, const std::string& claimName) {
    const json body = {{"Pod",
                        {{"metadata",
                          {{"name", pod},
                           {"namespace", "default"},
                           {"uid", "uid-" + pod},
                           {"annotations", {{"extendedresource.io/claims", claimName}}}}}}},
                       {"NodeNames", {"idle", "broken"}},
                       {"Nodes", nullptr}};
    const std::string text = body.dump();  // the reply's node names point into it
    const FilterReply reply = extender_.filter(parseExtenderArgs(text), Clock::now()).reply;
    EXPECT_EQ(reply.error, "");
    return {reply.passing.begin(), reply.passing.end()};
  }
  void addClaim(ExtendedResourceClaim c) {
    claims_[objectKey(c.meta.ns, c.meta.name)] = std::make_shared<const ExtendedResourceClaim>(c);
  }
  using Clock = Extender::Clock;
};

TEST_P(TopologyFilterTest, BinpackFinishesABrokenIslandSpreadTakesAWholeOne) {
  for (const auto& d : islands("idle", 4, 4)) {
    index_.upsert(ptr(d));
  }
  for (const auto& d : islands("broken", 2, 4)) {
    index_.upsert(ptr(d));
  }
  auto two = claim("two", 2);
  two.constraints = {{"numa"}};
  addClaim(two);
  const bool binpack = GetParam() == ScoringStrategy::kBinpack;
  EXPECT_EQ(filter("p", "two"), std::vector<std::string>{binpack ? "broken" : "idle"});
  // The held devices are the ones the cost counted: binpack's come from broken's numa 0.
  std::set<std::string> stillFree;
  for (const auto& node : {"idle", "broken"}) {
    for (const auto& d : index_.freeOnNode("nvidia.com/gpu", node, {}, "someone-else")) {
      stillFree.insert(d->meta.name);
    }
  }
  EXPECT_EQ(stillFree.size(), 12u);
  if (binpack) {
    EXPECT_FALSE(stillFree.contains("broken-a0"));
    EXPECT_FALSE(stillFree.contains("broken-a1"));
  } else {
    EXPECT_FALSE(stillFree.contains("idle-a0"));
    EXPECT_FALSE(stillFree.contains("idle-a1"));
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, TopologyFilterTest,
                         ::testing::Values(ScoringStrategy::kBinpack, ScoringStrategy::kSpread),
                         [](const auto& info) {
                           return std::string(scoringStrategyName(info.param));
                         });

}  // namespace
}  // namespace ker

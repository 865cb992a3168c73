#include "scheduler/fit/allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <random>
#include <set>

#include "model/suitability.h"
#include "scheduler_fixtures.h"

namespace ker {
namespace {

using testing::claim;
using testing::device;
using testing::leftovers;
using testing::ptrs;

TEST(FitClaims, CountsDistinctDevices) {
  std::vector<ExtendedResource> devs = {device("a", "n1", {{"type", "k80"}}),
                                        device("b", "n1", {{"type", "k80"}}),
                                        device("c", "n1", {{"type", "p100"}})};
  auto two = claim("two", 2, {{"type", "k80"}});
  auto fit = fitClaims({&two}, ptrs(devs));
  ASSERT_TRUE(fit.fits) << fit.message;
  EXPECT_EQ(fit.assignment.at("default/two"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(fit.matchingFree, 2u);

  auto three = claim("three", 3, {{"type", "k80"}});
  fit = fitClaims({&three}, ptrs(devs));
  EXPECT_FALSE(fit.fits);
  EXPECT_EQ(fit.message,
            "claim default/three: 2 of 3 free nvidia.com/gpu with type=k80 on this node");
}

// Greedy allocation in claim order would give the broad claim the only k80 and fail the
// narrow one; the matching must find the assignment that exists.
TEST(FitClaims, OverlappingSelectorsFindAnAssignmentWhenOneExists) {
  std::vector<ExtendedResource> devs = {device("k80", "n1", {{"type", "k80"}}),
                                        device("p100", "n1", {{"type", "p100"}})};
  auto any = claim("any", 1);
  auto k80 = claim("k80-only", 1, {{"type", "k80"}});
  // "any" first, and the k80 device listed first, so a greedy pass takes k80 for "any".
  auto fit = fitClaims({&any, &k80}, ptrs(devs));
  ASSERT_TRUE(fit.fits) << fit.message;
  EXPECT_EQ(fit.assignment.at("default/k80-only"), (std::vector<std::string>{"k80"}));
  EXPECT_EQ(fit.assignment.at("default/any"), (std::vector<std::string>{"p100"}));
}

TEST(FitClaims, MultiDeviceClaimsWithOverlapNeedAugmentingPaths) {
  // a: {d1,d2,d3}; b (2 devices): {d1,d2}. Only a=d3, b={d1,d2} works.
  std::vector<ExtendedResource> devs = {device("d1", "n1", {{"x", "1"}, {"y", "1"}}),
                                        device("d2", "n1", {{"x", "1"}, {"y", "1"}}),
                                        device("d3", "n1", {{"x", "1"}})};
  auto a = claim("a", 1, {{"x", "1"}});
  auto b = claim("b", 2, {{"y", "1"}});
  auto fit = fitClaims({&a, &b}, ptrs(devs));
  ASSERT_TRUE(fit.fits) << fit.message;
  EXPECT_EQ(fit.assignment.at("default/a"), (std::vector<std::string>{"d3"}));
  EXPECT_EQ(fit.assignment.at("default/b"), (std::vector<std::string>{"d1", "d2"}));
}

TEST(FitClaims, JointShortageIsReportedForTheClaimsTogether) {
  std::vector<ExtendedResource> devs = {device("d1", "n1", {{"type", "k80"}})};
  auto a = claim("a", 1, {{"type", "k80"}});
  auto b = claim("b", 1, {{"type", "k80"}});
  auto fit = fitClaims({&a, &b}, ptrs(devs));
  EXPECT_FALSE(fit.fits);
  EXPECT_EQ(fit.message,
            "claims default/a, default/b: need 2 distinct devices together, only 1 matching "
            "devices free on this node");
}

TEST(FitClaims, NoDevicesAndNoClaims) {
  auto a = claim("a", 1);
  EXPECT_FALSE(fitClaims({&a}, {}).fits);
  auto fit = fitClaims({}, {});
  EXPECT_TRUE(fit.fits);
  EXPECT_TRUE(fit.assignment.empty());
}

TEST(FitClaims, EveryAssignedDeviceIsDistinctAndSatisfiesItsClaim) {
  // A larger overlapping instance: 3 claims over 6 devices with nested selectors.
  std::vector<ExtendedResource> devs;
  for (int i = 0; i < 6; ++i) {
    std::map<std::string, std::string> props{{"gen", std::to_string(i % 3)}};
    if (i < 2) {
      props["fast"] = "true";
    }
    devs.push_back(device("d" + std::to_string(i), "n1", props));
  }
  auto fast = claim("fast", 2, {{"fast", "true"}});
  auto gen0 = claim("gen0", 1, {{"gen", "0"}});
  auto any = claim("any", 3);
  auto fit = fitClaims({&any, &gen0, &fast}, ptrs(devs));
  ASSERT_TRUE(fit.fits) << fit.message;
  std::set<std::string> used;
  size_t total = 0;
  std::map<std::string, const ExtendedResourceClaim*> byKey = {
      {"default/fast", &fast}, {"default/gen0", &gen0}, {"default/any", &any}};
  for (const auto& [key, names] : fit.assignment) {
    EXPECT_EQ(names.size(), static_cast<size_t>(byKey.at(key)->extendedResourceNum)) << key;
    for (const auto& n : names) {
      used.insert(n);
      ++total;
      auto it = std::find_if(devs.begin(), devs.end(), [&](auto& d) { return d.meta.name == n; });
      EXPECT_TRUE(suits(*it, *byKey.at(key))) << key << " got " << n;
    }
  }
  EXPECT_EQ(total, 6u);
  EXPECT_EQ(used.size(), 6u);
}

TEST(ScoreNodes, BinpackPrefersFewestLeftover) {
  EXPECT_EQ(scoreNodes(leftovers({0, 5, 10}), ScoringStrategy::kBinpack),
            (std::vector<int>{10, 5, 0}));
}

TEST(ScoreNodes, SpreadPrefersMostLeftover) {
  EXPECT_EQ(scoreNodes(leftovers({0, 5, 10}), ScoringStrategy::kSpread),
            (std::vector<int>{0, 5, 10}));
}

TEST(ScoreNodes, NodesThatDoNotFitScoreZeroAndDoNotShiftTheScale) {
  EXPECT_EQ(scoreNodes(leftovers({std::nullopt, 2, 4, std::nullopt}), ScoringStrategy::kBinpack),
            (std::vector<int>{0, 10, 0, 0}));
  EXPECT_EQ(scoreNodes(leftovers({std::nullopt}), ScoringStrategy::kBinpack),
            (std::vector<int>{0}));
}

TEST(ScoreNodes, EqualCandidatesAllScoreTheMaximumAndStayInRange) {
  EXPECT_EQ(scoreNodes(leftovers({3, 3}), ScoringStrategy::kBinpack), (std::vector<int>{10, 10}));
  for (int v : scoreNodes(leftovers({0, 1, 1000000}), ScoringStrategy::kBinpack)) {
    EXPECT_GE(v, 0);
    EXPECT_LE(v, 10);
  }
  EXPECT_TRUE(scoreNodes(leftovers({}), ScoringStrategy::kSpread).empty());
}

// Without names (filter, prioritize) a greedy pass may answer first; it must never say
// anything the full matching would not, including the message when the pod does not fit.
TEST(FitEligible, CountsOnlyAnswersAgreeWithTheMatching) {
  std::mt19937 rng(11);
  std::vector<ExtendedResourceClaim> owned;
  for (int k = 0; k < 4; ++k) {
    owned.push_back(claim("c" + std::to_string(k), 1));
  }
  for (int round = 0; round < 3000; ++round) {
    const size_t claimCount = 1 + rng() % 4;
    const size_t deviceCount = rng() % 2 == 0 ? rng() % 9 : 60 + rng() % 10;
    std::vector<const ExtendedResourceClaim*> claims;
    std::vector<std::vector<size_t>> eligible(claimCount);
    std::vector<bool> matching(deviceCount, false);
    for (size_t c = 0; c < claimCount; ++c) {
      owned[c].extendedResourceNum = static_cast<int64_t>(rng() % 4);
      claims.push_back(&owned[c]);
      for (size_t d = 0; d < deviceCount; ++d) {
        if (rng() % 3 == 0) {
          eligible[c].push_back(d);
          matching[d] = true;
        }
      }
    }
    const auto matchingFree =
        static_cast<size_t>(std::count(matching.begin(), matching.end(), true));
    std::vector<std::string> deviceNames(deviceCount);
    std::vector<const std::string*> names;
    for (size_t d = 0; d < deviceCount; ++d) {
      // Formatted rather than concatenated: GCC 12 at -O3 reports a false -Wrestrict on any
      // std::string concatenation here.
      std::array<char, 24> name{};
      std::snprintf(name.data(), name.size(), "d%zu", d);
      deviceNames[d] = name.data();
      names.push_back(&deviceNames[d]);
    }
    const Fit full = fitEligible(claims, eligible, deviceCount, matchingFree, &names);
    const Fit counts = fitEligible(claims, eligible, deviceCount, matchingFree, nullptr);
    ASSERT_EQ(counts.fits, full.fits) << "round " << round;
    ASSERT_EQ(counts.message, full.message) << "round " << round;
    // Texts worked out once per request say what the claims would have said themselves.
    const ClaimTexts texts(claims);
    const Fit shared = fitEligible(claims, eligible, deviceCount, matchingFree, nullptr, &texts);
    ASSERT_EQ(shared.fits, full.fits) << "round " << round;
    ASSERT_EQ(shared.message, full.message) << "round " << round;
  }
}

// A claim whose constraint names a property takes all its devices from one group sharing that
// property's value, the smallest group that fits (the larger ones stay whole for later).
TEST(FitClaims, AConstrainedClaimTakesItsDevicesFromTheSmallestGroupThatFits) {
  std::vector<ExtendedResource> devs = {
      device("a0", "n1", {{"numa", "0"}}),
      device("a1", "n1", {{"numa", "0"}}),
      device("a2", "n1", {{"numa", "0"}}),
      device("b0", "n1", {{"numa", "1"}}),
      device("b1", "n1", {{"numa", "1"}}),
      device("c0", "n1", {{"numa", "2"}}),
      device("x", "n1", {})};  // no numa: never in a constrained allocation
  auto two = claim("two", 2);
  two.constraints = {{"numa"}};
  auto fit = fitClaims({&two}, ptrs(devs));
  ASSERT_TRUE(fit.fits) << fit.message;
  EXPECT_EQ(fit.assignment.at("default/two"), (std::vector<std::string>{"b0", "b1"}));

  auto four = claim("four", 4);
  four.constraints = {{"numa"}};
  fit = fitClaims({&four}, ptrs(devs));
  EXPECT_FALSE(fit.fits);
  EXPECT_EQ(fit.message,
            "claim default/four: at most 3 of 4 free nvidia.com/gpu sharing numa on this node");
  // Without the constraint the same node serves it.
  four.constraints.clear();
  EXPECT_TRUE(fitClaims({&four}, ptrs(devs)).fits);
}

// Two constrained claims: the first's smallest group would leave the second none; another
// grouping serves both.
TEST(FitClaims, ConstrainedClaimsTogetherTryEachGrouping) {
  std::vector<ExtendedResource> devs = {
      device("a0", "n1", {{"numa", "0"}}), device("a1", "n1", {{"numa", "0"}}),
      device("a2", "n1", {{"numa", "0"}}), device("b0", "n1", {{"numa", "1"}}),
      device("b1", "n1", {{"numa", "1"}})};
  auto first = claim("first", 2);
  first.constraints = {{"numa"}};
  auto second = claim("second", 3);
  second.constraints = {{"numa"}};
  auto fit = fitClaims({&first, &second}, ptrs(devs));
  ASSERT_TRUE(fit.fits) << fit.message;
  EXPECT_EQ(fit.assignment.at("default/first"), (std::vector<std::string>{"b0", "b1"}));
  EXPECT_EQ(fit.assignment.at("default/second"), (std::vector<std::string>{"a0", "a1", "a2"}));

  auto third = claim("third", 2);
  third.constraints = {{"numa"}};
  fit = fitClaims({&first, &second, &third}, ptrs(devs));
  EXPECT_FALSE(fit.fits);
  EXPECT_NE(fit.message.find("share their constraints' properties"), std::string::npos)
      << fit.message;
}

TEST(FitClaims, SeveralConstraintsGroupByAllTheirProperties) {
  std::vector<ExtendedResource> devs = {device("a", "n1", {{"numa", "0"}, {"root", "x"}}),
                                        device("b", "n1", {{"numa", "0"}, {"root", "y"}}),
                                        device("c", "n1", {{"numa", "1"}, {"root", "y"}}),
                                        device("d", "n1", {{"numa", "0"}, {"root", "y"}})};
  auto two = claim("two", 2);
  two.constraints = {{"numa"}, {"root"}};
  auto fit = fitClaims({&two}, ptrs(devs));
  ASSERT_TRUE(fit.fits) << fit.message;
  EXPECT_EQ(fit.assignment.at("default/two"), (std::vector<std::string>{"b", "d"}));
}

// A distinct property takes one device per value, whichever devices come first.
TEST(FitClaims, ADistinctClaimTakesOneDevicePerValue) {
  std::vector<ExtendedResource> devs = {
      device("a0", "n1", {{"root", "a"}}), device("a1", "n1", {{"root", "a"}}),
      device("a2", "n1", {{"root", "a"}}), device("b0", "n1", {{"root", "b"}}),
      device("x", "n1", {})};  // no root: never taken
  auto two = claim("two", 2);
  two.constraints = {{"", "root"}};
  auto fit = fitClaims({&two}, ptrs(devs));
  ASSERT_TRUE(fit.fits) << fit.message;
  EXPECT_EQ(fit.assignment.at("default/two"), (std::vector<std::string>{"a0", "b0"}));

  auto three = claim("three", 3);
  three.constraints = {{"", "root"}};
  fit = fitClaims({&three}, ptrs(devs));
  EXPECT_FALSE(fit.fits);
  EXPECT_EQ(fit.message,
            "claim default/three: 2 of 3 free nvidia.com/gpu each with its own root on this node");
}

// Two claims over the same devices: the flow moves a device from one claim to the other when
// that is the only way both are served.
TEST(FitClaims, DistinctClaimsBesideOthersAreServedTogetherWhenTheyCanBe) {
  std::vector<ExtendedResource> devs = {device("a0", "n1", {{"root", "a"}, {"t", "k80"}}),
                                        device("a1", "n1", {{"root", "a"}}),
                                        device("b0", "n1", {{"root", "b"}})};
  auto spread = claim("spread", 2);
  spread.constraints = {{"", "root"}};
  auto k80 = claim("k80", 1, {{"t", "k80"}});  // only a0
  auto fit = fitClaims({&spread, &k80}, ptrs(devs));
  ASSERT_TRUE(fit.fits) << fit.message;
  EXPECT_EQ(fit.assignment.at("default/spread"), (std::vector<std::string>{"a1", "b0"}));
  EXPECT_EQ(fit.assignment.at("default/k80"), (std::vector<std::string>{"a0"}));

  auto any = claim("any", 1);  // a third claim: 4 devices wanted of 3
  fit = fitClaims({&spread, &k80, &any}, ptrs(devs));
  EXPECT_FALSE(fit.fits);
  EXPECT_EQ(fit.message,
            "claims default/spread, default/k80, default/any: the 3 matching free devices on this "
            "node cannot serve every claim at once");

  // Shared and distinct together: one NUMA node, each device on a root of its own.
  std::vector<ExtendedResource> numa = {device("p", "n1", {{"numa", "0"}, {"root", "a"}}),
                                        device("q", "n1", {{"numa", "0"}, {"root", "a"}}),
                                        device("r", "n1", {{"numa", "1"}, {"root", "a"}}),
                                        device("s", "n1", {{"numa", "1"}, {"root", "b"}})};
  auto both = claim("both", 2);
  both.constraints = {{"numa", ""}, {"", "root"}};
  fit = fitClaims({&both}, ptrs(numa));
  ASSERT_TRUE(fit.fits) << fit.message;
  EXPECT_EQ(fit.assignment.at("default/both"), (std::vector<std::string>{"r", "s"}));
}

}  // namespace
}  // namespace ker

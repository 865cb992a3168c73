#include "scheduler/preemption/preemption_plan.h"

#include <gtest/gtest.h>

#include <climits>
#include <utility>
#include <vector>

#include "scheduler_fixtures.h"

namespace ker {
namespace {

using testing::claim;
using testing::device;
using Outcome = PreemptionPlan::Outcome;

class PreemptionPlanTest : public ::testing::Test {
 protected:
  // The preemptor asks for these claims (all Pending).
  void wants(std::vector<ExtendedResourceClaim> claims) {
    for (auto& c : claims) {
      claims_.pending.push_back(std::make_shared<const ExtendedResourceClaim>(std::move(c)));
    }
  }
  void freeDevice(const std::string& name, std::map<std::string, std::string> props) {
    devices_.push_back(std::make_shared<const ExtendedResource>(device(name, "n1", props)));
  }
  // A pod of the given priority whose one claim holds these devices (Bound to it) on n1.
  void holder(const std::string& pod, int32_t priority,
              const std::vector<std::pair<std::string, std::map<std::string, std::string>>>& held,
              bool violatesPdb = false) {
    PreemptionHolder h{.uid = "uid-" + pod,
                       .key = "default/" + pod,
                       .priority = priority,
                       .violatesPdb = violatesPdb};
    std::vector<std::string> names;
    for (const auto& [name, props] : held) {
      auto d = device(name, "n1", props);
      d.phase = DevicePhase::kBound;
      d.phaseWritten = true;
      d.claimRef = ClaimRef{"default", pod + "-erc", "uid-" + pod + "-erc"};
      devices_.push_back(std::make_shared<const ExtendedResource>(std::move(d)));
      names.push_back(name);
    }
    h.claims.push_back(HeldClaim{"default/" + pod + "-erc", "nvidia.com/gpu", std::move(names)});
    holders_.push_back(std::move(h));
  }
  PreemptionPlan plan(int32_t priority = 100, bool never = false, std::vector<size_t> released = {},
                      const Scoring& scoring = {}) {
    return planPreemption(PreemptionRequest{.claims = claims_,
                                            .podUid = "preemptor-uid",
                                            .priority = priority,
                                            .preemptNever = never,
                                            .nodeName = "n1",
                                            .nodeLabels = {},
                                            .devices = devices_,
                                            .holders = holders_,
                                            .released = std::move(released),
                                            .scoring = scoring});
  }
  // The victims' pod keys, in the plan's order.
  std::vector<std::string> victims(const PreemptionPlan& p) const {
    std::vector<std::string> out;
    for (const size_t v : p.victims) {
      out.push_back(holders_.at(v).key);
    }
    return out;
  }

  PodClaims claims_;
  std::vector<DevicePtr> devices_;
  std::vector<PreemptionHolder> holders_;
};

const std::map<std::string, std::string> kK80{{"type", "k80"}};
const std::map<std::string, std::string> kP100{{"type", "p100"}};

TEST_F(PreemptionPlanTest, FitsAlreadyWhenFreeDevicesAreEnough) {
  wants({claim("erc", 1, kK80)});
  freeDevice("gpu-0", kK80);
  holder("low", 1, {{"gpu-1", kK80}});
  const auto p = plan();
  EXPECT_EQ(p.outcome, Outcome::kFitsAlready);
  EXPECT_TRUE(p.victims.empty());
  EXPECT_EQ(p.assignment.at("default/erc"), (std::vector<std::string>{"gpu-0"}));
}

// The devices kept for the preemptor are the ones its bind would choose: with a topology
// property, the last free one of a broken island rather than the first by name.
TEST_F(PreemptionPlanTest, KeepsTheDevicesTheScoringWouldChoose) {
  wants({claim("erc", 1, kK80)});
  freeDevice("gpu-0", {{"type", "k80"}, {"numa", "0"}});
  freeDevice("gpu-1", {{"type", "k80"}, {"numa", "0"}});
  freeDevice("gpu-2", {{"type", "k80"}, {"numa", "1"}});
  EXPECT_EQ(plan().assignment.at("default/erc"), (std::vector<std::string>{"gpu-0"}));
  EXPECT_EQ(
      plan(100, false, {}, Scoring{ScoringStrategy::kBinpack, "numa"}).assignment.at("default/erc"),
      (std::vector<std::string>{"gpu-2"}));
}

// Holders released already (kube-scheduler's own victims) count as gone whatever their
// priority, and are never among the victims the plan adds.
TEST_F(PreemptionPlanTest, ReleasedHoldersFreeTheirDevicesAndAreNeverVictims) {
  wants({claim("erc", 2, kK80)});
  holder("chosen", 500, {{"gpu-0", kK80}});
  holder("a", 1, {{"gpu-1", kK80}});
  holder("b", 2, {{"gpu-2", kK80}});
  const auto p = plan(100, false, {0});
  ASSERT_EQ(p.outcome, Outcome::kVictims);
  EXPECT_EQ(victims(p), (std::vector<std::string>{"default/a"}));
  EXPECT_EQ(p.assignment.at("default/erc"), (std::vector<std::string>{"gpu-0", "gpu-1"}));
  // One device wanted: the released holder's is enough.
  claims_.pending.clear();
  wants({claim("erc", 1, kK80)});
  const auto one = plan(100, false, {0});
  EXPECT_EQ(one.outcome, Outcome::kFitsAlready);
  EXPECT_EQ(one.assignment.at("default/erc"), (std::vector<std::string>{"gpu-0"}));
}

TEST_F(PreemptionPlanTest, TakesExactlyTheVictimsNeeded) {
  wants({claim("erc", 1, kK80)});
  holder("b", 1, {{"gpu-1", kK80}});
  holder("a", 1, {{"gpu-0", kK80}});
  holder("c", 1, {{"gpu-2", kK80}});
  const auto p = plan();
  ASSERT_EQ(p.outcome, Outcome::kVictims);
  // One is enough; ties go to the first key.
  EXPECT_EQ(victims(p), (std::vector<std::string>{"default/a"}));
  EXPECT_EQ(p.assignment.at("default/erc"), (std::vector<std::string>{"gpu-0"}));
  EXPECT_EQ(p.pdbViolations, 0);
}

TEST_F(PreemptionPlanTest, AddsOnlyWhatTheFreeDevicesLack) {
  wants({claim("erc", 3, kK80)});
  freeDevice("gpu-0", kK80);
  holder("a", 1, {{"gpu-1", kK80}});
  holder("b", 2, {{"gpu-2", kK80}});
  holder("c", 3, {{"gpu-3", kK80}});
  const auto p = plan();
  ASSERT_EQ(p.outcome, Outcome::kVictims);
  EXPECT_EQ(victims(p), (std::vector<std::string>{"default/a", "default/b"}));
  EXPECT_EQ(p.assignment.at("default/erc"), (std::vector<std::string>{"gpu-0", "gpu-1", "gpu-2"}));
}

TEST_F(PreemptionPlanTest, LowerPrioritiesComeBeforeFewerPods) {
  wants({claim("erc", 2, kK80)});
  holder("big", 5, {{"gpu-0", kK80}, {"gpu-1", kK80}});
  holder("x", 1, {{"gpu-2", kK80}});
  holder("y", 1, {{"gpu-3", kK80}});
  const auto p = plan();
  ASSERT_EQ(p.outcome, Outcome::kVictims);
  EXPECT_EQ(victims(p), (std::vector<std::string>{"default/x", "default/y"}));
}

TEST_F(PreemptionPlanTest, FewerPodsAtTheSamePriority) {
  wants({claim("erc", 2, kK80)});
  holder("a", 1, {{"gpu-0", kK80}});
  holder("b", 1, {{"gpu-1", kK80}});
  holder("pair", 1, {{"gpu-2", kK80}, {"gpu-3", kK80}});
  const auto p = plan();
  ASSERT_EQ(p.outcome, Outcome::kVictims);
  EXPECT_EQ(victims(p), (std::vector<std::string>{"default/pair"}));
}

TEST_F(PreemptionPlanTest, FewerPdbViolationsAmongEqualSets) {
  wants({claim("erc", 1, kK80)});
  holder("a", 1, {{"gpu-0", kK80}}, /*violatesPdb=*/true);
  holder("b", 1, {{"gpu-1", kK80}});
  const auto p = plan();
  ASSERT_EQ(p.outcome, Outcome::kVictims);
  EXPECT_EQ(victims(p), (std::vector<std::string>{"default/b"}));
  EXPECT_EQ(p.pdbViolations, 0);
}

TEST_F(PreemptionPlanTest, CountsPdbViolationsItCannotAvoid) {
  wants({claim("erc", 2, kK80)});
  holder("a", 1, {{"gpu-0", kK80}}, /*violatesPdb=*/true);
  holder("b", 1, {{"gpu-1", kK80}});
  const auto p = plan();
  ASSERT_EQ(p.outcome, Outcome::kVictims);
  EXPECT_EQ(victims(p), (std::vector<std::string>{"default/a", "default/b"}));
  EXPECT_EQ(p.pdbViolations, 1);
}

TEST_F(PreemptionPlanTest, PdbViolationsBeatPriority) {
  // As kube-scheduler's selectVictimsOnNode: protected holders are reprieved first, so a
  // higher-priority unprotected holder goes before a lower-priority protected one.
  wants({claim("erc", 1, kK80)});
  holder("guarded", 1, {{"gpu-0", kK80}}, /*violatesPdb=*/true);
  holder("higher", 2, {{"gpu-1", kK80}});
  const auto p = plan();
  ASSERT_EQ(p.outcome, Outcome::kVictims);
  EXPECT_EQ(victims(p), (std::vector<std::string>{"default/higher"}));
  EXPECT_EQ(p.pdbViolations, 0);
}

TEST_F(PreemptionPlanTest, ProtectedHoldersAreSparedMostImportantFirst) {
  // Only protected holders: the more important one is spared, the other violates.
  wants({claim("erc", 1, kK80)});
  holder("low", 1, {{"gpu-0", kK80}}, /*violatesPdb=*/true);
  holder("mid", 2, {{"gpu-1", kK80}}, /*violatesPdb=*/true);
  const auto p = plan();
  ASSERT_EQ(p.outcome, Outcome::kVictims);
  EXPECT_EQ(victims(p), (std::vector<std::string>{"default/low"}));
  EXPECT_EQ(p.pdbViolations, 1);
}

TEST_F(PreemptionPlanTest, AProtectedVictimItCannotSpareStillGetsTheSmallestRest) {
  // Three devices needed: the protected holder's two and one of the rest, the lowest.
  wants({claim("erc", 3, kK80)});
  holder("guarded", 5, {{"gpu-0", kK80}, {"gpu-1", kK80}}, /*violatesPdb=*/true);
  holder("x", 1, {{"gpu-2", kK80}});
  holder("y", 3, {{"gpu-3", kK80}});
  const auto p = plan();
  ASSERT_EQ(p.outcome, Outcome::kVictims);
  EXPECT_EQ(victims(p), (std::vector<std::string>{"default/x", "default/guarded"}));
  EXPECT_EQ(p.pdbViolations, 1);
}

TEST_F(PreemptionPlanTest, EqualOrHigherPriorityIsNeverAVictim) {
  wants({claim("erc", 1, kK80)});
  holder("equal", 100, {{"gpu-0", kK80}});
  holder("higher", 200, {{"gpu-1", kK80}});
  const auto p = plan(100);
  EXPECT_EQ(p.outcome, Outcome::kNone);
  EXPECT_TRUE(p.victims.empty());
  EXPECT_NE(p.message.find("no pod of lower priority"), std::string::npos) << p.message;
}

TEST_F(PreemptionPlanTest, LowerHoldersNotEnoughDropsTheNode) {
  wants({claim("erc", 2, kK80)});
  holder("low", 1, {{"gpu-0", kK80}});
  holder("high", 500, {{"gpu-1", kK80}});
  const auto p = plan(100);
  EXPECT_EQ(p.outcome, Outcome::kNone);
  EXPECT_TRUE(p.victims.empty());
  EXPECT_NE(p.message.find("not even preempting all 1"), std::string::npos) << p.message;
}

TEST_F(PreemptionPlanTest, PreemptionPolicyNeverPreemptsNobody) {
  wants({claim("erc", 1, kK80)});
  holder("low", 1, {{"gpu-0", kK80}});
  const auto p = plan(100, /*never=*/true);
  EXPECT_EQ(p.outcome, Outcome::kNone);
  EXPECT_TRUE(p.victims.empty());
}

TEST_F(PreemptionPlanTest, UnresolvableClaimsPreemptNobody) {
  claims_.block = ClaimsBlock::kClaimMissing;
  claims_.blockMessage = "claim default/erc not found";
  holder("low", 1, {{"gpu-0", kK80}});
  const auto p = plan();
  EXPECT_EQ(p.outcome, Outcome::kNone);
  EXPECT_EQ(p.message, "claim default/erc not found");
}

TEST_F(PreemptionPlanTest, ClaimBoundElsewhereDropsTheNode) {
  auto bound = claim("erc", 1, kK80);
  bound.phase = ClaimPhase::kBound;
  bound.nodeName = "n2";
  claims_.boundToPod.push_back(std::make_shared<const ExtendedResourceClaim>(bound));
  claims_.fixedNode = "n2";
  holder("low", 1, {{"gpu-0", kK80}});
  EXPECT_EQ(plan().outcome, Outcome::kNone);
}

TEST_F(PreemptionPlanTest, HoldersOfNonMatchingDevicesAreSpared) {
  wants({claim("erc", 1, kK80)});
  holder("lowest", 1, {{"gpu-0", kP100}});
  holder("low", 5, {{"gpu-1", kK80}});
  const auto p = plan();
  ASSERT_EQ(p.outcome, Outcome::kVictims);
  EXPECT_EQ(victims(p), (std::vector<std::string>{"default/low"}));
}

TEST_F(PreemptionPlanTest, NamedListPicksTheHolderOfTheNamedDevice) {
  auto named = claim("erc", 1, kK80);
  named.extendedResourceNames = std::vector<std::string>{"gpu-1"};
  wants({named});
  holder("a", 1, {{"gpu-0", kK80}});
  holder("b", 2, {{"gpu-1", kK80}});
  const auto p = plan();
  ASSERT_EQ(p.outcome, Outcome::kVictims);
  EXPECT_EQ(victims(p), (std::vector<std::string>{"default/b"}));
  EXPECT_EQ(p.assignment.at("default/erc"), (std::vector<std::string>{"gpu-1"}));
}

TEST_F(PreemptionPlanTest, SeveralClaimsPartlyFitOnFreeDevices) {
  wants({claim("k80-erc", 1, kK80), claim("p100-erc", 1, kP100)});
  freeDevice("gpu-0", kK80);
  holder("k80-holder", 1, {{"gpu-1", kK80}});
  holder("p100-holder", 2, {{"gpu-2", kP100}});
  const auto p = plan();
  ASSERT_EQ(p.outcome, Outcome::kVictims);
  EXPECT_EQ(victims(p), (std::vector<std::string>{"default/p100-holder"}));
  EXPECT_EQ(p.assignment.at("default/k80-erc"), (std::vector<std::string>{"gpu-0"}));
  EXPECT_EQ(p.assignment.at("default/p100-erc"), (std::vector<std::string>{"gpu-2"}));
}

TEST_F(PreemptionPlanTest, SeveralClaimsEachNeedAVictim) {
  wants({claim("k80-erc", 1, kK80), claim("p100-erc", 1, kP100)});
  holder("k80-a", 1, {{"gpu-0", kK80}});
  holder("k80-b", 1, {{"gpu-1", kK80}});
  holder("p100", 1, {{"gpu-2", kP100}});
  const auto p = plan();
  ASSERT_EQ(p.outcome, Outcome::kVictims);
  EXPECT_EQ(victims(p), (std::vector<std::string>{"default/k80-a", "default/p100"}));
}

TEST_F(PreemptionPlanTest, AHolderReleasesAllItsClaims) {
  wants({claim("k80-erc", 1, kK80), claim("p100-erc", 1, kP100)});
  holder("k80-only", 1, {{"gpu-0", kK80}});
  // One pod, two claims: a k80 and a p100.
  PreemptionHolder both{.uid = "uid-both", .key = "default/both", .priority = 2};
  for (const auto& [name, props, claimName] :
       {std::tuple{"gpu-1", kK80, "both-k80"}, std::tuple{"gpu-2", kP100, "both-p100"}}) {
    auto d = device(name, "n1", props);
    d.phase = DevicePhase::kBound;
    d.claimRef = ClaimRef{"default", claimName, std::string("uid-") + claimName};
    devices_.push_back(std::make_shared<const ExtendedResource>(std::move(d)));
    both.claims.push_back(HeldClaim{std::string("default/") + claimName, "nvidia.com/gpu", {name}});
  }
  holders_.push_back(both);
  const auto p = plan();
  ASSERT_EQ(p.outcome, Outcome::kVictims);
  // The p100 is only theirs: releasing them alone is enough, and fewer pods than two.
  EXPECT_EQ(victims(p), (std::vector<std::string>{"default/both"}));
}

TEST_F(PreemptionPlanTest, ADeviceStillHeldByAnotherClaimIsNotFreed) {
  wants({claim("erc", 1, kK80)});
  holder("low", 1, {{"gpu-0", kK80}});
  // A higher-priority claim lists the same device (lost and recovered under its name).
  holders_.push_back(
      PreemptionHolder{.uid = "uid-high",
                       .key = "default/high",
                       .priority = 500,
                       .claims = {HeldClaim{"default/high-erc", "nvidia.com/gpu", {"gpu-0"}}}});
  const auto p = plan(100);
  EXPECT_EQ(p.outcome, Outcome::kNone);
}

TEST_F(PreemptionPlanTest, DevicesTheNodeDoesNotReachAreNoReason) {
  wants({claim("erc", 1, kK80)});
  // Its claim holds a device on another node, not among the node's devices.
  holders_.push_back(PreemptionHolder{
      .uid = "uid-elsewhere",
      .key = "default/elsewhere",
      .priority = 1,
      .claims = {HeldClaim{"default/elsewhere-erc", "nvidia.com/gpu", {"gpu-on-n2"}}}});
  holder("here", 2, {{"gpu-0", kK80}});
  const auto p = plan();
  ASSERT_EQ(p.outcome, Outcome::kVictims);
  EXPECT_EQ(victims(p), (std::vector<std::string>{"default/here"}));
}

TEST_F(PreemptionPlanTest, AvailableButClaimHeldDeviceCountsAsHeld) {
  wants({claim("erc", 1, kK80)});
  // The device reads Available (recreated), but the low pod's claim still lists it.
  devices_.push_back(std::make_shared<const ExtendedResource>(device("gpu-0", "n1", kK80)));
  holders_.push_back(
      PreemptionHolder{.uid = "uid-low",
                       .key = "default/low",
                       .priority = 1,
                       .claims = {HeldClaim{"default/low-erc", "nvidia.com/gpu", {"gpu-0"}}}});
  const auto p = plan();
  ASSERT_EQ(p.outcome, Outcome::kVictims);
  EXPECT_EQ(victims(p), (std::vector<std::string>{"default/low"}));
}

TEST_F(PreemptionPlanTest, ManyHoldersPastTheExactBudgetStillGiveAMinimalSet) {
  wants({claim("erc", 10, kK80)});
  for (int i = 0; i < 24; ++i) {
    char name[8];
    std::snprintf(name, sizeof name, "p%02d", i);
    holder(name, 1, {{std::string("gpu-") + name, kK80}});
  }
  const auto p = plan();
  ASSERT_EQ(p.outcome, Outcome::kVictims);
  EXPECT_EQ(p.victims.size(), 10u);
  EXPECT_EQ(p.assignment.at("default/erc").size(), 10u);
}

TEST_F(PreemptionPlanTest, NegativePrioritiesAreLowerToo) {
  wants({claim("erc", 1, kK80)});
  holder("best-effort", -10, {{"gpu-0", kK80}});
  holder("zero", 0, {{"gpu-1", kK80}});
  const auto p = plan(0);
  ASSERT_EQ(p.outcome, Outcome::kVictims);
  EXPECT_EQ(victims(p), (std::vector<std::string>{"default/best-effort"}));
}

TEST_F(PreemptionPlanTest, UnknownPodsGivenTheTopPriorityAreSpared) {
  wants({claim("erc", 1, kK80)});
  holder("unknown", INT32_MAX, {{"gpu-0", kK80}});
  EXPECT_EQ(plan(INT32_MAX - 1).outcome, Outcome::kNone);
}

}  // namespace
}  // namespace ker

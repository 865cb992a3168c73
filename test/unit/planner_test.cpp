#include "scheduler/fit/planner.h"

#include <gtest/gtest.h>

#include "scheduler_fixtures.h"

namespace ker {
namespace {

using testing::claim;
using testing::device;

class PlannerTest : public ::testing::Test {
 protected:
  void addClaim(ExtendedResourceClaim c) {
    claims_[objectKey(c.meta.ns, c.meta.name)] = std::make_shared<const ExtendedResourceClaim>(c);
  }
  // Claim "mine", Bound to pod web (uid pod-uid) on n2.
  void addClaimBoundToWebOnN2() {
    auto mine = claim("mine", 1);
    mine.phase = ClaimPhase::kBound;
    mine.podRef = PodRef{"web", "pod-uid"};
    mine.nodeName = "n2";
    mine.allocated = {"gpu-9"};
    addClaim(mine);
  }
  void addDevice(ExtendedResource d) {
    index_.upsert(std::make_shared<const ExtendedResource>(std::move(d)));
  }
  PodClaims resolve(const Pod& pod) {
    return resolveClaims(pod, [&](const std::string& key) -> ClaimPtr {
      auto it = claims_.find(key);
      return it == claims_.end() ? nullptr : it->second;
    });
  }
  static Pod pod(std::vector<std::string> claims, const std::string& uid = "pod-uid") {
    Pod p;
    p.meta.name = "web";
    p.meta.ns = "default";
    p.meta.uid = uid;
    p.claims = std::move(claims);
    return p;
  }

  std::map<std::string, ClaimPtr> claims_;
  DeviceIndex index_;
};

TEST_F(PlannerTest, PendingClaimFitsOnlyWhereDevicesAre) {
  addClaim(claim("k80-erc", 1, {{"type", "k80"}}));
  addDevice(device("gpu-0", "n1", {{"type", "k80"}}));
  addDevice(device("gpu-1", "n2", {{"type", "p100"}}));
  auto pc = resolve(pod({"k80-erc"}));
  ASSERT_EQ(pc.pending.size(), 1u);

  auto ok = planNode(pc, "pod-uid", "n1", {}, index_);
  EXPECT_TRUE(ok.fits);
  EXPECT_EQ(ok.assignment.at("default/k80-erc"), (std::vector<std::string>{"gpu-0"}));

  auto no = planNode(pc, "pod-uid", "n2", {}, index_);
  EXPECT_FALSE(no.fits);
  EXPECT_FALSE(no.unresolvable);
  EXPECT_EQ(no.message,
            "claim default/k80-erc: 0 of 1 free nvidia.com/gpu with type=k80 on this node");
}

TEST_F(PlannerTest, OneFitterAnswersEveryNodeAsPlanNodeDoes) {
  addClaim(claim("k80-erc", 1, {{"type", "k80"}}));
  addClaim(claim("pair-erc", 2, {}));
  auto named = claim("named-erc", 1, {{"type", "k80"}});
  named.extendedResourceNames = std::vector<std::string>{"gpu-n2-1"};
  addClaim(named);
  for (const std::string node : {"n1", "n2", "n3"}) {
    for (int i = 0; i < 3; ++i) {
      // Every node holds k80s and p100s, so selector decisions are shared across nodes.
      addDevice(device("gpu-" + node + "-" + std::to_string(i), node,
                       {{"type", i == 0 ? "p100" : "k80"}}));
    }
  }
  for (const auto& claims : std::vector<std::vector<std::string>>{
           {"k80-erc"}, {"k80-erc", "pair-erc"}, {"named-erc"}, {"named-erc", "k80-erc"}}) {
    const auto pc = resolve(pod(claims));
    NodeFitter fitter(pc, "pod-uid", index_);
    EXPECT_FALSE(fitter.needsNodeLabels());
    for (const std::string node : {"n1", "n2", "n3", "n4"}) {
      const auto want = planNode(pc, "pod-uid", node, {}, index_);
      const auto got = fitter.plan(node, {}, false);
      EXPECT_EQ(got.fits, want.fits) << node << " " << claims.size();
      EXPECT_EQ(got.message, want.message) << node;
      EXPECT_EQ(got.cost, want.cost) << node;
      EXPECT_TRUE(got.assignment.empty());
    }
  }
  const auto pc = resolve(pod({"named-erc"}));
  EXPECT_TRUE(planNode(pc, "pod-uid", "n2", {}, index_).fits);
  EXPECT_FALSE(planNode(pc, "pod-uid", "n1", {}, index_).fits);
}

// The fitter decides each distinct shape of free devices once per request: nodes of equal
// shape (even with different property sets the claims treat alike) share an answer, nodes of
// other shapes get their own, and a node whose devices change is decided afresh.
TEST_F(PlannerTest, NodesOfOneShapeShareAnAnswerAndChangesAreSeen) {
  addClaim(claim("k80-erc", 1, {{"type", "k80"}}));
  addClaim(claim("pair-erc", 2, {}));
  addClaim(claim("k80-pair", 2, {{"type", "k80"}}));
  const std::map<std::string, std::vector<std::map<std::string, std::string>>> nodes = {
      {"a1", {{{"type", "k80"}}, {{"type", "k80"}}, {{"type", "p100"}}}},
      {"a2", {{{"type", "k80"}, {"zone", "b"}}, {{"type", "k80"}}, {{"type", "p100"}}}},
      {"b1", {{{"type", "k80"}}}},
      {"c1", {{{"type", "p100"}}, {{"type", "p100"}}, {{"type", "p100"}}}},
      {"d1", {{{"type", "k80"}}, {{"type", "k80"}}, {{"type", "k80"}}, {{"type", "k80"}}}},
  };
  for (const auto& [node, props] : nodes) {
    for (size_t i = 0; i < props.size(); ++i) {
      addDevice(device("gpu-" + node + "-" + std::to_string(i), node, props[i]));
    }
  }
  auto same = [&](NodeFitter& fitter, const PodClaims& pc, const std::string& node) {
    const auto want = planNode(pc, "pod-uid", node, {}, index_);
    const auto got = fitter.plan(node, {}, false);
    EXPECT_EQ(got.fits, want.fits) << node;
    EXPECT_EQ(got.message, want.message) << node;
    EXPECT_EQ(got.cost, want.cost) << node;
    return got.fits;
  };
  for (const auto& claims : std::vector<std::vector<std::string>>{{"k80-erc"},
                                                                  {"pair-erc"},
                                                                  {"k80-pair"},
                                                                  {"k80-erc", "pair-erc"},
                                                                  {"k80-erc", "k80-pair"},
                                                                  {"k80-pair", "pair-erc"}}) {
    const auto pc = resolve(pod(claims));
    NodeFitter fitter(pc, "pod-uid", index_);
    for (int round = 0; round < 2; ++round) {
      for (const std::string node : {"d1", "a1", "c1", "a2", "b1", "zz"}) {
        same(fitter, pc, node);
      }
    }
  }
  // planAll answers in runs as plan() does node by node, also for a node where another
  // pod's bind holds a device and the runs' counted path must give way.
  ASSERT_TRUE(index_.holdForBind({"gpu-d1-3"}, "other-pod"));
  std::vector<std::string_view> many;
  const std::vector<std::string> names = {"d1", "a1", "c1", "a2", "b1", "zz"};
  for (size_t i = 0; i < 150; ++i) {
    many.push_back(names[i * 7 % names.size()]);
  }
  for (const auto& claims : std::vector<std::vector<std::string>>{
           {"k80-erc"}, {"k80-pair", "pair-erc"}, {"k80-erc", "k80-pair"}}) {
    const auto pc = resolve(pod(claims));
    NodeFitter fitter(pc, "pod-uid", index_);
    std::vector<NodePlan> plans;
    fitter.planAll(many, /*withMessage=*/true, [&](size_t i, NodePlan& plan) {
      EXPECT_EQ(i, plans.size());
      plans.push_back(plan);
    });
    ASSERT_EQ(plans.size(), many.size());
    for (size_t i = 0; i < many.size(); ++i) {
      const auto want = planNode(pc, "pod-uid", std::string(many[i]), {}, index_);
      EXPECT_EQ(plans[i].fits, want.fits) << many[i];
      EXPECT_EQ(plans[i].message, want.message) << many[i];
      EXPECT_EQ(plans[i].cost, want.cost) << many[i];
    }
  }
  index_.dropAllHolds("other-pod");
  const auto pc = resolve(pod({"k80-erc", "k80-pair"}));
  NodeFitter fitter(pc, "pod-uid", index_);
  EXPECT_TRUE(same(fitter, pc, "d1"));
  EXPECT_FALSE(same(fitter, pc, "a1"));
  // One k80 more on a1 lets it serve these claims; two fewer on d1 do not.
  addDevice(device("gpu-a1-9", "a1", {{"type", "k80"}, {"zone", "c"}}));
  for (const std::string name : {"gpu-d1-0", "gpu-d1-1"}) {
    auto taken = device(name, "d1", {{"type", "k80"}});
    taken.phase = DevicePhase::kBound;
    addDevice(taken);
  }
  EXPECT_TRUE(same(fitter, pc, "a1"));
  EXPECT_FALSE(same(fitter, pc, "d1"));
}

TEST_F(PlannerTest, LabelPlacedDevicesMakeTheFitterAskForLabels) {
  addClaim(claim("any", 1, {}));
  auto floating = device("zonal", "", {});
  floating.nodeAffinity =
      NodeSelector{{NodeSelectorTerm{{{"zone", SelectorOperator::kIn, {"z1"}}}, {}}}};
  addDevice(floating);
  const auto pc = resolve(pod({"any"}));
  NodeFitter fitter(pc, "pod-uid", index_);
  EXPECT_TRUE(fitter.needsNodeLabels());
  EXPECT_TRUE(fitter.plan("n9", {{"zone", "z1"}}, false).fits);
  EXPECT_FALSE(fitter.plan("n9", {{"zone", "z2"}}, false).fits);
}

TEST_F(PlannerTest, MissingLostHeldAndInvalidClaimsAreUnresolvable) {
  auto lost = claim("lost", 1);
  lost.phase = ClaimPhase::kLost;
  lost.message = "device gpu-0 was deleted";
  addClaim(lost);
  auto held = claim("held", 1);
  held.phase = ClaimPhase::kBound;
  held.podRef = PodRef{"other", "other-uid"};
  held.nodeName = "n1";
  addClaim(held);
  auto bad = claim("bad", 1);
  bad.invalid = "spec.extendedResourceNum: not an integer";
  addClaim(bad);

  auto going = claim("going", 1);
  going.meta.deleting = true;
  addClaim(going);

  struct Case {
    std::string claim;
    ClaimsBlock block;
    std::string message;
  } cases[] = {
      {"missing", ClaimsBlock::kClaimMissing, "claim default/missing not found"},
      {"lost", ClaimsBlock::kClaimLost, "claim default/lost is Lost: device gpu-0 was deleted"},
      {"held", ClaimsBlock::kClaimHeld, "claim default/held is held by pod other"},
      {"bad", ClaimsBlock::kClaimInvalid,
       "claim default/bad is invalid: spec.extendedResourceNum: not an integer"},
      {"going", ClaimsBlock::kClaimDeleting, "claim default/going is being deleted"},
  };
  for (const auto& c : cases) {
    const PodClaims pc = resolve(pod({c.claim}));
    EXPECT_EQ(pc.block, c.block) << c.claim;
    EXPECT_TRUE(pc.unresolvable()) << c.claim;
    auto plan = planNode(pc, "pod-uid", "n1", {}, index_);
    EXPECT_FALSE(plan.fits) << c.claim;
    EXPECT_TRUE(plan.unresolvable) << c.claim;
    EXPECT_EQ(plan.message, c.message);
  }
}

TEST_F(PlannerTest, ClaimBoundToThisPodPassesOnlyItsNode) {
  addClaimBoundToWebOnN2();
  auto pc = resolve(pod({"mine"}));
  EXPECT_TRUE(planNode(pc, "pod-uid", "n2", {}, index_).fits);
  auto other = planNode(pc, "pod-uid", "n1", {}, index_);
  EXPECT_FALSE(other.fits);
  EXPECT_TRUE(other.unresolvable);
  EXPECT_EQ(other.message, "claim default/mine is already bound to this pod on node n2");
}

// A request without the pod's UID (not kube-scheduler's, which always sends it) still sees
// its own bound claims, by name; the UID decides whenever there is one.
TEST_F(PlannerTest, PodWithoutUidOwnsClaimsBoundToItsName) {
  addClaimBoundToWebOnN2();
  auto noUid = resolve(pod({"mine"}, ""));
  EXPECT_EQ(noUid.block, ClaimsBlock::kNone) << noUid.blockMessage;
  EXPECT_EQ(noUid.fixedNode, "n2");
  const auto recreated = resolve(pod({"mine"}, "recreated-uid"));
  EXPECT_EQ(recreated.block, ClaimsBlock::kClaimHeld);
  EXPECT_EQ(recreated.blockMessage, "claim default/mine is held by pod web");
}

TEST_F(PlannerTest, InvalidPodAnnotationIsUnresolvable) {
  Pod p = pod({});
  p.invalid = "annotation extendedresource.io/claims: \"Bad_Name\" is not a valid claim name";
  auto plan = planNode(resolve(p), "pod-uid", "n1", {}, index_);
  EXPECT_TRUE(plan.unresolvable);
  EXPECT_NE(plan.message.find("Bad_Name"), std::string::npos);
}

TEST_F(PlannerTest, LeftoverCountsMatchingFreeDevicesAfterAllocation) {
  addClaim(claim("one", 1, {{"type", "k80"}}));
  for (int i = 0; i < 4; ++i) {
    addDevice(device("gpu-" + std::to_string(i), "n1", {{"type", "k80"}}));
  }
  addDevice(device("other", "n1", {{"type", "p100"}}));
  auto plan = planNode(resolve(pod({"one"})), "pod-uid", "n1", {}, index_);
  ASSERT_TRUE(plan.fits);
  EXPECT_EQ(plan.cost.leftover, 3u);
}

TEST_F(PlannerTest, DevicesReservedByAnotherPodAreNotOffered) {
  addClaim(claim("one", 1));
  addDevice(device("gpu-0", "n1", {}));
  ASSERT_TRUE(index_.holdForBind({"gpu-0"}, "someone-else"));
  auto plan = planNode(resolve(pod({"one"})), "pod-uid", "n1", {}, index_);
  EXPECT_FALSE(plan.fits);
}

TEST_F(PlannerTest, FilterAnswersRespectBindsInFlight) {
  addClaim(claim("two", 2, {}));
  addDevice(device("gpu-0", "n1", {}));
  addDevice(device("gpu-1", "n1", {}));
  const auto pc = resolve(pod({"two"}));
  ASSERT_TRUE(index_.holdForBind({"gpu-1"}, "other-pod"));
  EXPECT_FALSE(NodeFitter(pc, "pod-uid", index_).plan("n1", {}, false).fits);
  index_.dropAllHolds("other-pod");
  ASSERT_TRUE(index_.holdForBind({"gpu-1"}, "pod-uid"));  // its own bind retried
  EXPECT_TRUE(NodeFitter(pc, "pod-uid", index_).plan("n1", {}, false).fits);
  index_.dropAllHolds("pod-uid");
  const auto plan = NodeFitter(pc, "pod-uid", index_).plan("n1", {}, false);
  EXPECT_TRUE(plan.fits);
  EXPECT_EQ(plan.cost.leftover, 0u);
}

// A shareable claim allocated to another pod is joined where it is: its node alone passes,
// nothing is allocated again, and a pod beyond the cap is told why it waits.
TEST_F(PlannerTest, ASharedClaimIsJoinedOnItsNodeUpToItsCap) {
  auto shared = claim("shared", 1);
  shared.shareable = true;
  shared.phase = ClaimPhase::kBound;
  shared.sharedHolders = {PodRef{"first", "first-uid"}};
  shared.nodeName = "n2";
  shared.allocated = {"gpu-9"};
  addClaim(shared);

  auto pc = resolve(pod({"shared"}));
  EXPECT_EQ(pc.block, ClaimsBlock::kNone) << pc.blockMessage;
  EXPECT_TRUE(pc.pending.empty());
  ASSERT_EQ(pc.joining.size(), 1u);
  auto there = planNode(pc, "pod-uid", "n2", {}, index_);
  EXPECT_TRUE(there.fits);
  EXPECT_TRUE(there.assignment.empty());
  auto elsewhere = planNode(pc, "pod-uid", "n1", {}, index_);
  EXPECT_FALSE(elsewhere.fits);
  EXPECT_TRUE(elsewhere.unresolvable);
  EXPECT_EQ(elsewhere.message, "shared claim default/shared is allocated on node n2");

  // A holder already: a retried bind reuses it.
  shared.sharedHolders.push_back(PodRef{"web", "pod-uid"});
  addClaim(shared);
  pc = resolve(pod({"shared"}));
  EXPECT_EQ(pc.boundToPod.size(), 1u);
  EXPECT_TRUE(pc.joining.empty());

  shared.sharedHolders.clear();
  for (size_t i = 0; i < kMaxClaimHolders; ++i) {
    shared.sharedHolders.push_back(PodRef{"p" + std::to_string(i), "uid-" + std::to_string(i)});
  }
  addClaim(shared);
  pc = resolve(pod({"shared"}));
  EXPECT_EQ(pc.block, ClaimsBlock::kClaimHeld);
  EXPECT_EQ(pc.blockMessage,
            "shared claim default/shared already has 32 holders, the most 32 it may have");
}

TEST_F(PlannerTest, AClaimThatIsNotShareableStaysWithItsOnePod) {
  auto held = claim("held", 1);
  held.phase = ClaimPhase::kBound;
  held.podRef = PodRef{"first", "first-uid"};
  held.nodeName = "n2";
  held.allocated = {"gpu-9"};
  addClaim(held);
  auto pc = resolve(pod({"held"}));
  EXPECT_TRUE(pc.joining.empty());
  EXPECT_EQ(pc.block, ClaimsBlock::kClaimHeld);
  EXPECT_EQ(pc.blockMessage, "claim default/held is held by pod first");
}

// A comparison compares quantities, and the filter's reason says when a device's property
// could not be read as one.
TEST_F(PlannerTest, AComparisonSelectsByQuantityAndNamesAnUnreadableProperty) {
  auto big = claim("big", 1);
  big.metadataRequirements.matchExpressions = {{"memory", SelectorOperator::kGe, {"40Gi"}}};
  addClaim(big);
  addDevice(device("gpu-small", "n1", {{"memory", "16Gi"}}));
  addDevice(device("gpu-odd", "n2", {{"memory", "lots"}}));
  addDevice(device("gpu-large", "n3", {{"memory", "80Gi"}}));
  auto pc = resolve(pod({"big"}));
  ASSERT_EQ(pc.pending.size(), 1u);

  for (const char* node : {"n1", "n2"}) {
    EXPECT_EQ(planNode(pc, "pod-uid", node, {}, index_).message,
              "claim default/big: 0 of 1 free nvidia.com/gpu with memory>=40Gi on this node (a "
              "device's memory \"lots\" is not a quantity)");
  }
  auto fit = planNode(pc, "pod-uid", "n3", {}, index_);
  ASSERT_TRUE(fit.fits);
  EXPECT_EQ(fit.assignment.at("default/big"), (std::vector<std::string>{"gpu-large"}));

  index_.remove("gpu-odd");
  EXPECT_EQ(planNode(pc, "pod-uid", "n1", {}, index_).message,
            "claim default/big: 0 of 1 free nvidia.com/gpu with memory>=40Gi on this node");
}

}  // namespace
}  // namespace ker

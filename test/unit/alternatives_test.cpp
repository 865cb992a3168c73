// A claim's spec.firstAvailable: read and checked, bound as one alternative, and fitted in order
// on each node, nodes where an earlier alternative fits first.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/claim_transitions.h"
#include "model/invariants.h"
#include "model/objects.h"
#include "model/suitability.h"
#include "scheduler/fit/planner.h"
#include "scheduler_fixtures.h"

namespace ker {
namespace {

using nlohmann::json;
using testing::device;

json h100ElseTwoA100(const std::string& name = "c") {
  return json::parse(R"({
    "apiVersion": "extendedresource.io/v1alpha1", "kind": "ExtendedResourceClaim",
    "metadata": {"name": ")" +
                     name + R"(", "namespace": "default", "uid": "uid-c"},
    "spec": {"rawResourceName": "nvidia.com/gpu", "extendedResourceNum": 1,
      "firstAvailable": [
        {"name": "h100", "metadataRequirements": {"matchLabels": {"model": "h100"}}},
        {"name": "two-a100", "extendedResourceNum": 2,
         "metadataRequirements": {"matchLabels": {"model": "a100"}}}]}})");
}

TEST(ClaimAlternatives, AreReadInOrderAndChecked) {
  auto c = ExtendedResourceClaim::fromJson(h100ElseTwoA100());
  ASSERT_EQ(c.invalid, "");
  ASSERT_EQ(c.firstAvailable.size(), 2u);
  EXPECT_EQ(c.firstAvailable[0].name, "h100");
  EXPECT_EQ(c.firstAvailable[0].extendedResourceNum, 1);
  EXPECT_EQ(c.firstAvailable[1].extendedResourceNum, 2);
  EXPECT_EQ(c.wantedCount(), std::nullopt) << "none chosen yet";

  const std::vector<std::pair<std::function<void(json&)>, std::string>> bad = {
      {[](json& j) { j["spec"]["firstAvailable"][1]["name"] = "h100"; },
       "spec.firstAvailable[1].name: \"h100\" names an earlier alternative too"},
      {[](json& j) { j["spec"]["firstAvailable"][0]["name"] = "H100"; },
       "spec.firstAvailable[0].name: \"H100\" is not a DNS-1123 label"},
      {[](json& j) { j["spec"]["firstAvailable"][1]["extendedResourceNum"] = 0; },
       "spec.firstAvailable[1].extendedResourceNum: must be at least 1"},
      {[](json& j) { j["spec"]["extendedResourceNum"] = 2; },
       "spec.extendedResourceNum: must be left unset with spec.firstAvailable"},
      {[](json& j) {
         j["spec"]["metadataRequirements"] = {{"matchLabels", {{"a", "b"}}}};
       },
       "spec.metadataRequirements: must be left unset with spec.firstAvailable"},
      {[](json& j) {
         j["status"] = {{"phase", "Bound"}, {"alternative", "v100"}};
       },
       "status.alternative: \"v100\" is no alternative of spec.firstAvailable (edited since "
       "the bind?)"},
  };
  for (const auto& [change, want] : bad) {
    json j = h100ElseTwoA100();
    change(j);
    EXPECT_EQ(ExtendedResourceClaim::fromJson(j).invalid, want);
  }
}

// The spec may be edited while Bound: the status still says what the claim holds, so the
// claim is released (and its devices freed) when its pod goes, rather than kept for good.
TEST(ClaimAlternatives, AnAlternativeEditedAwayWhileBoundLeavesTheStatusReadable) {
  for (const auto& edit : std::vector<std::function<void(json&)>>{
           [](json& j) { j["spec"].erase("firstAvailable"); },
           [](json& j) { j["spec"]["firstAvailable"][1]["name"] = "a100-pair"; },
           [](json& j) { j["spec"]["firstAvailable"][0]["name"] = "H100"; }}) {
    json j = h100ElseTwoA100();
    j["status"] = {{"phase", "Bound"},
                   {"alternative", "two-a100"},
                   {"extendedResourceNames", {"d0", "d1"}},
                   {"nodeName", "n1"},
                   {"podRef", {{"name", "p"}, {"uid", "u"}}}};
    edit(j);
    const auto c = ExtendedResourceClaim::fromJson(j);
    EXPECT_TRUE(c.statusReadable) << c.invalid;
    EXPECT_NE(c.invalid, "");
    EXPECT_EQ(c.alternative, "two-a100");
    EXPECT_EQ(c.heldDevices(), (std::vector<std::string>{"d0", "d1"}));
  }
}

TEST(ClaimAlternatives, ABindRecordsItsAlternativeAndTheReleaseDropsIt) {
  auto c = ExtendedResourceClaim::fromJson(h100ElseTwoA100());
  EXPECT_FALSE(bindClaim(c, {"p", "u"}, "n1", {"d0"}, "v100").ok());
  EXPECT_FALSE(bindClaim(c, {"p", "u"}, "n1", {"d0"}).ok()) << "it must name one";
  ASSERT_TRUE(bindClaim(c, {"p", "u"}, "n1", {"d0", "d1"}, "two-a100").ok());
  EXPECT_EQ(c.alternative, "two-a100");
  EXPECT_EQ(c.wantedCount(), 2);
  const auto written = c.toJson({});
  EXPECT_EQ(written["status"]["alternative"], "two-a100");
  EXPECT_EQ(ExtendedResourceClaim::fromJson(written).alternative, "two-a100");
  ASSERT_TRUE(releaseClaim(c, "pod gone").ok());
  EXPECT_EQ(c.alternative, "");
  EXPECT_FALSE(c.toJson({})["status"].contains("alternative"));

  auto plain = ExtendedResourceClaim::fromJson(h100ElseTwoA100());
  plain.firstAvailable.clear();
  EXPECT_FALSE(bindClaim(plain, {"p", "u"}, "n1", {"d0"}, "h100").ok())
      << "a claim without alternatives takes none";
}

TEST(ClaimAlternatives, ADeviceSuitsAnyWhilePendingAndTheChosenOneOnceBound) {
  auto c = ExtendedResourceClaim::fromJson(h100ElseTwoA100());
  const auto h100 = device("h", "n1", {{"model", "h100"}});
  const auto a100 = device("a", "n1", {{"model", "a100"}});
  const auto t4 = device("t", "n1", {{"model", "t4"}});
  EXPECT_TRUE(suits(h100, c));
  EXPECT_TRUE(suits(a100, c));
  EXPECT_FALSE(suits(t4, c));
  ASSERT_TRUE(bindClaim(c, {"p", "u"}, "n1", {"a", "a2"}, "two-a100").ok());
  EXPECT_FALSE(suits(h100, c));
  EXPECT_TRUE(suits(a100, c));
}

class AlternativesPlannerTest : public ::testing::Test {
 protected:
  void addDevice(const std::string& name, const std::string& node, const std::string& model) {
    index_.upsert(std::make_shared<const ExtendedResource>(device(name, node, {{"model", model}})));
  }
  PodClaims pending(const json& claimJson) {
    PodClaims pc;
    pc.pending.push_back(
        std::make_shared<const ExtendedResourceClaim>(ExtendedResourceClaim::fromJson(claimJson)));
    return pc;
  }
  DeviceIndex index_;
};

TEST_F(AlternativesPlannerTest, TheFirstAlternativeThatFitsANodeIsItsPlan) {
  addDevice("h0", "n-h100", "h100");
  addDevice("a0", "n-a100", "a100");
  addDevice("a1", "n-a100", "a100");
  addDevice("a2", "n-one-a100", "a100");
  const PodClaims pc = pending(h100ElseTwoA100());

  NodePlan h = planNode(pc, "u", "n-h100", {}, index_);
  ASSERT_TRUE(h.fits) << h.message;
  EXPECT_EQ(h.alternatives.at("default/c"), "h100");
  EXPECT_EQ(h.assignment.at("default/c"), std::vector<std::string>{"h0"});
  EXPECT_EQ(h.cost.alternative, 0u);

  NodePlan a = planNode(pc, "u", "n-a100", {}, index_);
  ASSERT_TRUE(a.fits) << a.message;
  EXPECT_EQ(a.alternatives.at("default/c"), "two-a100");
  EXPECT_EQ(a.assignment.at("default/c"), (std::vector<std::string>{"a0", "a1"}));
  EXPECT_EQ(a.cost.alternative, 1u);

  NodePlan none = planNode(pc, "u", "n-one-a100", {}, index_);
  EXPECT_FALSE(none.fits);
  EXPECT_EQ(none.message,
            "no alternative fits: alternative h100: claim default/c: 0 of 1 free nvidia.com/gpu "
            "with model=h100 on this node; alternative two-a100: claim default/c: 1 of 2 free "
            "nvidia.com/gpu with model=a100 on this node");

  // The counted path (filter, prioritize) agrees, and the earlier alternative ranks first
  // whatever the strategy.
  const std::vector<std::string_view> nodes = {"n-one-a100", "n-a100", "n-h100"};
  NodeFitter fitter(pc, "u", index_);
  std::vector<std::optional<NodeCost>> costs(nodes.size());
  fitter.planAll(nodes, true, [&](size_t i, NodePlan& p) {
    const NodePlan exact = planNode(pc, "u", std::string(nodes[i]), {}, index_);
    EXPECT_EQ(p.fits, exact.fits) << nodes[i];
    EXPECT_EQ(p.message, exact.message) << nodes[i];
    EXPECT_EQ(p.alternatives, exact.alternatives) << nodes[i];
    if (p.fits) {
      costs[i] = p.cost;
    }
  });
  EXPECT_EQ(rankNodes(costs, ScoringStrategy::kBinpack), (std::vector<size_t>{2, 1}));
  EXPECT_EQ(rankNodes(costs, ScoringStrategy::kSpread), (std::vector<size_t>{2, 1}));
  const auto scores = scoreNodes(costs, ScoringStrategy::kSpread);
  EXPECT_EQ(scores, (std::vector<int>{0, 0, 10}));
}

TEST_F(AlternativesPlannerTest, CombinationsOfSeveralClaimsAreTriedInOrder) {
  addDevice("a0", "n1", "a100");
  addDevice("a1", "n1", "a100");
  addDevice("h0", "n1", "h100");
  PodClaims pc = pending(h100ElseTwoA100("first"));
  pc.pending.push_back(std::make_shared<const ExtendedResourceClaim>(
      ExtendedResourceClaim::fromJson(h100ElseTwoA100("second"))));
  // first=h100 with second=h100 cannot be; first=h100 with second=two-a100 can.
  const NodePlan p = planNode(pc, "u", "n1", {}, index_);
  ASSERT_TRUE(p.fits) << p.message;
  EXPECT_EQ(p.alternatives.at("default/first"), "h100");
  EXPECT_EQ(p.alternatives.at("default/second"), "two-a100");
  EXPECT_EQ(p.cost.alternative, 1u);
}

// Three claims of eight alternatives each combine 512 ways: the pod is refused, saying why.
TEST_F(AlternativesPlannerTest, TooManyCombinationsAreRefused) {
  addDevice("h0", "n1", "h100");
  json many = h100ElseTwoA100("a");
  for (int i = 2; i < 8; ++i) {
    many["spec"]["firstAvailable"].push_back({{"name", "alt-" + std::to_string(i)}});
  }
  PodClaims pc = pending(many);
  for (const char* name : {"b", "c"}) {
    many["metadata"]["name"] = name;
    pc.pending.push_back(
        std::make_shared<const ExtendedResourceClaim>(ExtendedResourceClaim::fromJson(many)));
  }
  const NodePlan p = planNode(pc, "u", "n1", {}, index_);
  EXPECT_FALSE(p.fits);
  EXPECT_TRUE(p.unresolvable);
  EXPECT_EQ(p.message,
            "the pod's claims have more than 64 combinations of firstAvailable alternatives");
}

TEST(ClaimAlternatives, TheInvariantsCountTheChosenAlternative) {
  auto c = ExtendedResourceClaim::fromJson(h100ElseTwoA100());
  ASSERT_TRUE(bindClaim(c, {"p", "u"}, "n1", {"a0"}, "two-a100").ok());
  EXPECT_EQ(c.wantedCount(), 2);
  auto d = device("a0", "n1", {{"model", "a100"}});
  d.phase = DevicePhase::kBound;
  d.claimRef = ClaimRef{"default", "c", "uid-c"};
  const auto found = checkInvariants(ClusterSnapshot{.devices = {d}, .claims = {c}});
  bool counted = false;
  for (const auto& line : found) {
    counted = counted || line.find("holds 1 devices, wants 2") != std::string::npos;
  }
  EXPECT_TRUE(counted) << ::testing::PrintToString(found);
}

}  // namespace
}  // namespace ker

// kube-scheduler's preempt verb: the request and reply on the wire, the decision
// (decideVerbPreemption) through the extender's state, the nomination it leaves and the
// handler's answers to bad requests.
#include "scheduler/preemption/preemption_verb.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/metrics.h"
#include "scheduler/extender.h"
#include "scheduler/extender_handlers.h"
#include "scheduler_fixtures.h"
#include "test/unit/extender_parts.h"
#include "test/unit/fake_api_client.h"

namespace ker {
namespace {

using nlohmann::json;
using testing::claim;
using testing::device;
using testing::ptr;

std::vector<std::string> uids(const NodeVictims& n) {
  std::vector<std::string> out;
  for (const auto& p : n.pods) {
    out.push_back(p.uid);
  }
  return out;
}

TEST(PreemptionVerbWire, ReadsMetaVictimsAndWholePodsAndWritesMetaVictims) {
  const PreemptionArgs meta = parsePreemptionArgs(R"({
    "Pod": {"metadata": {"name": "high", "uid": "u-high"}, "spec": {"priority": 1000}},
    "NodeNameToVictims": null,
    "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "u-a"}, {"UID": "u-b"}], "NumPDBViolations": 1},
                              "n0": {"Pods": [{"uid": "u-c"}]}}})");
  EXPECT_EQ(meta.pod.meta.ns, "default");
  EXPECT_EQ(meta.pod.priority, 1000);
  ASSERT_EQ(meta.nodes.size(), 2u);
  EXPECT_EQ(meta.nodes[0].node, "n0");
  EXPECT_EQ(uids(meta.nodes[0]), std::vector<std::string>{"u-c"});
  EXPECT_EQ(meta.nodes[1].numPdbViolations, 1);
  EXPECT_EQ(uids(meta.nodes[1]), (std::vector<std::string>{"u-a", "u-b"}));
  EXPECT_FALSE(meta.nodes[1].pods[0].priority);

  const PreemptionArgs whole = parsePreemptionArgs(R"({
    "Pod": {"metadata": {"name": "high", "namespace": "ns"}},
    "NodeNameToVictims": {"n0": {"Pods": [{"metadata": {"name": "a", "uid": "u-a"},
                                           "spec": {"priority": 7}}], "NumPDBViolations": 0}},
    "NodeNameToMetaVictims": null})");
  ASSERT_EQ(whole.nodes.size(), 1u);
  EXPECT_EQ(whole.nodes[0].pods[0].uid, "u-a");
  EXPECT_EQ(whole.nodes[0].pods[0].priority, 7);

  EXPECT_EQ(json::parse(renderPreemptionResult(meta.nodes)),
            json::parse(R"({"NodeNameToMetaVictims": {
                "n0": {"Pods": [{"UID": "u-c"}], "NumPDBViolations": 0},
                "n1": {"Pods": [{"UID": "u-a"}, {"UID": "u-b"}], "NumPDBViolations": 1}}})"));
  EXPECT_EQ(renderPreemptionResult({}), R"({"NodeNameToMetaVictims":{}})");
}

TEST(PreemptionVerbWire, RefusesWhatKubeSchedulerCouldNotHaveSent) {
  const std::string pod = R"("Pod": {"metadata": {"name": "high"}})";
  for (const auto& body :
       {std::string(), std::string("{"), std::string("[]"), std::string("{}"),
        std::string(R"({"Pod": 3})"), std::string(R"({"Pod": {"metadata": {}}})"),
        "{" + pod + R"(, "NodeNameToMetaVictims": [])" + "}",
        "{" + pod + R"(, "NodeNameToMetaVictims": {"n0": 1}})",
        "{" + pod + R"(, "NodeNameToMetaVictims": {"n0": {"Pods": {}}}})",
        "{" + pod + R"(, "NodeNameToMetaVictims": {"n0": {"Pods": [{}]}}})",
        "{" + pod + R"(, "NodeNameToMetaVictims": {"n0": {"Pods": [{"UID": ""}]}}})",
        "{" + pod + R"(, "NodeNameToMetaVictims": {"n0": {"Pods": [{"UID": 5}]}}})",
        "{" + pod + R"(, "NodeNameToMetaVictims": {"n0": {"NumPDBViolations": "x"}}})",
        "{" + pod + R"(, "NodeNameToMetaVictims": {"": {}}})",
        "{" + pod + R"(, "NodeNameToVictims": {"n0": {"Pods": [{"metadata": {}}]}}})",
        std::string(100, '[') + std::string(100, ']')}) {
    EXPECT_THROW(parsePreemptionArgs(body), WireError) << body;
  }
  EXPECT_NO_THROW(parsePreemptionArgs("{" + pod + "}"));
}

// Node n0: every k80 is held by a pod through a claim of its own; pods named by their
// priority's role. kube-scheduler's victims come as UIDs.
class PreemptionVerbTest : public ::testing::Test, protected testing::ExtenderParts {
 protected:
  void SetUp() override {
    extender_.enablePreemption({.pods = [this](const std::string& key) -> PodPtr {
                                  auto it = pods_.find(key);
                                  return it == pods_.end() ? nullptr : it->second;
                                },
                                .submit = [](PreemptionOrder) { return true; },
                                .lowestPriority = {},
                                .budgets = [this] { return budgets_; }});
  }
  // A pod bound to `node` with the given priority.
  void pod(const std::string& name, int32_t priority, const std::string& node = "n0",
           std::map<std::string, std::string> labels = {}) {
    Pod p;
    p.meta = {.name = name, .ns = "default", .uid = "uid-" + name};
    p.meta.labels = std::move(labels);
    p.nodeName = node;
    p.priority = priority;
    pods_["default/" + name] = std::make_shared<const Pod>(p);
  }
  // Device `dev` (a k80 on `node`) held by `holder`'s claim; shared: a shareable claim.
  void holds(const std::string& holder, const std::string& dev, const std::string& node = "n0",
             bool shared = false) {
    auto d = device(dev, node, {{"type", "k80"}});
    d.phase = DevicePhase::kBound;
    d.phaseWritten = true;
    d.claimRef = ClaimRef{"default", holder + "-erc", "uid-" + holder + "-erc"};
    index_.upsert(ptr(d));
    auto c = claim(holder + "-erc", 1, {{"type", "k80"}});
    c.phase = ClaimPhase::kBound;
    c.allocated = {dev};
    c.nodeName = node;
    if (shared) {
      c.shareable = true;
      c.sharedHolders = {PodRef{holder, "uid-" + holder}};
    } else {
      c.podRef = PodRef{holder, "uid-" + holder};
    }
    claims_["default/" + c.meta.name] = std::make_shared<const ExtendedResourceClaim>(c);
    index_.setClaimDevices("default/" + c.meta.name, "nvidia.com/gpu", {dev});
  }
  // The preemptor "high" (claiming `count` k80s, or nothing) and kube-scheduler's candidates.
  std::vector<NodeVictims> preempt(const std::map<std::string, std::vector<std::string>>& victims,
                                   int64_t count = 1, int32_t priority = 1000) {
    json meta = json::object();
    for (const auto& [node, pods] : victims) {
      json list = json::array();
      for (const auto& p : pods) {
        list.push_back({{"UID", "uid-" + p}});
      }
      meta[node] = {{"Pods", list}, {"NumPDBViolations", 0}};
    }
    json p = {{"metadata", {{"name", "high"}, {"namespace", "default"}, {"uid", "uid-high"}}},
              {"spec", {{"priority", priority}}}};
    if (count > 0) {
      p["metadata"]["annotations"] = {{"extendedresource.io/claims", "high-erc"}};
      claims_["default/high-erc"] = std::make_shared<const ExtendedResourceClaim>(
          claim("high-erc", count, {{"type", "k80"}}));
    }
    args_ = parsePreemptionArgs(
        json{{"Pod", p}, {"NodeNameToMetaVictims", meta}, {"NodeNameToVictims", nullptr}}.dump());
    return extender_.preemptVerb(args_);
  }

  PreemptionArgs args_;
  std::map<std::string, PodPtr> pods_;
  std::vector<PdbPtr> budgets_;
};

TEST_F(PreemptionVerbTest, KubeSchedulersVictimAloneFreesTheDeviceAndItIsNominated) {
  pod("low", 10);
  holds("low", "gpu0");
  const auto kept = preempt({{"n0", {"low"}}});
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].node, "n0");
  EXPECT_EQ(uids(kept[0]), std::vector<std::string>{"uid-low"});
  EXPECT_EQ(kept[0].numPdbViolations, 0);
  // Kept for the preemptor while the victim leaves: nobody else may take it once released.
  EXPECT_EQ(index_.nominatedNode("uid-high", DeviceIndex::Clock::now()), "n0");
  index_.setClaimDevices("default/low-erc", "nvidia.com/gpu", {});
  index_.upsert(ptr(device("gpu0", "n0", {{"type", "k80"}})));
  EXPECT_TRUE(index_.freeOnNode("nvidia.com/gpu", "n0", {}, "uid-third").empty());
  EXPECT_EQ(index_.freeOnNode("nvidia.com/gpu", "n0", {}, "uid-high").size(), 1u);
}

TEST_F(PreemptionVerbTest, AddsTheLowerPriorityHolderWhenKubeSchedulersVictimHoldsNoDevice) {
  pod("cpu-hog", 10);  // kube-scheduler's victim for the CPU: holds no device
  pod("low", 20);
  pod("lower", 5);
  holds("low", "gpu0");
  holds("lower", "gpu1");
  const auto kept = preempt({{"n0", {"cpu-hog"}}});
  ASSERT_EQ(kept.size(), 1u);
  // The least important holder is added, listed after the more important CPU victim.
  EXPECT_EQ(uids(kept[0]), (std::vector<std::string>{"uid-cpu-hog", "uid-lower"}));
  // Two devices wanted: both holders are added, the more important one first (after the CPU
  // victim, whose priority the request does not say).
  const auto both = preempt({{"n0", {"cpu-hog"}}}, 2);
  ASSERT_EQ(both.size(), 1u);
  EXPECT_EQ(uids(both[0]), (std::vector<std::string>{"uid-cpu-hog", "uid-low", "uid-lower"}));
}

TEST_F(PreemptionVerbTest, DropsNodesWhereNoLowerPriorityHoldersMakeRoom) {
  pod("cpu-hog", 10);
  pod("peer", 1000);  // the preemptor's own priority
  pod("boss", 5000);
  pod("low", 10, "n1");
  holds("peer", "gpu0");
  holds("boss", "gpu1");
  holds("low", "gpu2", "n1");
  const auto kept = preempt({{"n0", {"cpu-hog"}}, {"n1", {"cpu-hog"}}});
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].node, "n1");
  EXPECT_EQ(uids(kept[0]), (std::vector<std::string>{"uid-cpu-hog", "uid-low"}));
  // Nothing on n0 can be freed: with it alone, the reply is empty.
  index_.dropNomination("uid-high");
  EXPECT_TRUE(preempt({{"n0", {"cpu-hog"}}}).empty());
}

TEST_F(PreemptionVerbTest, NeverAddsTheHoldersOfSharedClaimsOrPodsItDoesNotKnow) {
  pod("cpu-hog", 10);
  pod("sharer", 10);
  holds("sharer", "gpu0", "n0", true);
  holds("stranger", "gpu1");  // a bound pod the extender's cache does not have
  EXPECT_TRUE(preempt({{"n0", {"cpu-hog"}}}).empty());
}

// A device placed by label is reachable from several nodes, and may be held by a pod on
// another one: kube-scheduler takes victims of the candidate node only (an unknown UID fails
// the whole preemption), so that holder is never added.
TEST_F(PreemptionVerbTest, NeverAddsAHolderRunningOnAnotherNode) {
  pod("cpu-hog", 10);
  pod("far", 5, "n1");
  holds("far", "lic0", "n1");
  auto everywhere = device("lic0", "n0", {{"type", "k80"}});
  everywhere.nodeAffinity.terms.push_back(
      NodeSelectorTerm{{}, {{"metadata.name", SelectorOperator::kIn, {"n1"}}}});
  everywhere.phase = DevicePhase::kBound;
  everywhere.phaseWritten = true;
  everywhere.claimRef = ClaimRef{"default", "far-erc", "uid-far-erc"};
  index_.upsert(ptr(everywhere));
  EXPECT_TRUE(preempt({{"n0", {"cpu-hog"}}}).empty());
  const auto onItsNode = preempt({{"n1", {"cpu-hog"}}});
  ASSERT_EQ(onItsNode.size(), 1u);
  EXPECT_EQ(uids(onItsNode[0]), (std::vector<std::string>{"uid-cpu-hog", "uid-far"}));
}

// The node's one free device is held for another pod (its filter chose it, its bind is on the
// way): kube-scheduler's victim frees CPU, but the pod still would not fit, so the node is not
// kept and nobody is deleted for nothing.
TEST_F(PreemptionVerbTest, ADeviceHeldForAnotherPodIsNotCountedFree) {
  pod("cpu-hog", 10);
  index_.upsert(ptr(device("gpu0", "n0", {{"type", "k80"}})));
  ASSERT_TRUE(index_.holdForFilter("n0", {"gpu0"}, "uid-other", DeviceIndex::Clock::now(),
                                   DeviceIndex::kHoldTtl));
  EXPECT_TRUE(preempt({{"n0", {"cpu-hog"}}}).empty());
  index_.dropFilterHold("uid-other");
  const auto kept = preempt({{"n0", {"cpu-hog"}}});
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(uids(kept[0]), std::vector<std::string>{"uid-cpu-hog"});
}

TEST_F(PreemptionVerbTest, CountsTheBudgetAnAddedVictimViolates) {
  pod("cpu-hog", 10);
  pod("guarded", 10, "n0", {{"app", "guarded"}});
  holds("guarded", "gpu0");
  PodDisruptionBudget pdb;
  pdb.meta = {.name = "guard", .ns = "default"};
  pdb.selector.matchLabels = {{"app", "guarded"}};
  pdb.selectsNothing = false;
  pdb.disruptionsAllowed = 0;
  budgets_.push_back(std::make_shared<const PodDisruptionBudget>(pdb));
  const auto kept = preempt({{"n0", {"cpu-hog"}}});
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(uids(kept[0]), (std::vector<std::string>{"uid-cpu-hog", "uid-guarded"}));
  EXPECT_EQ(kept[0].numPdbViolations, 1);
}

TEST_F(PreemptionVerbTest, APodWithoutClaimsGetsTheCandidatesBackUnchanged) {
  pod("low", 10);
  holds("low", "gpu0");
  const auto kept = preempt({{"n0", {"low", "cpu-hog"}}, {"n1", {"other"}}}, 0);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(uids(kept[0]), (std::vector<std::string>{"uid-low", "uid-cpu-hog"}));
  EXPECT_EQ(uids(kept[1]), std::vector<std::string>{"uid-other"});
  EXPECT_EQ(index_.nominatedPods(), 0u);
}

TEST_F(PreemptionVerbTest, WhileThePodWaitsOnANominatedNodeNoOtherNodeIsOffered) {
  pod("low", 10);
  pod("low1", 10, "n1");
  holds("low", "gpu0");
  holds("low1", "gpu1", "n1");
  ASSERT_TRUE(index_.nominate("n1", {"gpu1"}, "uid-high", DeviceIndex::Clock::now(),
                              std::chrono::seconds(60)));
  const auto kept = preempt({{"n0", {"low"}}, {"n1", {"low1"}}});
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].node, "n1");
}

// The decision alone: the node picked for the nomination, in kube-scheduler's order, and a
// node the extender cannot judge.
TEST(PreemptionVerbDecision, NominatesTheNodeKubeSchedulerWouldPickAndDropsUnknownNodes) {
  PodClaims claims;
  claims.pending.push_back(
      std::make_shared<const ExtendedResourceClaim>(claim("high-erc", 1, {{"type", "k80"}})));
  Pod preemptor;
  preemptor.meta = {.name = "high", .ns = "default", .uid = "uid-high"};
  preemptor.priority = 1000;
  auto candidate = [](const std::string& node, int32_t victimPriority) {
    VerbCandidate c;
    c.asked = NodeVictims{node, {VictimPod{"uid-v-" + node, victimPriority}}, 0};
    c.at.node = node;
    c.at.devices.push_back(ptr(device("gpu-" + node, node, {{"type", "k80"}})));
    return c;
  };
  std::vector<VerbCandidate> candidates{candidate("a", 500), candidate("b", 100),
                                        candidate("c", 1)};
  candidates[2].unknown = "node c is not yet known to the extender";
  const VerbDecision d = decideVerbPreemption(claims, preemptor, candidates);
  ASSERT_EQ(d.kept.size(), 2u);
  ASSERT_EQ(d.dropped.size(), 1u);
  EXPECT_EQ(d.dropped[0].first, "c");
  ASSERT_TRUE(d.nomination);
  EXPECT_EQ(d.nomination->node, "b");
  EXPECT_EQ(d.nomination->devices, std::vector<std::string>{"gpu-b"});
  EXPECT_EQ(d.nomination->ttl, std::chrono::seconds(30) + kNominationMargin);
}

TEST(PreemptionVerbHandler, BadRequestsGetAClearErrorAndGoodOnesAReply) {
  DeviceIndex index;
  testing::FakeApiClient api;
  Binder binder{api, index,
                [](const std::string&) { return std::map<std::string, std::string>{}; }};
  Extender extender{index, [](const std::string&) -> ClaimPtr { return nullptr; },
                    [](const std::string&) -> std::shared_ptr<const Node> { return nullptr; },
                    binder, Scoring{}};
  metrics::Registry registry;
  ExtenderHandlers handlers(extender, registry);
  const HttpResponse bad = handlers.preempt("{not json");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.text.find("bad preempt request: malformed JSON"), std::string::npos)
      << bad.body.text;
  const HttpResponse noUid = handlers.preempt(
      R"({"Pod": {"metadata": {"name": "p"}}, "NodeNameToMetaVictims": {"n0": {"Pods": [{}]}}})");
  EXPECT_EQ(noUid.status, 400);
  EXPECT_NE(noUid.body.text.find("UID"), std::string::npos) << noUid.body.text;
  // A claim that does not exist: no node can help.
  const HttpResponse missing = handlers.preempt(
      R"({"Pod": {"metadata": {"name": "p", "annotations": {"extendedresource.io/claims": "gone"}}},
          "NodeNameToMetaVictims": {"n0": {"Pods": [{"UID": "u"}]}}})");
  EXPECT_EQ(missing.status, 200);
  EXPECT_EQ(json::parse(missing.body.text), json::parse(R"({"NodeNameToMetaVictims": {}})"));
}

}  // namespace
}  // namespace ker

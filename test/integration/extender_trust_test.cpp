// Forged calls to the real extender binary's verbs, with the real kube-apiserver behind it:
// whoever reaches /bind and /filter is taken for kube-scheduler, and these show that such a
// caller still cannot bind a pod the extender's filter did not choose, nor bind another
// scheduler's pod, nor get victims deleted for a preemptor the API server does not have as
// described. A pod without claims still binds through kube-scheduler.
#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "extender_fixture.h"
#include "model/objects.h"
#include "priority_classes.h"

namespace ker::itest {
namespace {

using nlohmann::json;

class ExtenderTrustTest : public PrioritySuite {
 protected:
  static void SetUpTestSuite() {
    setUpSuite([] { startStack({}); });
  }

  void TearDown() override {
    if (api_ != nullptr && !ns_.empty()) {
      deleteAllPodsNow(*api_, ns_);
      removeClaimsAndDevices();
    }
    PrioritySuite::TearDown();
  }

  // POSTs `body` to the extender's verb as any local process could; the reply's JSON.
  static json post(const std::string& verb, const json& body) {
    httplib::Client client("127.0.0.1", extenderPort_);
    client.set_read_timeout(30, 0);
    auto res = client.Post("/" + verb, body.dump(), "application/json");
    if (!res) {
      throw std::runtime_error(verb + ": no answer: " + httplib::to_string(res.error()));
    }
    if (res->status != 200) {
      throw std::runtime_error(verb + ": HTTP " + std::to_string(res->status) + ": " + res->body);
    }
    return json::parse(res->body);
  }
  static json bind(const json& pod, const std::string& node) {
    return post("bind", {{"PodName", pod["metadata"]["name"]},
                         {"PodNamespace", pod["metadata"]["namespace"]},
                         {"PodUID", pod["metadata"]["uid"]},
                         {"Node", node}});
  }
  static json filter(const json& pod, const std::string& node) {
    return post("filter", {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {node}}});
  }

  // A pod of this suite's scheduler that kube-scheduler never places (it selects a node that
  // does not exist), so that only forged calls reach the extender for it.
  json unplaceablePod(const std::string& name, const std::vector<std::string>& claims) {
    json pod = podObject(ns_, name, claims, schedulerName_);
    pod["spec"]["nodeSelector"]["kubernetes.io/hostname"] = uniqueName("nowhere");
    return api_->create(resources::kPods, ns_, pod);
  }

  // Whether the extender's log has a line with both texts.
  bool logged(const std::string& message, const std::string& field) const {
    std::ifstream in(env_->dir() + "/extender-" + schedulerName_ + ".log");
    for (std::string line; std::getline(in, line);) {
      if (line.find(message) != std::string::npos && line.find(field) != std::string::npos) {
        return true;
      }
    }
    return false;
  }

  void expectStillUnbound(const std::string& pod) {
    // A bind the extender let through would have written the Binding before replying; a
    // moment more covers a write still in flight.
    std::this_thread::sleep_for(500ms);
    EXPECT_EQ(nodeOf(pod), "") << extender_->logTail();
  }
};

TEST_F(ExtenderTrustTest, APodWithoutClaimsIsBoundThroughKubeScheduler) {
  auto nodes = makeNodes(1);
  json pod = podObject(ns_, "plain", {}, schedulerName_);
  pod["spec"]["nodeSelector"]["kubernetes.io/hostname"] = nodes[0];  // not other tests' nodes
  api_->create(resources::kPods, ns_, pod);
  ASSERT_TRUE(waitBound("plain")) << extender_->logTail();
  EXPECT_EQ(nodeOf("plain"), nodes[0]);
}

TEST_F(ExtenderTrustTest, AForgedBindOfAnotherSchedulersPodIsRefused) {
  auto nodes = makeNodes(1);
  const json pod =
      api_->create(resources::kPods, ns_, podObject(ns_, "stranger", {}, uniqueName("other")));
  const json reply = bind(pod, nodes[0]);
  EXPECT_NE(reply.value("Error", "").find("this extender binds only pods of \"" + schedulerName_),
            std::string::npos)
      << reply.dump();
  expectStillUnbound("stranger");
}

TEST_F(ExtenderTrustTest, AForgedBindToANodeTheFilterDidNotChooseIsRefused) {
  auto nodes = makeNodes(2);
  const std::string chosenDevice = makeDevice(nodes[0]);
  const std::string otherDevice = makeDevice(nodes[1]);
  createClaims(2);
  const json pod = unplaceablePod("p", {"claim-0"});

  // With no filter at all (as after a restart of the extender): refused.
  json reply = bind(pod, nodes[1]);
  EXPECT_NE(reply.value("Error", "").find("the extender's filter holds no node for pod"),
            std::string::npos)
      << reply.dump();
  expectStillUnbound("p");

  // The filter chooses nodes[0]; a bind to nodes[1] is still refused.
  const json filtered = filter(pod, nodes[0]);
  ASSERT_EQ(filtered["NodeNames"], json::array({nodes[0]})) << filtered.dump();
  reply = bind(pod, nodes[1]);
  EXPECT_EQ(reply.value("Error", ""), "the extender's filter chose node " + nodes[0] + " for pod " +
                                          ns_ + "/p, not " + nodes[1])
      << reply.dump();
  expectStillUnbound("p");

  // Nothing was written for it: the claim and both devices are as they were.
  const auto claim = ExtendedResourceClaim::fromJson(
      api_->get(resources::kExtendedResourceClaims, ns_, "claim-0"));
  EXPECT_NE(claim.phase, ClaimPhase::kBound);
  EXPECT_FALSE(claim.podRef);
  for (const auto& name : {chosenDevice, otherDevice}) {
    const auto device =
        ExtendedResource::fromJson(api_->get(resources::kExtendedResources, "", name));
    EXPECT_NE(device.phase, DevicePhase::kBound) << name;
    EXPECT_FALSE(device.claimRef) << name;
  }
  EXPECT_EQ(invariantViolations(), "");
}

// Binds naming a pod that does not exist, or another pod, with the UID of a pod the filter
// chose: each is refused without taking the chosen pod's hold, so that pod's own bind still
// goes through.
TEST_F(ExtenderTrustTest, AForgedBindWithAnotherPodsUidLeavesThatPodsHold) {
  auto nodes = makeNodes(1);
  makeDevice(nodes[0]);
  createClaims(1);
  const json pod = unplaceablePod("p", {"claim-0"});
  const json other = unplaceablePod("other", {});
  const json filtered = filter(pod, nodes[0]);
  ASSERT_EQ(filtered["NodeNames"], json::array({nodes[0]})) << filtered.dump();

  for (const std::string& name :
       {std::string("ghost"), other["metadata"]["name"].get<std::string>()}) {
    const json reply = post("bind", {{"PodName", name},
                                     {"PodNamespace", ns_},
                                     {"PodUID", pod["metadata"]["uid"]},
                                     {"Node", nodes[0]}});
    EXPECT_NE(reply.value("Error", ""), "") << name << ": " << reply.dump();
  }
  expectStillUnbound("p");
  expectStillUnbound("other");

  const json reply = bind(pod, nodes[0]);
  EXPECT_EQ(reply.value("Error", ""), "") << reply.dump();
  EXPECT_EQ(nodeOf("p"), nodes[0]) << extender_->logTail();
  EXPECT_EQ(invariantViolations(), "");
}

// A filter request names a high-priority pod whose devices a bound low-priority pod holds:
// the extender plans a preemption from the request alone, and its worker, reading the
// preemptor live, deletes nobody.
TEST_F(ExtenderTrustTest, AForgedHighPriorityFilterDeletesNoVictim) {
  auto nodes = makeNodes(1);
  makeDevice(nodes[0]);
  for (const char* name : {"low-erc", "wanted-erc"}) {
    api_->create(resources::kExtendedResourceClaims, ns_,
                 claimObject(ns_, name, resource_, 1, {{"type", "k80"}}));
  }
  json low = podObject(ns_, "low", {"low-erc"}, schedulerName_);
  low["spec"]["priorityClassName"] = priorityClasses_->create(10);
  ASSERT_TRUE(createPodOnceAdmitted(*api_, ns_, low, 10s, 100ms));
  ASSERT_TRUE(waitBound("low")) << extender_->logTail();

  // A pod that does not exist, and a real pending one of priority 0 told as 1000000.
  json ghost = podObject(ns_, "ghost", {"wanted-erc"}, schedulerName_);
  ghost["metadata"]["uid"] = "0f0f0f0f-0000-4000-8000-" + std::string(12, '0');
  json lowly = unplaceablePod("lowly", {"wanted-erc"});
  for (json* forged : {&ghost, &lowly}) {
    (*forged)["spec"]["priority"] = 1000000;
    const std::string name = (*forged)["metadata"]["name"];
    const std::string refusal = "preemption refused: the preemptor is not the pod it was decided";
    // The extender preempts once its watch of bound pods has the victim's priority.
    bool refused = eventually(
        [&] {
          filter(*forged, nodes[0]);
          std::this_thread::sleep_for(200ms);
          return logged(refusal, "preemptor=\"" + ns_ + "/" + name + "\"");
        },
        30s, 100ms);
    EXPECT_TRUE(refused) << name << "\n" << extender_->logTail();
  }
  json victim = getPod("low");
  EXPECT_EQ(victim["spec"].value("nodeName", ""), nodes[0]);
  EXPECT_FALSE(victim["metadata"].contains("deletionTimestamp")) << victim["metadata"].dump();
  EXPECT_EQ(victim["status"].dump().find("DisruptionTarget"), std::string::npos)
      << victim["status"].dump();
  EXPECT_FALSE(getPod("lowly")["status"].contains("nominatedNodeName"));
  EXPECT_EQ(invariantViolations(), "");
}

}  // namespace
}  // namespace ker::itest

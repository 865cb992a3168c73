// What the real kube-scheduler v1.37.1 does with an extender's preempt verb when a
// high-priority pod's matching devices are all held by a lower-priority pod (see
// docs/preemption.md). The extender serves no preempt verb, so a call to it would show in the
// pod's FailedScheduling message as a failed preempt; whether that message appears tells
// whether kube-scheduler called the verb.
#include <gtest/gtest.h>

#include <string>

#include "common/objects.h"
#include "common/resource.h"
#include "extender_fixture.h"

namespace ker::itest {
namespace {

using nlohmann::json;

const Resource kPriorityClasses{"scheduling.k8s.io", "v1", "priorityclasses", false};

class ExtenderPreemptionTest : public ExtenderSuite {
 protected:
  static void SetUpTestSuite() {
    setUpSuite([] { startStack({.schedulerArgs = "--preempt-verb preempt"}); });
  }

  void TearDown() override {
    for (const auto& pod : pods_) {
      deletePodNow(*api_, ns_, pod);
    }
    for (const auto& pc : priorityClasses_) {
      try {
        api_->remove(kPriorityClasses, "", pc);
      } catch (const std::exception&) {
        // Left behind in a control plane that is thrown away after the run.
      }
    }
  }

  std::string priorityClass(int value) {
    const std::string name = uniqueName("prio");
    api_->create(kPriorityClasses, "",
                 {{"apiVersion", "scheduling.k8s.io/v1"},
                  {"kind", "PriorityClass"},
                  {"metadata", {{"name", name}}},
                  {"value", value}});
    priorityClasses_.push_back(name);
    return name;
  }

  void createPod(const std::string& name, const std::string& claim, const std::string& pc,
                 const std::string& cpu) {
    json pod = podObject(ns_, name, {claim}, schedulerName_);
    pod["spec"]["priorityClassName"] = pc;
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu;
    api_->create(resources::kPods, ns_, pod);
    pods_.push_back(name);
  }

  // The pod's FailedScheduling message once it carries the preemption's outcome.
  std::string preemptionMessage(const std::string& pod) {
    std::string message;
    eventually(
        [&] {
          auto events = api_->list(resources::kEvents, ns_,
                                   ListOptions{.fieldSelector = "involvedObject.name=" + pod});
          for (const auto& e : events["items"]) {
            if (e.value("reason", "") == "FailedScheduling" &&
                e.value("message", "").find("preemption:") != std::string::npos) {
              message = e.value("message", "");
              return true;
            }
          }
          return false;
        },
        60s, 200ms);
    return message;
  }

  // A k80 on one node, held by pod "low" (priority 10, requesting lowCpu); then pod "high"
  // (priority 1000, requesting highCpu) claims a k80 too. Returns the node.
  std::string lowHoldsTheOnlyDevice(const std::string& lowCpu, const std::string& highCpu) {
    auto nodes = makeNodes(1);
    api_->create(resources::kExtendedResources, "",
                 deviceObject(uniqueName("k80"), nodes[0], resource_, {{"type", "k80"}}));
    api_->create(resources::kExtendedResourceClaims, ns_,
                 claimObject(ns_, "low-erc", resource_, 1, {{"type", "k80"}}));
    api_->create(resources::kExtendedResourceClaims, ns_,
                 claimObject(ns_, "high-erc", resource_, 1, {{"type", "k80"}}));
    createPod("low", "low-erc", priorityClass(10), lowCpu);
    EXPECT_TRUE(waitBound("low")) << extender_->logTail();
    EXPECT_EQ(nodeOf("low"), nodes[0]);
    createPod("high", "high-erc", priorityClass(1000), highCpu);
    return nodes[0];
  }

  void expectLowUntouched(const std::string& node) {
    const json low = getPod("low");
    EXPECT_EQ(low["spec"].value("nodeName", ""), node);
    EXPECT_FALSE(low["metadata"].contains("deletionTimestamp")) << low["metadata"].dump();
    EXPECT_EQ(nodeOf("high"), "");
  }

  std::vector<std::string> pods_;
  std::vector<std::string> priorityClasses_;
};

// The node fails only the extender's filter (FailedNodes, so a potential candidate): the dry
// run re-runs only kube-scheduler's own filters, finds no victim, and the preempt verb is never
// called.
TEST_F(ExtenderPreemptionTest, DeviceOnlyContentionNeverReachesThePreemptVerb) {
  const std::string node = lowHoldsTheOnlyDevice("10m", "10m");
  const std::string message = preemptionMessage("high");
  ASSERT_FALSE(message.empty()) << extender_->logTail();
  EXPECT_NE(message.find("expected at least one victim pod on node \"" + node + "\""),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("preempt with extender"), std::string::npos) << message;
  expectLowUntouched(node);
}

// The same node also short of CPU: the dry run finds "low" as a victim for the CPU, so the
// preempt verb is called (and, unserved, fails the preemption). The verb is reached only when
// an in-tree filter fails too.
TEST_F(ExtenderPreemptionTest, ContentionAnInTreeFilterSeesReachesThePreemptVerb) {
  const std::string node = lowHoldsTheOnlyDevice("8", "1");
  const std::string message = preemptionMessage("high");
  ASSERT_FALSE(message.empty()) << extender_->logTail();
  EXPECT_NE(message.find("failed preempt with extender"), std::string::npos) << message;
  expectLowUntouched(node);
}

}  // namespace
}  // namespace ker::itest

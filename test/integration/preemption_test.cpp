// Preemption for devices through the real kube-scheduler v1.37.1 (see docs/preemption.md).
//
// ExtenderPreemptionTest: what kube-scheduler does on its own with the extender's preempt verb
// (preemptVerb: preempt, as the launcher and deploy/ set it) when a high-priority pod's
// matching devices are all held by a lower-priority pod; the extender runs with
// --preemption=false, so what is observed is kube-scheduler's preemption alone, and the
// extender's log tells whether the verb was called.
//
// ExtenderPreemptsForDevicesTest: the extender's own preemption, decided in its filter, and
// kube-scheduler's preemption through the preempt verb, with the controller running to release
// the victims' claims.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "common/resource.h"
#include "extender_fixture.h"
#include "model/objects.h"
#include "priority_classes.h"

namespace ker::itest {
namespace {

using nlohmann::json;

class ExtenderPreemptionTest : public PrioritySuite {
 protected:
  static void SetUpTestSuite() {
    setUpSuite([] { startStack({.extenderArgs = {"--preemption=false"}}); });
  }

  void TearDown() override {
    for (const auto& pod : pods_) {
      deletePodNow(*api_, ns_, pod);
    }
    PrioritySuite::TearDown();
  }

  std::string priorityClass(int value) { return priorityClasses_->create(value); }

  // onNode: a nodeSelector on that node's hostname, so that nodes other tests of the shared
  // control plane left behind are not preemption candidates (they would crowd the node of
  // interest out of kube-scheduler's truncated message).
  void createPod(const std::string& name, const std::string& claim, const std::string& pc,
                 const std::string& cpu, const std::map<std::string, std::string>& labels = {},
                 int64_t graceSeconds = 0, const std::string& onNode = "") {
    json pod = podObject(ns_, name, {claim}, schedulerName_);
    if (!onNode.empty()) {
      pod["spec"]["nodeSelector"]["kubernetes.io/hostname"] = onNode;
    }
    for (const auto& [k, v] : labels) {
      pod["metadata"]["labels"][k] = v;
    }
    pod["spec"]["terminationGracePeriodSeconds"] = graceSeconds;
    pod["spec"]["priorityClassName"] = pc;
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu;
    ASSERT_TRUE(createPodOnceAdmitted(*api_, ns_, pod, 10s, 100ms))
        << "PriorityClass " << pc << " never admitted";
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

  // One node with one k80, and a claim for one k80 by each name in `claims`; returns the node.
  std::string nodeWithOneK80(const std::vector<std::string>& claims) {
    auto nodes = makeNodes(1);
    api_->create(resources::kExtendedResources, "",
                 deviceObject(uniqueName("k80"), nodes[0], resource_, {{"type", "k80"}}));
    for (const auto& claim : claims) {
      api_->create(resources::kExtendedResourceClaims, ns_,
                   claimObject(ns_, claim, resource_, 1, {{"type", "k80"}}));
    }
    return nodes[0];
  }

  // A k80 on one node, held by pod "low" (priority 10, requesting lowCpu); then pod "high"
  // (priority 1000, requesting highCpu, selecting that node) claims a k80 too. Returns the
  // node.
  std::string lowHoldsTheOnlyDevice(const std::string& lowCpu, const std::string& highCpu) {
    const std::string node = nodeWithOneK80({"low-erc", "high-erc"});
    createPod("low", "low-erc", priorityClass(10), lowCpu);
    EXPECT_TRUE(waitBound("low")) << extender_->logTail();
    EXPECT_EQ(nodeOf("low"), node);
    createPod("high", "high-erc", priorityClass(1000), highCpu, {}, 0, node);
    return node;
  }

  void expectLowUntouched(const std::string& node) {
    const json low = getPod("low");
    EXPECT_EQ(low["spec"].value("nodeName", ""), node);
    EXPECT_FALSE(low["metadata"].contains("deletionTimestamp")) << low["metadata"].dump();
    EXPECT_EQ(nodeOf("high"), "");
  }

  std::vector<std::string> pods_;
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
// preempt verb is called: the verb is reached only when an in-tree filter fails too. (Before
// the verb was served, this preemption failed with "failed preempt with extender ..., code
// 404".) "low"'s claim frees the device too, so the extender keeps the node and its victim,
// and kube-scheduler deletes "low".
TEST_F(ExtenderPreemptionTest, ContentionAnInTreeFilterSeesReachesThePreemptVerb) {
  const std::string node = lowHoldsTheOnlyDevice("8", "1");
  ASSERT_TRUE(eventually(
      [&] {
        try {
          getPod("low");
          return false;
        } catch (const std::exception&) {
          return true;
        }
      },
      60s, 200ms))
      << extender_->logTail();
  EXPECT_NE(extender_->logTail().find("preempt verb: devices nominated"), std::string::npos)
      << extender_->logTail();
  // kube-scheduler's own event on its victim (the extender's preemption is off here).
  EXPECT_TRUE(eventually(
      [&] {
        auto events = api_->list(resources::kEvents, ns_,
                                 ListOptions{.fieldSelector = "involvedObject.name=low"});
        for (const auto& e : events["items"]) {
          if (e.value("reason", "") == "Preempted" &&
              e.value("message", "").find(node) != std::string::npos) {
            return true;
          }
        }
        return false;
      },
      30s, 200ms));
  // No controller runs in this suite: the claim stays Bound to the deleted pod, and "high"
  // waits.
  EXPECT_EQ(nodeOf("high"), "");
  auto events =
      api_->list(resources::kEvents, ns_, ListOptions{.fieldSelector = "involvedObject.name=high"});
  for (const auto& e : events["items"]) {
    EXPECT_EQ(e.value("message", "").find("preempt with extender"), std::string::npos)
        << e.value("message", "");
  }
}

// The extender preempts for devices itself, with the controller releasing the victims'
// claims (integration has no kubelet: pods are bound but never run, and with
// terminationGracePeriodSeconds 0 a deleted pod is gone at once).
class ExtenderPreemptsForDevicesTest : public ExtenderPreemptionTest {
 protected:
  static void SetUpTestSuite() {
    setUpSuite([] {
      startStack({});
      if (env_ != nullptr) {
        startController();
      }
    });
  }
  static void TearDownTestSuite() {
    controller_.reset();
    stopStack();
  }

  static void startController() { controller_ = ExtenderSuite::startController(freePort(), {}); }

  // `count` k80s on one node, each held by a pod "low-i" of priority lowPriority through
  // claim "low-i-erc"; returns the node.
  std::string fullNode(int count, int lowPriority) {
    auto nodes = makeNodes(1);
    fill(nodes[0], count, priorityClass(lowPriority), "low");
    return nodes[0];
  }

  // `count` k80s on `node`, each held by a pod "<prefix>-i" of PriorityClass pc through claim
  // "<prefix>-i-erc". Other nodes must have no free k80 meanwhile.
  void fill(const std::string& node, int count, const std::string& pc, const std::string& prefix,
            const std::map<std::string, std::string>& labels = {}) {
    for (int i = 0; i < count; ++i) {
      api_->create(resources::kExtendedResources, "",
                   deviceObject(uniqueName("k80"), node, resource_, {{"type", "k80"}}));
    }
    for (int i = 0; i < count; ++i) {
      const std::string name = prefix + "-" + std::to_string(i);
      api_->create(resources::kExtendedResourceClaims, ns_,
                   claimObject(ns_, name + "-erc", resource_, 1, {{"type", "k80"}}));
      createPod(name, name + "-erc", pc, "10m", labels);
      EXPECT_TRUE(waitBound(name)) << extender_->logTail();
      EXPECT_EQ(nodeOf(name), node);
    }
  }

  // The devices a claim's status allocates.
  std::vector<std::string> allocated(const std::string& claim) {
    std::vector<std::string> out;
    const json c = api_->get(resources::kExtendedResourceClaims, ns_, claim);
    for (const auto& d :
         c.value("status", json::object()).value("extendedResourceNames", json::array())) {
      out.push_back(d.get<std::string>());
    }
    return out;
  }

  // Pod "low" bound on its node, holding the node's only k80.
  struct LowHolding {
    std::string node;
    std::vector<std::string> device;  // as allocated("low-erc") says
  };

  // One node with one k80 and claims "low-erc" and "high-erc"; pod "low" (PriorityClass pc,
  // requesting cpu, selecting the node) is bound there through "low-erc". Call it in
  // ASSERT_NO_FATAL_FAILURE.
  void lowHoldsTheOnlyK80(const std::string& pc, const std::string& cpu, LowHolding* out) {
    out->node = nodeWithOneK80({"low-erc", "high-erc"});
    createPod("low", "low-erc", pc, cpu, {}, 0, out->node);
    ASSERT_TRUE(waitBound("low")) << extender_->logTail();
    out->device = allocated("low-erc");
    ASSERT_EQ(out->device.size(), 1u);
  }

  bool exists(const std::string& pod) {
    try {
      getPod(pod);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }

  bool hasEvent(const std::string& pod, const std::string& reason) {
    auto events = api_->list(resources::kEvents, ns_,
                             ListOptions{.fieldSelector = "involvedObject.name=" + pod});
    for (const auto& e : events["items"]) {
      if (e.value("reason", "") == reason) {
        return true;
      }
    }
    return false;
  }

  static std::unique_ptr<ChildProcess> controller_;
};

std::unique_ptr<ChildProcess> ExtenderPreemptsForDevicesTest::controller_;

// Two k80s, each held by a pod of priority 10, and a third pod of priority 10 pending for a
// k80. A pod of priority 1000 claiming one k80 arrives: exactly one holder is deleted, the
// preemptor is bound to the device it freed, and the pending low-priority pod never gets it.
TEST_F(ExtenderPreemptsForDevicesTest, AHighPriorityPodPreemptsExactlyOneHolderAndGetsItsDevice) {
  ASSERT_TRUE(controller_ && controller_->running()) << "controller not running";
  const std::string node = fullNode(2, 10);
  std::map<std::string, std::string> deviceOf;
  for (const std::string low : {"low-0", "low-1"}) {
    const auto devices = allocated(low + "-erc");
    ASSERT_EQ(devices.size(), 1u) << low;
    deviceOf[low] = devices[0];
  }
  api_->create(resources::kExtendedResourceClaims, ns_,
               claimObject(ns_, "third-erc", resource_, 1, {{"type", "k80"}}));
  createPod("third", "third-erc", priorityClass(10), "10m");
  api_->create(resources::kExtendedResourceClaims, ns_,
               claimObject(ns_, "high-erc", resource_, 1, {{"type", "k80"}}));
  createPod("high", "high-erc", priorityClass(1000), "10m");

  ASSERT_TRUE(waitBound("high", 90s)) << extender_->logTail() << controller_->logTail();
  EXPECT_EQ(nodeOf("high"), node);
  // Exactly one victim.
  std::vector<std::string> gone;
  for (const std::string low : {"low-0", "low-1"}) {
    if (!exists(low)) {
      gone.push_back(low);
    }
  }
  ASSERT_EQ(gone.size(), 1u) << extender_->logTail();
  const std::string survivor = gone[0] == "low-0" ? "low-1" : "low-0";
  const json kept = getPod(survivor);
  EXPECT_EQ(kept["spec"].value("nodeName", ""), node);
  EXPECT_FALSE(kept["metadata"].contains("deletionTimestamp"));
  // The preemptor holds the victim's device; the survivor keeps its own.
  EXPECT_EQ(allocated("high-erc"), std::vector<std::string>{deviceOf[gone[0]]});
  EXPECT_EQ(allocated(survivor + "-erc"), std::vector<std::string>{deviceOf[survivor]});
  // The pending pod of the victims' priority took nothing in between.
  EXPECT_EQ(nodeOf("third"), "");
  EXPECT_TRUE(allocated("third-erc").empty());
  EXPECT_TRUE(eventually([&] { return hasEvent("high", "Preempting"); }, 30s, 200ms));
  EXPECT_TRUE(eventually([&] { return hasEvent(gone[0], "Preempted"); }, 30s, 200ms));
  EXPECT_FALSE(hasEvent(survivor, "Preempted"));
  EXPECT_EQ(invariantViolations(), "");
}

// kube-scheduler's own preemption through the verb: "low" (priority 10) takes the node's whole
// CPU and holds its only k80; "high" (priority 1000) needs a CPU and a k80 there. kube-scheduler
// finds "low" as the CPU's victim and calls /preempt, which keeps it (its claim frees the
// device) and nominates the device for "high"; "high" is bound to it once "low" is gone. The
// extender's own preemption never acts: the node fails kube-scheduler's CPU filter, so the
// extender's filter never sees it.
TEST_F(ExtenderPreemptsForDevicesTest, KubeSchedulersVictimForCpuFreesTheDeviceThroughTheVerb) {
  ASSERT_TRUE(controller_ && controller_->running()) << "controller not running";
  LowHolding low;
  ASSERT_NO_FATAL_FAILURE(lowHoldsTheOnlyK80(priorityClass(10), "8", &low));
  createPod("high", "high-erc", priorityClass(1000), "1", {}, 0, low.node);

  ASSERT_TRUE(waitBound("high", 90s)) << extender_->logTail() << controller_->logTail();
  EXPECT_EQ(nodeOf("high"), low.node);
  EXPECT_FALSE(exists("low"));
  EXPECT_EQ(allocated("high-erc"), low.device);
  EXPECT_NE(extender_->logTail().find("preempt verb: devices nominated"), std::string::npos)
      << extender_->logTail();
  EXPECT_FALSE(hasEvent("high", "Preempting"));  // the extender's own preemption's event
  EXPECT_EQ(invariantViolations(), "");
}

// As above, but kube-scheduler's victim for the CPU ("cpu-hog", no claims) holds no device; the
// node's k80 is held by "low", of low priority too, which kube-scheduler's dry run spares (the
// CPU fits without removing it). The verb adds "low": both are deleted, and "high" gets the
// device.
TEST_F(ExtenderPreemptsForDevicesTest, TheVerbAddsTheHolderOfTheDeviceToKubeSchedulersVictims) {
  ASSERT_TRUE(controller_ && controller_->running()) << "controller not running";
  const std::string lowPc = priorityClass(10);
  LowHolding low;
  ASSERT_NO_FATAL_FAILURE(lowHoldsTheOnlyK80(lowPc, "10m", &low));
  createPod("cpu-hog", "", lowPc, "7900m", {}, 0, low.node);
  ASSERT_TRUE(waitBound("cpu-hog")) << extender_->logTail();
  createPod("high", "high-erc", priorityClass(1000), "1", {}, 0, low.node);

  ASSERT_TRUE(waitBound("high", 90s)) << extender_->logTail() << controller_->logTail();
  EXPECT_EQ(nodeOf("high"), low.node);
  EXPECT_FALSE(exists("cpu-hog"));
  EXPECT_FALSE(exists("low"));
  EXPECT_EQ(allocated("high-erc"), low.device);
  EXPECT_NE(extender_->logTail().find("preempt verb: devices nominated"), std::string::npos)
      << extender_->logTail();
  EXPECT_FALSE(hasEvent("high", "Preempting"));
  EXPECT_EQ(invariantViolations(), "");
}

// Holders of the preemptor's own priority are never preempted: it stays pending and nothing
// is deleted.
TEST_F(ExtenderPreemptsForDevicesTest, EqualPriorityHoldersAreNeverPreempted) {
  ASSERT_TRUE(controller_ && controller_->running()) << "controller not running";
  fullNode(1, 500);
  api_->create(resources::kExtendedResourceClaims, ns_,
               claimObject(ns_, "peer-erc", resource_, 1, {{"type", "k80"}}));
  createPod("peer", "peer-erc", priorityClass(500), "10m");
  // Long enough for several scheduling attempts.
  EXPECT_FALSE(eventually([&] { return !nodeOf("peer").empty() || !exists("low-0"); }, 15s, 500ms));
  EXPECT_TRUE(exists("low-0"));
  EXPECT_FALSE(getPod("low-0")["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(nodeOf("peer"), "");
  EXPECT_FALSE(hasEvent("peer", "Preempting"));
}

// Two nodes full of holders of equal low priority; a PodDisruptionBudget with no disruption
// left covers the holders of the node kube-scheduler's order would otherwise pick (the first
// name). The preemptor preempts on the other node, and the protected holders are untouched.
TEST_F(ExtenderPreemptsForDevicesTest, APodDisruptionBudgetSendsPreemptionToTheOtherNode) {
  ASSERT_TRUE(controller_ && controller_->running()) << "controller not running";
  auto nodes = makeNodes(2);
  std::sort(nodes.begin(), nodes.end());
  const std::string app = uniqueName("guarded");
  json pdb = api_->create(
      resources::kPodDisruptionBudgets, ns_,
      {{"apiVersion", "policy/v1"},
       {"kind", "PodDisruptionBudget"},
       {"metadata", {{"name", "guard"}}},
       {"spec", {{"minAvailable", 2}, {"selector", {{"matchLabels", {{"app", app}}}}}}}});
  // No disruption controller runs here: the status is written as it would write it.
  pdb["status"] = {{"disruptionsAllowed", 0},
                   {"currentHealthy", 2},
                   {"desiredHealthy", 2},
                   {"expectedPods", 2},
                   {"observedGeneration", pdb["metadata"].value("generation", 1)}};
  api_->updateStatus(resources::kPodDisruptionBudgets, ns_, pdb);
  const std::string pc = priorityClass(10);
  fill(nodes[0], 2, pc, "guarded", {{"app", app}});
  fill(nodes[1], 2, pc, "free", {{"app", "other"}});
  // The API server clears status.nominatedNodeName when the pod is bound
  // (ClearingNominatedNodeNameAfterBinding), so it is seen in the preemptor's watch events.
  std::atomic<bool> stopWatch{false};
  std::mutex nominatedMu;
  std::set<std::string> nominated;
  std::thread watcher([&] {
    try {
      api_->watch(
          resources::kPods, ns_, WatchOptions{.fieldSelector = "metadata.name=high"},
          [&](const WatchEvent& e) {
            const std::string node =
                e.object.value("status", json::object()).value("nominatedNodeName", "");
            if (!node.empty()) {
              std::lock_guard lock(nominatedMu);
              nominated.insert(node);
            }
            return true;
          },
          &stopWatch);
    } catch (const std::exception&) {
      // Seen as no nomination below.
    }
  });
  api_->create(resources::kExtendedResourceClaims, ns_,
               claimObject(ns_, "high-erc", resource_, 1, {{"type", "k80"}}));
  createPod("high", "high-erc", priorityClass(1000), "10m");

  const bool bound = waitBound("high", 90s);
  stopWatch = true;
  watcher.join();
  ASSERT_TRUE(bound) << extender_->logTail() << controller_->logTail();
  EXPECT_EQ(nodeOf("high"), nodes[1]);
  // As after kube-scheduler's own preemption, the preemptor's status named the node.
  EXPECT_EQ(nominated, std::set<std::string>{nodes[1]});
  for (const std::string pod : {"guarded-0", "guarded-1"}) {
    ASSERT_TRUE(exists(pod)) << pod;
    EXPECT_FALSE(getPod(pod)["metadata"].contains("deletionTimestamp")) << pod;
    EXPECT_FALSE(hasEvent(pod, "Preempted")) << pod;
  }
  EXPECT_EQ(static_cast<int>(!exists("free-0")) + static_cast<int>(!exists("free-1")), 1)
      << extender_->logTail();
  api_->remove(resources::kPodDisruptionBudgets, ns_, "guard");
  EXPECT_EQ(invariantViolations(), "");
}

// A restarted extender resumes a preemption from the preemptor's nominatedNodeName: "low"
// has a grace period no kubelet ever ends, so once preempted it stays terminating. After the
// restart, "high"'s next filter keeps the device for it again without preempting anyone new,
// and "mid" (priority between them, arriving after the restart) is not given it.
TEST_F(ExtenderPreemptsForDevicesTest, ARestartedExtenderResumesTheNominationOfThePreemptor) {
  ASSERT_TRUE(controller_ && controller_->running()) << "controller not running";
  const std::string node = nodeWithOneK80({"low-erc", "high-erc", "mid-erc"});
  createPod("low", "low-erc", priorityClass(10), "10m", {}, 300);
  ASSERT_TRUE(waitBound("low")) << extender_->logTail();
  createPod("high", "high-erc", priorityClass(1000), "10m");
  ASSERT_TRUE(eventually(
      [&] {
        const json high = getPod("high");
        return getPod("low")["metadata"].contains("deletionTimestamp") &&
               high["status"].value("nominatedNodeName", "") == node;
      },
      30s, 200ms))
      << extender_->logTail();

  extender_->stop();
  extender_->start();
  httplib::Client health("127.0.0.1", healthPort_);
  ASSERT_TRUE(eventually(
      [&] {
        auto res = health.Get("/readyz");
        return res && res->status == 200;
      },
      60s, 100ms));
  // Any cluster event requeues a pod the extender rejected. The preemption resumes from the
  // pod's nominatedNodeName; but when kube-scheduler tried the pod while the extender was down,
  // it cleared that name with the failed attempt, and the extender decides the same victim
  // again, which the worker finds terminating and does not delete anew. Either way the device
  // is kept for the preemptor and nobody new is preempted.
  ASSERT_TRUE(eventually(
      [&] {
        api_->patch(resources::kNodes, "", node, PatchType::kMerge,
                    {{"metadata", {{"labels", {{"nudge", uniqueName("n")}}}}}});
        const std::string log = extender_->logTail();
        return log.find("preemption resumed") != std::string::npos ||
               log.find("preemption victim already terminating") != std::string::npos;
      },
      60s, 2s))
      << extender_->logTail();
  createPod("mid", "mid-erc", priorityClass(500), "10m");
  // The victim goes for good; its device is the preemptor's alone.
  deletePodNow(*api_, ns_, "low");
  ASSERT_TRUE(waitBound("high", 60s)) << extender_->logTail() << controller_->logTail();
  EXPECT_EQ(nodeOf("mid"), "");
  EXPECT_FALSE(hasEvent("mid", "Preempting"));
  EXPECT_EQ(invariantViolations(), "");
}

}  // namespace
}  // namespace ker::itest

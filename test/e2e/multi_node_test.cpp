// Two real nodes, each with its own kubelet, containerd, kube-proxy and node agent (the second
// in namespaces of its own, tainted so that only these tests' pods go there): pods placed
// between them by their devices, a shared claim keeping its pods on its device's node, a
// device name both nodes' files list, preemption choosing between the nodes, and a Node deleted
// while a pod holds its device.
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <thread>

#include "common/api_error.h"
#include "e2e_fixture.h"
#include "model/objects.h"
#include "test/integration/priority_classes.h"

namespace ker::e2e {
namespace {

class MultiNodeTest : public E2eTest {
 protected:
  void SetUp() override {
    E2eTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    const std::vector<std::string> all = nodes();
    ASSERT_GE(all.size(), 2u) << "test/run-e2e.sh starts two nodes for these tests";
    second_ = all[1];
  }

  void TearDown() override {
    E2eTest::TearDown();
    if (priorityClasses_) {
      priorityClasses_->removeAll();
    }
  }

  // A pod that may run on either node, printing the IDs it was given and its device nodes; of
  // PriorityClass `priorityClass` when one is given.
  void startPod(const std::string& name, const std::string& claim,
                const std::string& priorityClass = "") {
    json pod = busyboxPod(name, {claim},
                          "echo \"ids=$" + deviceEnvName() +
                              "\"; echo \"nodes=$(ls /dev | grep ^ker- | tr '\\n' ' ')\"; "
                              "exec sleep 3600");
    pod["spec"]["tolerations"] = json::array({extraNodeToleration()});
    if (priorityClass.empty()) {
      createPod(pod);
      return;
    }
    pod["spec"]["priorityClassName"] = priorityClass;
    ASSERT_TRUE(itest::createPodOnceAdmitted(*api_, ns_, pod, 30s, 200ms))
        << "PriorityClass " << priorityClass << " never admitted";
  }

  std::string priorityClass(int value) {
    if (!priorityClasses_) {
      priorityClasses_.emplace(*api_);
    }
    return priorityClasses_->create(value);
  }

  std::string nodeOf(const std::string& pod) {
    return getPod(pod)->value("/spec/nodeName"_json_pointer, std::string());
  }

  // The pod's output once it printed both lines.
  std::string awaitOutput(const std::string& pod) {
    std::string out;
    eventually([&] { return (out = logs(pod)).find("nodes=") != std::string::npos; }, 30s);
    return out;
  }

  static std::string deviceNodeOf(const json& device) {
    return device["metadata"]["labels"].value(kNodeLabel, std::string());
  }

  std::string second_;
  std::optional<itest::PriorityClasses> priorityClasses_;  // once a test asks for one
};

// Each node's agent publishes its own node's devices only, and each pod runs where the device
// its claim got is, seeing that device and no other.
TEST_F(MultiNodeTest, EachPodRunsOnItsDevicesNodeAndSeesOnlyThatDevice) {
  const std::string a = uniqueName("first");
  const std::string b = uniqueName("second");
  createDevice(a);
  createDevice(b, "k80", second_);
  EXPECT_EQ(deviceNodeOf(getDevice(a)), node());
  EXPECT_EQ(deviceNodeOf(getDevice(b)), second_);

  // One device per node: the two pods must go to different nodes.
  createClaim("ca");
  createClaim("cb");
  startPod("pa", "ca");
  startPod("pb", "cb");
  for (const std::string pod : {"pa", "pb"}) {
    ASSERT_TRUE(eventually([&] { return podRunning(pod); }, 120s))
        << pod << " is " << podPhase(pod)
        << "; FailedScheduling: " << testing::PrintToString(eventMessages(pod, "FailedScheduling"));
  }
  std::set<std::string> used;
  for (const auto& [pod, claim] : {std::pair{"pa", "ca"}, std::pair{"pb", "cb"}}) {
    const json c = getClaim(claim);
    ASSERT_EQ(c.value("/status/phase"_json_pointer, std::string()), "Bound") << c.dump();
    const std::string device = c["status"]["extendedResourceNames"][0];
    used.insert(device);
    const json d = getDevice(device);
    EXPECT_EQ(nodeOf(pod), deviceNodeOf(d)) << pod << " runs away from " << device;
    EXPECT_EQ(c.value("/status/nodeName"_json_pointer, std::string()), nodeOf(pod));
    const std::string out = awaitOutput(pod);
    EXPECT_NE(out.find("ids=" + d["spec"]["deviceID"].get<std::string>() + "\n"), std::string::npos)
        << pod << ": " << out;
    EXPECT_NE(out.find("nodes=ker-" + device + " \n"), std::string::npos) << pod << ": " << out;
  }
  EXPECT_EQ(used, (std::set<std::string>{a, b}));
  EXPECT_EQ(env_->invariantViolations(), "");
}

// A shareable claim's device is on one node: every pod joining the claim runs there, though
// the other node has a free device of the same kind.
TEST_F(MultiNodeTest, ASharedClaimsPodsAllRunOnItsDevicesNode) {
  createDevice(uniqueName("first"));
  createDevice(uniqueName("second"), "k80", second_);
  json claim = itest::claimObject(ns_, "shared", resource_, 1, {{"type", "k80"}});
  claim["spec"]["shareable"] = true;
  api_->create(resources::kExtendedResourceClaims, ns_, claim);

  startPod("p0", "shared");
  ASSERT_TRUE(eventually([&] { return podRunning("p0"); }, 120s)) << podPhase("p0");
  const std::string where = nodeOf("p0");
  for (const std::string pod : {"p1", "p2"}) {
    startPod(pod, "shared");
  }
  const std::string device = getClaim("shared")["status"]["extendedResourceNames"][0];
  const std::string id = getDevice(device)["spec"]["deviceID"];
  for (const std::string pod : {"p0", "p1", "p2"}) {
    ASSERT_TRUE(eventually([&] { return podRunning(pod); }, 120s)) << pod << ": " << podPhase(pod);
    EXPECT_EQ(nodeOf(pod), where) << pod;
    const std::string out = awaitOutput(pod);
    EXPECT_NE(out.find("ids=" + id + "\n"), std::string::npos) << pod << ": " << out;
  }
  const json holders = getClaim("shared").value("/status/holders"_json_pointer, json::array());
  EXPECT_EQ(holders.size(), 3u) << holders.dump();
  EXPECT_EQ(env_->invariantViolations(), "");
}

// The second node's file lists a device name the first node's agent already published: the
// second agent refuses it with an event, the object stays the first node's, and a pod claiming
// it runs on the first node with it.
TEST_F(MultiNodeTest, ADeviceNameBothNodesListStaysWithTheNodeThatPublishedItFirst) {
  const std::string name = uniqueName("both");
  createDevice(name);
  const json before = getDevice(name);
  ASSERT_EQ(deviceNodeOf(before), node());
  addDeviceToNodeFile(name, "k80", second_);

  const json event = awaitDeviceEvent(name, "DeviceNameTaken", 60s);
  EXPECT_FALSE(event.is_null()) << "no DeviceNameTaken event for " << name;
  if (!event.is_null()) {
    EXPECT_EQ(event.value("reportingInstance", std::string()), second_) << event.dump();
    const std::string message = event.value("message", "");
    EXPECT_NE(message.find("node " + node() + "'s device"), std::string::npos) << message;
  }
  // Several of the agents' sync periods later, the object is still the first node's.
  std::this_thread::sleep_for(3s);
  const json now = getDevice(name);
  EXPECT_EQ(now["metadata"]["labels"], before["metadata"]["labels"]) << now.dump();
  EXPECT_EQ(now["spec"], before["spec"]) << now.dump();
  EXPECT_EQ(now.value("/status/phase"_json_pointer, std::string()), "Available") << now.dump();

  createClaim("c");
  startPod("p", "c");
  ASSERT_TRUE(eventually([&] { return podRunning("p"); }, 120s)) << podPhase("p");
  EXPECT_EQ(nodeOf("p"), node());
  const std::string out = awaitOutput("p");
  EXPECT_NE(out.find("ids=" + name + "-id\n"), std::string::npos) << out;
  EXPECT_EQ(env_->invariantViolations(), "");
}

// Preemption choosing between the nodes: each node's one device is held by a pod of lower
// priority than the preemptor, and the victim is the holder of the lowest priority, on
// whichever node that is (the second here, so that the first node is not the answer by
// default). The preemptor runs there with the device its victim held; the other holder runs on.
TEST_F(MultiNodeTest, PreemptionTakesTheDeviceOfTheLowestPriorityHolderOnEitherNode) {
  const std::string low = priorityClass(10);
  const std::string mid = priorityClass(50);
  const std::string high = priorityClass(1000);
  const std::string lowDevice = uniqueName("low");
  createDevice(lowDevice, "k80", second_);
  createClaim("low");
  startPod("low", "low", low);
  ASSERT_TRUE(eventually([&] { return podRunning("low"); }, 120s)) << podPhase("low");
  ASSERT_EQ(nodeOf("low"), second_);
  const std::string midDevice = uniqueName("mid");
  createDevice(midDevice, "k80", node());
  createClaim("mid");
  startPod("mid", "mid", mid);
  ASSERT_TRUE(eventually([&] { return podRunning("mid"); }, 120s)) << podPhase("mid");
  ASSERT_EQ(nodeOf("mid"), node());
  const std::string midUid = getPod("mid")->value("/metadata/uid"_json_pointer, std::string());

  createClaim("high");
  startPod("high", "high", high);
  ASSERT_TRUE(eventually([&] { return podRunning("high"); }, 180s))
      << podPhase("high") << "; FailedScheduling: "
      << testing::PrintToString(eventMessages("high", "FailedScheduling"));
  EXPECT_EQ(nodeOf("high"), second_);
  EXPECT_EQ(allocated("high"), std::vector<std::string>{lowDevice});
  const std::string out = awaitOutput("high");
  EXPECT_NE(out.find("ids=" + lowDevice + "-id\n"), std::string::npos) << out;
  EXPECT_TRUE(eventually([&] { return !getPod("low"); }, 30s))
      << "the victim outlived the preemption: " << podPhase("low");
  ASSERT_TRUE(getPod("mid"));
  EXPECT_EQ(getPod("mid")->value("/metadata/uid"_json_pointer, std::string()), midUid);
  EXPECT_TRUE(podRunning("mid"));
  EXPECT_EQ(allocated("mid"), std::vector<std::string>{midDevice});
  EXPECT_EQ(env_->invariantViolations(), "");
}

// The second node's Node object deleted while a pod holds its device, its kubelet still running
// (v1.37.1 registers only when it starts): kube-controller-manager's pod GC deletes the pod,
// the kubelet stops its container, and only then is the device free; it then goes Pending
// (NodeNotRegistered), no pod anywhere gets it while the node is gone, and once the kubelet
// registers the node again the next pod does.
TEST_F(MultiNodeTest, ANodeDeletedWhileAPodHoldsItsDeviceGivesItToNoOtherPodUntilItIsBack) {
  const std::string device = uniqueName("gone");
  createDevice(device, "k80", second_);
  createClaim("c1");
  startPod("holder", "c1");
  ASSERT_TRUE(eventually([&] { return podRunning("holder"); }, 120s)) << podPhase("holder");
  const std::string container = containerIdOf(*getPod("holder"));
  ASSERT_FALSE(processesOf(container).empty());

  const std::string oldUid = api_->get(resources::kNodes, "", second_)["metadata"]["uid"];
  // Whatever happens below, the node is registered again for the tests after this one.
  const OnScopeExit back([&] {
    try {
      api_->get(resources::kNodes, "", second_);
    } catch (const ApiError& e) {
      EXPECT_EQ(env_->launch("restart-kubelet", "--node-name " + second_), 0);
    }
  });
  api_->remove(resources::kNodes, "", second_);

  // The pod goes (pod GC: its node no longer exists), its container with it, then the claim.
  ASSERT_TRUE(eventually([&] { return !getPod("holder"); }, 180s, 1s))
      << "the holder outlived its Node: " << podPhase("holder");
  EXPECT_TRUE(eventually([&] { return processesOf(container).empty(); }, 30s))
      << "the holder's container still runs";
  EXPECT_TRUE(eventually(
      [&] {
        return getClaim("c1").value("/status/phase"_json_pointer, std::string()) == "Pending";
      },
      30s))
      << getClaim("c1").dump();

  // Free on a node that is gone: once that has lasted the controller's grace, its status says
  // it is not offered, and why.
  EXPECT_TRUE(eventually(
      [&] {
        const auto d = getDevice(device);
        return d.value("/status/phase"_json_pointer, std::string()) == "Pending" &&
               d.value("/status/reason"_json_pointer, std::string()) == "NodeNotRegistered";
      },
      120s, 1s))
      << getDevice(device).dump();

  // The device's node is gone: a pod claiming it is placed nowhere.
  createClaim("c2");
  startPod("next", "c2");
  std::this_thread::sleep_for(10s);
  EXPECT_EQ(nodeOf("next"), "") << "placed while the device's node is gone";

  ASSERT_EQ(env_->launch("restart-kubelet", "--node-name " + second_), 0);
  EXPECT_NE(api_->get(resources::kNodes, "", second_)["metadata"]["uid"], oldUid);
  ASSERT_TRUE(eventually([&] { return podRunning("next"); }, 120s)) << podPhase("next");
  EXPECT_EQ(nodeOf("next"), second_);
  const std::string out = awaitOutput("next");
  EXPECT_NE(out.find("ids=" + device + "-id\n"), std::string::npos) << out;
  EXPECT_EQ(getDevice(device).value("/status/phase"_json_pointer, std::string()), "Bound");
  EXPECT_EQ(env_->invariantViolations(), "");
}

}  // namespace
}  // namespace ker::e2e

// The node agent on the real node: the device the extender chose is the device the container
// gets (device node, environment), nobody else's; allocations cannot be forged; the node file
// and device health drive the devices in the API; restarting the agent changes no running
// container; and a container that started while the agent was stalled is stopped once it runs
// again, and comes back with its device.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "agent/agent_metrics.h"
#include "agent/device_attribution.h"
#include "agent/inventory_plan.h"
#include "agent/runtime_connection.h"
#include "common/api_error.h"
#include "common/metrics.h"
#include "common/resource.h"
#include "e2e_fixture.h"
#include "model/objects.h"

namespace ker::e2e {
namespace {

class NodeAgentTest : public E2eTest {
 protected:
  // Two devices, and pods pa and pb running with one each, through claims ca and cb.
  void runTwoPodsWithADeviceEach();
  // The node agent's process on the node; 0 (and a failure) unless there is exactly one.
  pid_t agentPid();
  // True once no pod on the node is starting or stopping (90 s at most).
  bool awaitNodeQuiet();
  // Asserts POD runs within BOUND, printed DEVICE's ID and saw its device node.
  void awaitRunningWithDevice(const std::string& pod, const std::string& device,
                              std::chrono::seconds bound);
};

std::string phaseOf(const json& obj) {
  return obj.value("/status/phase"_json_pointer, std::string());
}

// Prints what the container got, proves the device node usable by writing to it, and keeps
// running. Exits 3 (a visible failure) when it was started without its device.
std::string deviceScript(const std::string& envName) {
  return "[ -n \"$" + envName +
         "\" ] || { echo 'started without devices'; exit 3; }; "
         "echo \"ids=$" +
         envName +
         "\"; "
         "for f in /dev/ker-*; do echo \"node=$f\"; echo x > \"$f\" && echo \"wrote=$f\"; done; "
         "exec sleep 3600";
}

void NodeAgentTest::runTwoPodsWithADeviceEach() {
  createDevice(uniqueName("gpu"));
  createDevice(uniqueName("gpu"));
  createClaim("ca");
  createClaim("cb");
  createPod(busyboxPod("pa", {"ca"}, deviceScript(deviceEnvName())));
  createPod(busyboxPod("pb", {"cb"}, deviceScript(deviceEnvName())));
  for (const auto* pod : {"pa", "pb"}) {
    ASSERT_TRUE(eventually([&] { return podRunning(pod); }, 120s)) << pod << ": " << podPhase(pod);
  }
}

TEST_F(NodeAgentTest, TwoPodsEachSeeExactlyTheirOwnDevice) {
  ASSERT_NO_FATAL_FAILURE(runTwoPodsWithADeviceEach());
  std::map<std::string, std::string> mine;
  for (const auto& [pod, claim] : {std::pair{"pa", "ca"}, std::pair{"pb", "cb"}}) {
    json c = getClaim(claim);
    ASSERT_EQ(phaseOf(c), "Bound");
    mine[pod] = c["status"]["extendedResourceNames"][0].get<std::string>();
  }
  ASSERT_NE(mine["pa"], mine["pb"]);
  for (const auto& [pod, other] : {std::pair{"pa", "pb"}, std::pair{"pb", "pa"}}) {
    std::string out;
    ASSERT_TRUE(
        eventually([&] { return (out = logs(pod)).find("wrote=") != std::string::npos; }, 30s))
        << out;
    const std::string own = mine[pod];
    const std::string theirs = mine[other];
    EXPECT_NE(out.find("ids=" + own + "-id\n"), std::string::npos) << out;
    EXPECT_NE(out.find("node=" + containerDeviceNode(own) + "\n"), std::string::npos) << out;
    EXPECT_NE(out.find("wrote=" + containerDeviceNode(own) + "\n"), std::string::npos) << out;
    EXPECT_EQ(out.find(theirs), std::string::npos) << pod << " sees " << theirs << ":\n" << out;
    // The Binding set the allocation annotation through the admission policy.
    json p = *getPod(pod);
    EXPECT_NE(
        p.value("/metadata/annotations/extendedresource.io~1allocation"_json_pointer, std::string())
            .find(own),
        std::string::npos);
  }
}

TEST_F(NodeAgentTest, AForgedAllocationOrStatusIsRefusedByAdmission) {
  json pod = busyboxPod("forger", {}, "sleep 3600");
  pod["metadata"]["annotations"][kAllocationAnnotation] = R"({"c":[{"name":"x"}]})";
  try {
    createPod(pod);
    FAIL() << "a pod with its own allocation annotation was admitted";
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("extendedresource.io/allocation"), std::string::npos)
        << e.what();
  }
  // Nor may it be added later (to a pod of the default scheduler, which writes no allocation).
  json later = busyboxPod("later", {}, "sleep 3600");
  later["spec"].erase("schedulerName");
  createPod(later);
  json patch = {{"metadata", {{"annotations", {{kAllocationAnnotation, R"({"c":[]})"}}}}}};
  EXPECT_THROW(api_->patch(resources::kPods, ns_, "later", PatchType::kMerge, patch), ApiError);
  // Claim status is written by the components only, not by an administrator either.
  createClaim("c");
  json claim;
  // (Once the controller has written its first status and then its protection finalizer, so
  // the write below is not a conflict.)
  ASSERT_TRUE(eventually(
      [&] {
        claim = getClaim("c");
        return !phaseOf(claim).empty() && claim["metadata"].value("finalizers", json::array()) ==
                                              json::array({kClaimProtectionFinalizer});
      },
      30s));
  claim["status"] = {{"phase", "Bound"}, {"nodeName", node()}, {"extendedResourceNames", {"x"}}};
  try {
    api_->updateStatus(resources::kExtendedResourceClaims, ns_, claim);
    FAIL() << "a status write by the administrator was admitted";
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("status is written by the extended-resource"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(NodeAgentTest, APodNamingAnotherPodsClaimNeverStartsAContainer) {
  createDevice(uniqueName("gpu"));
  createClaim("gpu");
  createPod(busyboxPod("owner", {"gpu"}, deviceScript(deviceEnvName())));
  ASSERT_TRUE(eventually([&] { return podRunning("owner"); }, 120s)) << podPhase("owner");
  // Placed on the node directly, past any scheduler, naming the owner's claim.
  json thief = busyboxPod("thief", {"gpu"}, deviceScript(deviceEnvName()));
  thief["spec"].erase("schedulerName");
  thief["spec"]["nodeName"] = node();
  createPod(thief);
  const std::string why = awaitEventMessage("thief", "Failed", "not to this pod", 60s);
  ASSERT_FALSE(why.empty());
  EXPECT_NE(why.find("extended-resource-node-agent"), std::string::npos) << why;
  json p = *getPod("thief");
  EXPECT_NE(phaseOf(p), "Running");
  EXPECT_FALSE(p.contains("/status/containerStatuses/0/state/running"_json_pointer)) << p.dump();
  EXPECT_TRUE(podRunning("owner"));
}

// An entry dropped while a pod runs with the device does not take the device from it: the
// device stays Bound to the claim, marked DeviceNotListed, and the pod is warned. Once the pod is
// gone and the claim frees the device, the agent withdraws it.
TEST_F(NodeAgentTest, ADeviceDroppedFromTheNodeFileStaysWithItsPodThenIsWithdrawn) {
  createDevice(uniqueName("gpu"));
  const std::string device = devices_[0];
  createClaim("gpu");
  createPod(busyboxPod("app", {"gpu"}, deviceScript(deviceEnvName())));
  ASSERT_TRUE(eventually([&] { return podRunning("app"); }, 120s)) << podPhase("app");

  removeDeviceFromNodeFile(device);
  json d;
  ASSERT_TRUE(eventually(
      [&] {
        return (d = getDevice(device)).value("/status/reason"_json_pointer, std::string()) ==
               "DeviceNotListed";
      },
      60s))
      << device << " was not marked: " << d.dump();
  EXPECT_EQ(phaseOf(d), "Bound");
  EXPECT_FALSE(d.contains("/metadata/deletionTimestamp"_json_pointer)) << d.dump();
  EXPECT_NE(d.value("/status/message"_json_pointer, std::string()).find("node file"),
            std::string::npos)
      << d.dump();
  EXPECT_TRUE(eventually([&] { return !eventMessages("app", "DeviceNotListed").empty(); }, 30s));
  EXPECT_EQ(phaseOf(getClaim("gpu")), "Bound");
  EXPECT_TRUE(podRunning("app"));

  deletePod("app");
  ASSERT_TRUE(eventually(
      [&] {
        try {
          getDevice(device);
          return false;
        } catch (const ApiError& e) {
          return e.isNotFound();
        }
      },
      120s))
      << device << " stayed after its pod was gone";
  EXPECT_EQ(phaseOf(getClaim("gpu")), "Pending");
}

// An entry renamed in the node file while a pod runs with its device is the same device (its
// deviceID): no second pod gets it under the new name while the first runs. The new name is
// published once the old object is gone, and a pod claiming the device then runs with it.
TEST_F(NodeAgentTest, ADeviceRenamedInTheNodeFileReachesNoSecondPodWhileItsPodRuns) {
  createDevice(uniqueName("gpu"));
  const std::string device = devices_[0];
  createClaim("first");
  createPod(busyboxPod("first", {"first"}, deviceScript(deviceEnvName())));
  ASSERT_TRUE(eventually([&] { return podRunning("first"); }, 120s)) << podPhase("first");

  const std::string renamed = device + "-new";
  devices_.push_back(renamed);  // its entry is removed at TearDown
  editNodeFile([&](json& devices) {
    for (auto& d : devices) {
      if (d.value("name", "") == device) {
        d["name"] = renamed;
      }
    }
  });
  createClaim("second");
  createPod(busyboxPod("second", {"second"}, deviceScript(deviceEnvName())));
  auto published = [&] {
    try {
      getDevice(renamed);
      return true;
    } catch (const ApiError& e) {
      if (!e.isNotFound()) {
        throw;
      }
      return false;
    }
  };
  // Many agent sync periods: the device is not offered twice, and the second pod never runs.
  std::this_thread::sleep_for(15s);
  EXPECT_FALSE(published()) << renamed << " was published while " << device << " is held";
  EXPECT_NE(podPhase("second"), "Running") << logs("second");
  EXPECT_TRUE(podRunning("first"));

  deletePod("first");
  ASSERT_TRUE(eventually([&] { return podRunning("second"); }, 180s)) << podPhase("second");
  EXPECT_EQ(allocated("second"), std::vector<std::string>{renamed});
  EXPECT_TRUE(eventually(
      [&] { return logs("second").find("ids=" + device + "-id\n") != std::string::npos; }, 30s))
      << logs("second");
  EXPECT_EQ(env_->invariantViolations(), "");
}

// The entry removed after the pod was bound to the device and before its container started:
// the container is refused while the entry is away, the claim keeps the device (never Lost),
// and the pod starts with it once the entry is back.
TEST_F(NodeAgentTest, AnEntryRemovedBetweenBindAndStartHoldsThePodUntilItIsBack) {
  createDevice(uniqueName("gpu"));
  const std::string device = devices_[0];
  createClaim("gpu");
  json pod = busyboxPod("app", {"gpu"}, deviceScript(deviceEnvName()));
  json init = pod["spec"]["containers"][0];
  init["name"] = "wait";
  init["command"] = {"/bin/sh", "-c", "sleep 12"};
  init.erase("env");
  pod["spec"]["initContainers"] = json::array({init});
  createPod(pod);
  ASSERT_TRUE(eventually(
      [&] {
        auto p = getPod("app");
        return p && p->contains("/status/initContainerStatuses/0/state/running"_json_pointer);
      },
      120s))
      << podPhase("app");

  const json entry = takeNodeFileEntry(device);
  ASSERT_FALSE(entry.is_null());
  ASSERT_FALSE(awaitEventMessage("app", "Failed", device, 90s).empty())
      << "the container was not refused while its device's entry was away";
  EXPECT_NE(podPhase("app"), "Running");
  json d = getDevice(device);
  EXPECT_EQ(phaseOf(d), "Bound") << d.dump();
  EXPECT_FALSE(d.contains("/metadata/deletionTimestamp"_json_pointer)) << d.dump();
  EXPECT_EQ(phaseOf(getClaim("gpu")), "Bound");

  editNodeFile([&](json& devices) { devices.push_back(entry); });
  ASSERT_TRUE(eventually([&] { return podRunning("app"); }, 120s)) << podPhase("app");
  EXPECT_TRUE(
      eventually([&] { return logs("app").find(device + "-id") != std::string::npos; }, 30s))
      << logs("app");
  EXPECT_TRUE(eventually(
      [&] { return getDevice(device).value("/status/reason"_json_pointer, std::string()).empty(); },
      30s))
      << getDevice(device).dump();
}

TEST_F(NodeAgentTest, ADeviceWhoseDeviceNodeVanishesGoesPendingAndComesBack) {
  createDevice(uniqueName("gpu"));
  const std::string device = devices_[0];
  ASSERT_EQ(::unlink(hostDeviceNode(device).c_str()), 0);
  json d;
  ASSERT_TRUE(eventually([&] { return phaseOf(d = getDevice(device)) == "Pending"; }, 60s))
      << d.dump();
  EXPECT_EQ(d.value("/status/reason"_json_pointer, std::string()), "DeviceUnhealthy");
  EXPECT_NE(d.value("/status/message"_json_pointer, std::string()).find("missing"),
            std::string::npos);

  // Not offered meanwhile: a pod claiming it waits.
  createClaim("gpu");
  createPod(busyboxPod("app", {"gpu"}, deviceScript(deviceEnvName())));
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(podPhase("app"), "Pending");

  ASSERT_EQ(::mknod(hostDeviceNode(device).c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  ASSERT_TRUE(eventually([&] { return podRunning("app"); }, 120s)) << podPhase("app");
  EXPECT_EQ(phaseOf(getDevice(device)), "Bound");
}

TEST_F(NodeAgentTest, AnAllocatedDeviceTurningUnhealthyStaysWithItsPodWhichIsWarned) {
  createDevice(uniqueName("gpu"));
  const std::string device = devices_[0];
  createClaim("gpu");
  createPod(busyboxPod("app", {"gpu"}, deviceScript(deviceEnvName())));
  ASSERT_TRUE(eventually([&] { return podRunning("app"); }, 120s)) << podPhase("app");

  ASSERT_EQ(::unlink(hostDeviceNode(device).c_str()), 0);
  std::vector<std::string> warned;
  ASSERT_TRUE(
      eventually([&] { return !(warned = eventMessages("app", "DeviceUnhealthy")).empty(); }, 60s));
  EXPECT_NE(warned[0].find(device), std::string::npos) << warned[0];
  EXPECT_FALSE(eventMessages("gpu", "DeviceUnhealthy").empty());
  EXPECT_EQ(phaseOf(getDevice(device)), "Bound");
  EXPECT_EQ(phaseOf(getClaim("gpu")), "Bound");
  EXPECT_TRUE(podRunning("app"));
}

// Restarting the agent (its pod deleted, the DaemonSet makes a new one) while pods come and go:
// running containers are not touched, and every container that starts has its device.
TEST_F(NodeAgentTest, RestartingTheAgentDuringChurnLeavesContainersAlone) {
  constexpr int kPods = 4;
  for (int i = 0; i < kPods; ++i) {
    createDevice(uniqueName("gpu"));
  }
  auto name = [](int i) { return "p" + std::to_string(i); };
  for (int i = 0; i < kPods / 2; ++i) {
    createClaim("c" + std::to_string(i));
    createPod(busyboxPod(name(i), {"c" + std::to_string(i)}, deviceScript(deviceEnvName())));
  }
  std::map<std::string, std::string> containerIds;
  for (int i = 0; i < kPods / 2; ++i) {
    ASSERT_TRUE(eventually([&] { return podRunning(name(i)); }, 120s)) << podPhase(name(i));
    containerIds[name(i)] =
        getPod(name(i))->value("/status/containerStatuses/0/containerID"_json_pointer, "");
  }

  const std::vector<json> agents = componentPods("extended-resource-node-agent", node());
  ASSERT_EQ(agents.size(), 1u);
  const std::string agentPod = agents[0]["metadata"]["name"];
  std::string out;
  ASSERT_EQ(env_->kubectl("delete pod -n kube-system --wait=false " + agentPod, &out), 0) << out;
  // Churn while it is away and coming back: the first pods go, new ones come.
  deletePod(name(0));
  for (int i = kPods / 2; i < kPods; ++i) {
    createClaim("c" + std::to_string(i));
    createPod(busyboxPod(name(i), {"c" + std::to_string(i)}, deviceScript(deviceEnvName())));
  }
  for (int i = kPods / 2; i < kPods; ++i) {
    ASSERT_TRUE(eventually([&] { return podRunning(name(i)); }, 180s)) << podPhase(name(i));
  }
  // The running pod was never restarted nor recreated.
  json p1 = *getPod(name(1));
  EXPECT_EQ(p1.value("/status/containerStatuses/0/containerID"_json_pointer, ""),
            containerIds[name(1)]);
  EXPECT_EQ(p1.value("/status/containerStatuses/0/restartCount"_json_pointer, -1), 0);
  // No container of any pod ever ran without its device (it would have exited 3).
  for (int i = 1; i < kPods; ++i) {
    json p = *getPod(name(i));
    EXPECT_FALSE(p.contains("/status/containerStatuses/0/lastState/terminated"_json_pointer))
        << name(i) << ": " << p["status"].dump();
    std::string log;
    ASSERT_TRUE(
        eventually([&] { return (log = logs(name(i))).find("wrote=") != std::string::npos; }, 30s))
        << name(i) << ": " << log;
    EXPECT_EQ(log.find("started without devices"), std::string::npos) << log;
  }
  // The new agent is serving.
  EXPECT_TRUE(eventually(
      [&] {
        json ds = kubectlJson("get daemonset -n kube-system extended-resource-node-agent");
        return !ds.is_discarded() &&
               ds.value("/status/numberReady"_json_pointer, size_t{0}) == nodes().size();
      },
      60s));
}

// A plugin of the test's own on the node's NRI socket. For the test's pod `pod`, it refuses
// container creation while `refusing`, else sets PROBE=1; other pods it leaves alone.
class ProbePlugin : public nri::Plugin {
 public:
  ProbePlugin(std::string ns, std::string pod) : ns_(std::move(ns)), pod_(std::move(pod)) {}
  nri::Status configure(const nri::ConfigureRequest&, nri::ConfigureResponse* resp) override {
    resp->set_events(nri::eventBit(nri::CREATE_CONTAINER));
    return nri::Status::ok();
  }
  nri::Status createContainer(const nri::CreateContainerRequest& req,
                              nri::CreateContainerResponse* resp) override {
    if (req.pod().namespace_() != ns_ || req.pod().name() != pod_) {
      return nri::Status::ok();
    }
    if (refusing) {
      ++refused;
      return nri::Status::rpcError(nri::RpcCode::kFailedPrecondition,
                                   "the test's probe refuses this container for now");
    }
    auto* env = resp->mutable_adjust()->add_env();
    env->set_key("PROBE");
    env->set_value("1");
    return nri::Status::ok();
  }
  std::atomic<bool> refusing{true};
  std::atomic<int> refused{0};

 private:
  std::string ns_, pod_;
};

// The probe registered as `ker-e2e-probe` through the agent's own connection code, served on a
// thread until stopped (as the agent stops: drain, close, leave).
class ProbeConnection {
 public:
  ProbeConnection(const std::string& socket, ProbePlugin* plugin)
      : connection_({.socketPath = socket, .pluginName = "ker-e2e-probe", .pluginIndex = "90"},
                    plugin, &metrics_),
        thread_([this] { connection_.run(stop_); }) {}
  ~ProbeConnection() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) {
      thread_.join();
    }
  }
  bool connected() const { return connection_.connected(); }

 private:
  metrics::Registry registry_;
  agent::AgentMetrics metrics_{registry_};
  agent::RuntimeConnection connection_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A plugin that stops cleanly leaves no gap: NRI keeps a closed plugin in its list until its
// next event ends, and a container creation that is that event would count it as consulted
// and start without its answer. The agent's connection code has containerd drop it at once,
// so the pod that requires it is refused by the validator, and runs only once it is back. The
// pod's sandbox exists before the stop (its creation is being refused), so the kubelet's next
// try is a bare container creation, the first event after the stop on a quiet node.
TEST_F(NodeAgentTest, APluginThatStopsCleanlyIsDroppedAtOnceSoItsPodWaitsForIt) {
  ASSERT_TRUE(awaitNodeQuiet());
  ProbePlugin probe(ns_, "probe");
  auto connection = std::make_unique<ProbeConnection>(env_->value("NRI_SOCKET"), &probe);
  ASSERT_TRUE(eventually([&] { return connection->connected(); }, 10s));
  json pod = busyboxPod("probe", {},
                        "[ \"$PROBE\" = 1 ] || { echo 'started without the probe'; exit 3; }; "
                        "echo probe=$PROBE; exec sleep 3600");
  pod["metadata"]["annotations"]["required-plugins.noderesource.dev/pod"] = R"(["ker-e2e-probe"])";
  pod["spec"]["nodeName"] = node();
  createPod(pod);
  ASSERT_TRUE(eventually([&] { return probe.refused.load() >= 1; }, 90s));

  connection->stop();
  std::string waiting;
  ASSERT_TRUE(eventually(
      [&] {
        waiting = getPod("probe")->value(
            "/status/containerStatuses/0/state/waiting/message"_json_pointer, std::string());
        return waiting.find("not present") != std::string::npos;
      },
      90s))
      << "the kubelet's tries after the stop were not refused by the validator: " << waiting;
  json p = *getPod("probe");
  EXPECT_FALSE(p.contains("/status/containerStatuses/0/lastState/terminated"_json_pointer))
      << p["status"].dump();
  EXPECT_EQ(p.value("/status/containerStatuses/0/restartCount"_json_pointer, -1), 0);
  EXPECT_EQ(logs("probe").find("started without"), std::string::npos);

  probe.refusing = false;
  connection = std::make_unique<ProbeConnection>(env_->value("NRI_SOCKET"), &probe);
  std::string out;
  ASSERT_TRUE(eventually(
      [&] {
        return podRunning("probe") && (out = logs("probe")).find("probe=1") != std::string::npos;
      },
      120s))
      << podPhase("probe") << ": " << out;
  p = *getPod("probe");
  EXPECT_FALSE(p.contains("/status/containerStatuses/0/lastState/terminated"_json_pointer))
      << p["status"].dump();
}

// An agent that starts while its node file is broken puts in force the last file that parsed,
// as it kept it: a container without a claim still cannot mount the devices' nodes, and a pod
// allocated one of them still gets it. Started again with no kept copy either, it knows no
// device and fails closed: /dev is not mounted, and the free device is out of offer until the
// file parses again. With the file deleted where no copy was kept, the same, while the device
// a pod runs with stays with it.
TEST_F(NodeAgentTest, AnAgentStartedWithABrokenNodeFileStillGuardsTheNodesDevices) {
  const std::string gpu = uniqueName("gpu");
  createDevice(gpu);
  const std::string path = env_->value("NODE_AGENT_FILE");
  auto replace = [](const std::string& file, const std::string& text) {
    const std::string tmp = file + ".tmp";
    std::ofstream(tmp) << text;
    return std::rename(tmp.c_str(), file.c_str()) == 0;
  };
  std::stringstream good;
  good << std::ifstream(path).rdbuf();
  struct Restore {
    std::function<bool(const std::string&, const std::string&)> replace;
    std::string path, text;
    ~Restore() { replace(path, text); }
  } restore{replace, path, good.str()};
  ASSERT_TRUE(replace(path, "devices: [this is not a device list"));

  auto restartAgent = [&] {
    const std::vector<json> before = componentPods("extended-resource-node-agent", node());
    ASSERT_EQ(before.size(), 1u);
    const std::string old = before[0]["metadata"]["name"];
    std::string out;
    ASSERT_EQ(env_->kubectl("delete pod -n kube-system --wait=false " + old, &out), 0) << out;
    auto readyCondition = [](const json& pod) {
      return conditionOf(pod, "Ready").value("status", "") == "True";
    };
    ASSERT_TRUE(eventually(
        [&] {
          const auto agents = componentPods("extended-resource-node-agent", node());
          return agents.size() == 1 && agents[0]["metadata"]["name"] != old &&
                 readyCondition(agents[0]);
        },
        120s))
        << "no new node agent became ready";
  };
  auto mountingDev = [&](const std::string& name) {
    json pod = busyboxPod(name, {}, "sleep 3600");
    pod["spec"]["volumes"] = {{{"name", "dev"}, {"hostPath", {{"path", "/dev"}}}}};
    pod["spec"]["containers"][0]["volumeMounts"] = {{{"name", "dev"}, {"mountPath", "/host-dev"}}};
    createPod(pod);
  };

  ASSERT_NO_FATAL_FAILURE(restartAgent());
  mountingDev("by-mount");
  createClaim("c");
  createPod(busyboxPod("holder", {"c"}, deviceScript(deviceEnvName())));
  EXPECT_FALSE(awaitEventMessage("by-mount", "Failed",
                                 "the container mounts /dev, which holds device node", 60s)
                   .empty())
      << "a container without a claim mounted /dev";
  EXPECT_FALSE(podRunning("by-mount"));
  awaitRunningWithDevice("holder", gpu, 120s);
  deletePod("holder");
  ASSERT_TRUE(eventually(
      [&] {
        const json d = getDevice(gpu);
        return d.value("/status/phase"_json_pointer, "") == "Available" &&
               d.value("/status/claimRef"_json_pointer, json()).is_null();
      },
      90s))
      << gpu << " was not freed once its holder was gone";

  const std::string kept = env_->value("NODE_AGENT_STATE_DIR") + "/last-node-file.yaml";
  ASSERT_TRUE(std::filesystem::remove(kept)) << kept;
  ASSERT_NO_FATAL_FAILURE(restartAgent());
  // The free device is taken out of offer, since the agent would refuse it.
  EXPECT_TRUE(eventually(
      [&] {
        const json d = getDevice(gpu);
        return d.value("/status/phase"_json_pointer, "") == "Pending" &&
               d.value("/status/reason"_json_pointer, "") == "NoNodeFile";
      },
      60s))
      << gpu << " stayed offered while the agent knew no device: " << getDevice(gpu).dump();
  mountingDev("by-mount-2");
  createClaim("c2");
  createPod(busyboxPod("holder-2", {"c2"}, deviceScript(deviceEnvName())));
  EXPECT_FALSE(
      awaitEventMessage("by-mount-2", "Failed", "the node agent has no node file in force", 60s)
          .empty())
      << "a container without a claim mounted /dev while the agent knew no device";
  EXPECT_FALSE(podRunning("by-mount-2"));
  // Tried and found no device, rather than not tried yet.
  auto unschedulable = [&] {
    const json scheduled = conditionOf(getPod("holder-2").value_or(json::object()), "PodScheduled");
    return scheduled.value("status", "") == "False" &&
           scheduled.value("reason", "") == "Unschedulable";
  };
  EXPECT_TRUE(eventually(unschedulable, 60s)) << getPod("holder-2").value_or(json()).dump();
  EXPECT_EQ(getPod("holder-2").value_or(json::object()).value("/spec/nodeName"_json_pointer, ""),
            "")
      << "holder-2 was placed on a device the agent would not give";

  ASSERT_TRUE(replace(path, good.str()));
  awaitRunningWithDevice("holder-2", gpu, 180s);

  // The file deleted where no copy was kept (an agent upgraded from a release that kept none):
  // the published device shows the node had a file, so the agent fails closed, and no
  // container without a claim reaches the device holder-2 runs with (held, so still Bound).
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(kept); }, 30s)) << kept;
  ASSERT_TRUE(std::filesystem::remove(path)) << path;
  ASSERT_TRUE(std::filesystem::remove(kept)) << kept;
  ASSERT_NO_FATAL_FAILURE(restartAgent());
  mountingDev("by-mount-3");
  EXPECT_FALSE(
      awaitEventMessage("by-mount-3", "Failed", "the node agent has no node file in force", 60s)
          .empty())
      << "a container without a claim mounted /dev while the node file was gone";
  EXPECT_FALSE(podRunning("by-mount-3"));
  EXPECT_TRUE(podRunning("holder-2"));
}

// The node agent's one process, SIGSTOPped from construction until resume() or the end of the
// scope, so a failed assertion never leaves it stopped for the later tests.
class AgentStall {
 public:
  explicit AgentStall(pid_t pid) : pid_(pid), since_(std::chrono::steady_clock::now()) {
    stopped_ = ::kill(pid_, SIGSTOP) == 0;
  }
  ~AgentStall() { resume(); }
  AgentStall(const AgentStall&) = delete;
  AgentStall& operator=(const AgentStall&) = delete;

  bool stopped() const { return stopped_; }
  std::chrono::steady_clock::time_point since() const { return since_; }
  void resume() {
    if (stopped_) {
      ::kill(pid_, SIGCONT);
      stopped_ = false;
    }
  }

 private:
  const pid_t pid_;
  const std::chrono::steady_clock::time_point since_;
  bool stopped_ = false;
};

// Whether none of these host processes exists any more.
bool allExited(const std::vector<pid_t>& pids) {
  return std::none_of(pids.begin(), pids.end(), [](pid_t p) {
    return std::filesystem::exists("/proc/" + std::to_string(p));
  });
}

// What became of a device pod's container created while the agent was stalled.
enum class StalledStart {
  kPending,  // neither yet
  // Running: containerd consulted the agent for this very creation, gave up after its request
  // timeout and let it through, without its device.
  kSlipped,
  // Refused by the default validator: containerd had already dropped the agent (it missed an
  // earlier request), so the plugin the pod requires was not registered.
  kRefused,
};

StalledStart stalledStartOf(const json& pod) {
  if (pod.contains("/status/containerStatuses/0/state/running"_json_pointer)) {
    return StalledStart::kSlipped;
  }
  const std::string reason =
      pod.value("/status/containerStatuses/0/state/waiting/reason"_json_pointer, std::string());
  const std::string message =
      pod.value("/status/containerStatuses/0/state/waiting/message"_json_pointer, std::string());
  if (reason == "CreateContainerError" && message.find("required plugin") != std::string::npos) {
    return StalledStart::kRefused;
  }
  return StalledStart::kPending;
}

pid_t NodeAgentTest::agentPid() {
  const std::vector<json> agents = componentPods("extended-resource-node-agent", node());
  if (agents.size() != 1) {
    ADD_FAILURE() << "expected one node agent pod on " << node() << ", not " << agents.size();
    return 0;
  }
  const std::vector<pid_t> agent = processesOf(containerIdOf(agents[0]));
  if (agent.size() != 1) {
    ADD_FAILURE() << "the agent's container should run one process, not " << agent.size();
    return 0;
  }
  return agent[0];
}

// Every container's creation, stop and removal on the node is a request to the agent; the first
// one a stalled agent misses makes containerd drop it. A test that needs its own container's
// creation to be the one missed starts from a node where no pod is starting or stopping.
bool NodeAgentTest::awaitNodeQuiet() {
  return eventually(
      [&] {
        json pods = kubectlJson("get pods -A");
        if (pods.is_discarded()) {
          return false;
        }
        for (const auto& p : pods["items"]) {
          const std::string phase = p.value("/status/phase"_json_pointer, std::string());
          if (p.contains("/metadata/deletionTimestamp"_json_pointer) || phase == "Pending") {
            return false;
          }
        }
        return true;
      },
      90s);
}

void NodeAgentTest::awaitRunningWithDevice(const std::string& pod, const std::string& device,
                                           std::chrono::seconds bound) {
  std::string out;
  ASSERT_TRUE(eventually(
      [&] {
        return podRunning(pod) &&
               (out = logs(pod)).find("ids=" + device + "-id\n") != std::string::npos;
      },
      bound))
      << pod << " should run with its device: " << podPhase(pod) << "\n"
      << out;
  EXPECT_NE(out.find("node=" + containerDeviceNode(device) + "\n"), std::string::npos) << out;
}

std::string stallScript(const std::string& envName) {
  return "echo \"ids=$" + envName +
         "\"; for f in /dev/ker-*; do [ -e \"$f\" ] && echo \"node=$f\"; done; exec sleep 3600";
}

// The agent stalls (SIGSTOP) while a device pod's container is created: containerd gives up on
// it after its NRI request timeout (2 s) and starts the container without its device, which
// neither NRI nor its default validator can prevent. Once the agent runs again it stops that
// container at once, without waiting for anything else to happen on the node, and the kubelet
// creates it again, this time with its device.
TEST_F(NodeAgentTest, AContainerStartedWhileTheAgentWasStalledIsStoppedAndComesBackWithIt) {
  // The bound this test holds the agent to, from running again to the container stopped.
  constexpr auto kStopBound = 5s;
  // Well past containerd's timeout, and below the 20 s after which the DaemonSet's liveness
  // probe (three failures, ten seconds apart) may restart the agent.
  constexpr auto kStall = 10s;
  constexpr int kAttempts = 3;
  const std::string dev = uniqueName("gpu");
  createDevice(dev);
  createClaim("c");
  auto seconds = [](auto d) { return std::chrono::duration<double>(d).count(); };

  // Another container's event can reach the stalled agent first (the kubelet removes dead
  // containers on its own schedule); then this pod's container is refused instead, which is
  // the other correct outcome, checked and tried again.
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    ASSERT_TRUE(awaitNodeQuiet()) << "pods on the node kept starting or stopping";
    const pid_t pid = agentPid();
    ASSERT_NE(pid, 0);
    AgentStall stall(pid);
    ASSERT_TRUE(stall.stopped());
    const std::string pod = "stalled-" + std::to_string(attempt);
    createPod(busyboxPod(pod, {"c"}, stallScript(deviceEnvName())));
    StalledStart start = StalledStart::kPending;
    json p;
    while (start == StalledStart::kPending &&
           std::chrono::steady_clock::now() < stall.since() + kStall) {
      if (auto got = getPod(pod)) {
        p = *got;
        start = stalledStartOf(p);
      }
      std::this_thread::sleep_for(100ms);
    }
    ASSERT_NE(start, StalledStart::kPending)
        << "the container neither started nor was refused while the agent was stalled: "
        << p.dump();
    if (start == StalledStart::kRefused) {
      std::cout << "[measured] attempt " << attempt
                << ": refused (containerd had dropped the agent already)" << std::endl;
      stall.resume();
      ASSERT_NO_FATAL_FAILURE(awaitRunningWithDevice(pod, dev, 90s));
      EXPECT_EQ(getPod(pod)->value("/status/containerStatuses/0/restartCount"_json_pointer, -1), 0);
      deletePod(pod, 0);
      ASSERT_TRUE(eventually([&] { return !getPod(pod); }, 60s));
      continue;
    }

    const std::string first = containerIdOf(p);
    std::string out;
    ASSERT_TRUE(eventually([&] { return !(out = logs(pod)).empty(); }, 5s));
    ASSERT_NE(out.find("ids=\n"), std::string::npos) << "it started without its device:\n" << out;
    const std::vector<pid_t> slipped = processesOf(first);
    ASSERT_FALSE(slipped.empty());
    std::this_thread::sleep_until(stall.since() + kStall);

    const auto resumed = std::chrono::steady_clock::now();
    stall.resume();
    auto gone = [&] { return allExited(slipped); };
    while (!gone() && std::chrono::steady_clock::now() - resumed < 2 * kStopBound) {
      std::this_thread::sleep_for(20ms);
    }
    const auto stopped = std::chrono::steady_clock::now();
    std::cout << "[measured] agent stalled " << seconds(resumed - stall.since())
              << " s; container stopped " << seconds(stopped - resumed)
              << " s after the agent ran again" << std::endl;
    ASSERT_TRUE(gone()) << "the container without its device still runs "
                        << seconds(stopped - resumed) << " s after the agent ran again";
    EXPECT_LE(stopped - resumed, kStopBound);

    // The kubelet creates it again, through the agent: this time with its device.
    ASSERT_TRUE(eventually(
        [&] {
          auto again = getPod(pod);
          return again && containerIdOf(*again) != first;
        },
        60s));
    ASSERT_NO_FATAL_FAILURE(awaitRunningWithDevice(pod, dev, 60s));
    std::cout << "[measured] running with its device "
              << seconds(std::chrono::steady_clock::now() - resumed)
              << " s after the agent ran again" << std::endl;
    json ran = *getPod(pod);
    EXPECT_EQ(ran.value("/status/containerStatuses/0/restartCount"_json_pointer, -1), 1);
    EXPECT_EQ(
        ran.value("/status/containerStatuses/0/lastState/terminated/exitCode"_json_pointer, 0),
        137);
    return;
  }
  FAIL() << "each of " << kAttempts << " attempts was refused rather than let through";
}

// A pod naming no claims does not require the agent, so while it stalls the pod's container
// starts unanswered, here with the device variable its spec sets (which a runtime such as
// NVIDIA's turns into every device). Once the agent runs again it stops the container, and the
// kubelet's next creation goes through the agent, which refuses it.
TEST_F(NodeAgentTest, AClaimlessContainerThatSlippedPastTheStalledAgentIsStopped) {
  constexpr auto kStopBound = 5s;
  constexpr auto kStall = 10s;
  createDevice(uniqueName("gpu"));
  ASSERT_TRUE(awaitNodeQuiet()) << "pods on the node kept starting or stopping";
  const pid_t pid = agentPid();
  ASSERT_NE(pid, 0);
  AgentStall stall(pid);
  ASSERT_TRUE(stall.stopped());
  json sneaky = busyboxPod("sneaky", {}, "echo \"ids=$" + deviceEnvName() + "\"; exec sleep 3600");
  sneaky["spec"]["containers"][0]["env"].push_back({{"name", deviceEnvName()}, {"value", "all"}});
  createPod(sneaky);
  json p;
  ASSERT_TRUE(eventually(
      [&] {
        auto got = getPod("sneaky");
        return got && (p = *got).contains("/status/containerStatuses/0/state/running"_json_pointer);
      },
      kStall))
      << "the claimless container did not start while the agent was stalled: " << p.dump();
  const std::string first = containerIdOf(p);
  const std::vector<pid_t> slipped = processesOf(first);
  ASSERT_FALSE(slipped.empty());
  std::string out;
  ASSERT_TRUE(eventually([&] { return !(out = logs("sneaky")).empty(); }, 5s));
  ASSERT_NE(out.find("ids=all"), std::string::npos) << "it started unanswered:\n" << out;

  stall.resume();
  auto gone = [&] { return allExited(slipped); };
  ASSERT_TRUE(eventually(gone, kStopBound, 20ms))
      << "the container that slipped past the stalled agent still runs";
  // The kubelet creates it again, through the agent this time: refused.
  std::string why;
  ASSERT_TRUE(eventually(
      [&] {
        auto again = getPod("sneaky");
        why = again ? again->value("/status/containerStatuses/0/state/waiting/message"_json_pointer,
                                   std::string())
                    : "";
        return why.find("sets " + deviceEnvName() + " itself") != std::string::npos;
      },
      60s))
      << "not refused by the agent: " << getPod("sneaky")->dump();
  const json last = *getPod("sneaky");
  EXPECT_EQ(last.value("/status/containerStatuses/0/lastState/terminated/exitCode"_json_pointer, 0),
            137);
  EXPECT_FALSE(last.contains("/status/containerStatuses/0/state/running"_json_pointer));
  deletePod("sneaky", 0);
}

// Once containerd has dropped the stalled agent (here: it missed a plain pod's container
// creation), the default validator refuses every container of a device pod, since the pod
// names the agent's plugin as required. The container never runs without its device: it waits
// and starts, with it, once the agent is back.
TEST_F(NodeAgentTest, ADevicePodCreatedAfterContainerdDroppedTheStalledAgentWaitsForIt) {
  constexpr auto kStall = 10s;
  const std::string dev = uniqueName("gpu");
  createDevice(dev);
  createClaim("c");
  ASSERT_TRUE(awaitNodeQuiet()) << "pods on the node kept starting or stopping";
  const pid_t pid = agentPid();
  ASSERT_NE(pid, 0);
  AgentStall stall(pid);
  ASSERT_TRUE(stall.stopped());

  createPod(busyboxPod("plain", {}, "exec sleep 3600"));
  ASSERT_TRUE(eventually([&] { return podRunning("plain"); }, kStall - 2s))
      << "a pod without devices starts once containerd gives up on the agent: "
      << podPhase("plain");
  createPod(busyboxPod("refused", {"c"}, stallScript(deviceEnvName())));
  json p;
  ASSERT_TRUE(eventually(
      [&] {
        auto got = getPod("refused");
        return got && stalledStartOf(p = *got) == StalledStart::kRefused;
      },
      std::chrono::duration_cast<std::chrono::milliseconds>(stall.since() + kStall -
                                                            std::chrono::steady_clock::now())))
      << p.dump();
  EXPECT_FALSE(p.contains("/status/containerStatuses/0/state/running"_json_pointer));

  stall.resume();
  ASSERT_NO_FATAL_FAILURE(awaitRunningWithDevice("refused", dev, 90s));
  EXPECT_EQ(getPod("refused")->value("/status/containerStatuses/0/restartCount"_json_pointer, -1),
            0)
      << "it never ran before the agent was back";
}

// The agent cannot reach the API server (its packets to it dropped, so each read waits for its
// timeout) when a pod naming two claims it has not seen bound is created on its node. Two reads
// of a second each would add up past containerd's request timeout (2 s), and containerd would
// start the container without its devices. The reads share one budget instead: the agent
// refuses in time, and the container starts, with its devices, once the API is reachable.
TEST_F(NodeAgentTest, AnAgentCutOffFromTheApiServerRefusesInTimeInsteadOfLettingAContainerThrough) {
  const std::string first = uniqueName("gpu");
  const std::string second = uniqueName("gpu");
  createDevice(first);
  createDevice(second);
  createClaim("c1");
  createClaim("c2");
  ASSERT_TRUE(awaitNodeQuiet()) << "pods on the node kept starting or stopping";
  const std::vector<json> agents = componentPods("extended-resource-node-agent", node());
  ASSERT_EQ(agents.size(), 1u);
  const std::string ip = agents[0].value("/status/podIP"_json_pointer, std::string());
  ASSERT_FALSE(ip.empty());
  ApiServerCutOff cut(*env_, ip);
  ASSERT_TRUE(cut.active()) << "could not drop the agent's packets to kube-apiserver";

  createPod(busyboxPod("cut-off", {"c1", "c2"}, stallScript(deviceEnvName())));
  json p;
  bool refused = false;
  ASSERT_TRUE(eventually(
      [&] {
        auto got = getPod("cut-off");
        if (!got) {
          return false;
        }
        p = *got;
        refused =
            p.value("/status/containerStatuses/0/state/waiting/message"_json_pointer, std::string())
                .find("extended-resource-node-agent: ") != std::string::npos;
        return refused || p.contains("/status/containerStatuses/0/state/running"_json_pointer);
      },
      60s))
      << "the container was neither refused nor started: " << p.dump();
  ASSERT_TRUE(refused) << "it started while the agent could not read its claims:\n"
                       << logs("cut-off") << p.dump();

  ASSERT_TRUE(cut.restore()) << "could not let the agent's packets through again";
  std::string out;
  ASSERT_TRUE(eventually(
      [&] {
        out = logs("cut-off");
        return podRunning("cut-off") && out.find(first + "-id") != std::string::npos &&
               out.find(second + "-id") != std::string::npos;
      },
      120s))
      << "it should run with both devices once the agent reads again: " << podPhase("cut-off")
      << "\n"
      << out;
  EXPECT_EQ(getPod("cut-off")->value("/status/containerStatuses/0/restartCount"_json_pointer, -1),
            0)
      << "it never ran before the agent could read its claims";
}

TEST_F(NodeAgentTest, ChangingADevicesPropertiesInTheNodeFileUpdatesItsExtendedResource) {
  createDevice(uniqueName("gpu"));
  const std::string device = devices_[0];
  editNodeFile([&](json& devices) {
    for (auto& d : devices) {
      if (d.value("name", "") == device) {
        d["properties"]["memory"] = "24Gi";
      }
    }
  });
  json d;
  EXPECT_TRUE(eventually(
      [&] {
        return (d = getDevice(device))
                   .value("/spec/properties/memory"_json_pointer, std::string()) == "24Gi";
      },
      60s))
      << d.dump();
  EXPECT_EQ(phaseOf(d), "Available");
}

// Node lifecycle: a node file that lists a device another node already published. The agent
// must not take the other node's object over (relabel, repin or delete it); it says so.
TEST_F(NodeAgentTest, ADeviceNameAnotherNodePublishedIsNeverTakenOver) {
  const std::string name = uniqueName("taken");
  json other = itest::deviceObject(name, "another-node", resource_, {{"type", "k80"}});
  other["metadata"]["labels"] = {{kNodeLabel, "another-node"},
                                 {agent::kManagedByLabel, agent::kManagedByValue}};
  const json created = api_->create(resources::kExtendedResources, "", other);
  addDeviceToNodeFile(name, "p100");

  const json event = awaitDeviceEvent(name, "DeviceNameTaken", 60s);
  EXPECT_FALSE(event.is_null()) << "no DeviceNameTaken event for " << name;
  if (!event.is_null()) {
    const std::string message = event.value("message", "");
    EXPECT_NE(message.find("node another-node's device"), std::string::npos) << message;
  }
  // Several of the agent's sync periods later, the other node's object is as it was.
  std::this_thread::sleep_for(3s);
  const json now = getDevice(name);
  EXPECT_EQ(now["metadata"]["labels"], created["metadata"]["labels"]) << now.dump();
  EXPECT_EQ(now["spec"], created["spec"]) << now.dump();
  EXPECT_FALSE(now.contains("/metadata/deletionTimestamp"_json_pointer)) << now.dump();

  // Out of the node file first, or the agent would publish its own device once the name is free.
  removeDeviceFromNodeFile(name);
  api_->remove(resources::kExtendedResources, "", name);
}

// The lines of a metrics page that are series of `metric` and name this namespace.
std::vector<std::string> seriesOf(const std::string& page, const std::string& metric,
                                  const std::string& ns) {
  std::vector<std::string> out;
  std::istringstream lines(page);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(metric + "{") &&
        line.find("namespace=\"" + ns + "\"") != std::string::npos) {
      out.push_back(line);
    }
  }
  return out;
}

// What a Prometheus joins a vendor exporter's per-device series with: one series per container
// and device, with the device's ID, there while the container runs and gone once it stopped.
TEST_F(NodeAgentTest, EachContainersDevicesAreExportedWhileItRuns) {
  ASSERT_NO_FATAL_FAILURE(runTwoPodsWithADeviceEach());
  auto expected = [&](const std::string& pod, const std::string& claim) {
    const std::string device = getClaim(claim)["status"]["extendedResourceNames"][0];
    const std::string id = getDevice(device)["spec"]["deviceID"];
    return std::string(agent::kAttributionMetric) + "{node=\"" + node() + "\",namespace=\"" + ns_ +
           "\",pod=\"" + pod + "\",container=\"app\",device=\"" + device + "\",device_id=\"" + id +
           "\",resource=\"" + resource_ + "\"} 1";
  };
  const std::vector<std::string> both = {expected("pa", "ca"), expected("pb", "cb")};
  std::string page;
  EXPECT_TRUE(eventually(
      [&] {
        page = scrapeMetrics("extended-resource-node-agent", 8082);
        return seriesOf(page, agent::kAttributionMetric, ns_) == both;
      },
      30s))
      << page;

  deletePod("pa");
  ASSERT_TRUE(eventually([&] { return !getPod("pa"); }, 60s));
  EXPECT_TRUE(eventually(
      [&] {
        page = scrapeMetrics("extended-resource-node-agent", 8082);
        return seriesOf(page, agent::kAttributionMetric, ns_) == std::vector<std::string>{both[1]};
      },
      30s))
      << page;
}

}  // namespace
}  // namespace ker::e2e

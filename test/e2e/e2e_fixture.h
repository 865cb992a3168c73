#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "test/integration/test_env.h"

namespace ker::e2e {

using namespace std::chrono_literals;
using itest::eventually;
using itest::TestEnv;
using itest::uniqueName;
using nlohmann::json;

// The local test image (busybox-static) that test/images/build-images.sh builds and
// launch.sh start-node loads: pods never pull, so nothing is fetched from a registry.
inline constexpr const char* kTestImage = "localhost/ker-busybox:1";

// The condition of `type` among an object's status.conditions; an empty object when it has none.
inline json conditionOf(const json& object, const std::string& type) {
  for (const auto& c : object.value("/status/conditions"_json_pointer, json::array())) {
    if (c.value("type", "") == type) {
      return c;
    }
  }
  return json::object();
}

// A test on the cluster test/run-e2e.sh brings up: two real nodes (kubelet, containerd,
// kube-proxy each; the second tainted with kExtraNodeTaint, so that only pods tolerating it go
// there) and deploy/ running as pods from the image just built. Each test works in a namespace
// of its own with devices of a resource name of its own, so tests never compete for devices.
class E2eTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // The first real node's name: the node every test but the multi-node ones uses.
  const std::string& node() const { return node_; }
  // Every real node, the first one first. The further ones carry kExtraNodeTaint.
  std::vector<std::string> nodes() const;
  // KEY of a node's env file (NODE_AGENT_FILE, NODE_IP, ...; "" is the first node).
  std::string nodeValue(const std::string& node, const std::string& key) const;

  // A device of this test's resource on a real node ("": the first), as an administrator adds
  // one: an entry in that node agent's node file, with a stand-in device node (/dev/null's
  // numbers) at /dev/ker-<name>. Returns once the agent published it and it is Available.
  void createDevice(const std::string& name, const std::string& type = "k80",
                    const std::string& node = "");
  // Waits up to 60 s for the agent to publish the device and for it to be Available.
  ::testing::AssertionResult awaitPublished(const std::string& name);
  // The same without waiting: the node file entry (type=TYPE) and its stand-in device node,
  // both removed at TearDown.
  void addDeviceToNodeFile(const std::string& name, const std::string& type = "k80",
                           const std::string& node = "");
  // Drops the device from the node files it was added to (the agents withdraw it).
  void removeDeviceFromNodeFile(const std::string& name);
  // Drops the device's entry from one node's file and returns it (null when it had none), to
  // be put back as it was with editNodeFile.
  json takeNodeFileEntry(const std::string& name, const std::string& node = "");
  // Reads a node's node file, lets edit change its device list, and writes it back atomically.
  void editNodeFile(const std::function<void(json& devices)>& edit, const std::string& node = "");
  // The same for the whole file (its discover sources, say).
  void editWholeNodeFile(const std::function<void(json& file)>& edit, const std::string& node = "");
  // The device node's path as a node's agent sees it on "the host" (by default the node the
  // device was last added on), and in a container.
  std::string hostDeviceNode(const std::string& name) const;
  std::string hostDeviceNode(const std::string& name, const std::string& node) const;
  static std::string containerDeviceNode(const std::string& name) { return "/dev/ker-" + name; }
  // The variable the agent lists this test's device IDs in.
  std::string deviceEnvName() const;
  void createClaim(const std::string& name, int count = 1);
  // A busybox pod scheduled by the extended-resource-scheduler, running `script` under sh.
  // The env var ALLOCATION holds the pod's allocation annotation (downward API).
  json busyboxPod(const std::string& name, const std::vector<std::string>& claims,
                  const std::string& script, int gracePeriodSeconds = 1,
                  const std::string& restartPolicy = "Always") const;
  std::string createPod(const json& pod);

  std::optional<json> getPod(const std::string& name);
  std::string podPhase(const std::string& name);
  json getClaim(const std::string& name);
  // The devices the claim's status allocates.
  std::vector<std::string> allocated(const std::string& claim);
  json getDevice(const std::string& name);
  bool podRunning(const std::string& name) { return podPhase(name) == "Running"; }
  // `kubectl logs` of the pod's (only) container; empty when it fails.
  std::string logs(const std::string& name);
  // The messages of the pod's events with this reason.
  std::vector<std::string> eventMessages(const std::string& pod, const std::string& reason);
  // The first message of the pod's events with this reason that contains `part`, once one is
  // posted within `bound`; "" when none was.
  std::string awaitEventMessage(const std::string& pod, const std::string& reason,
                                const std::string& part, std::chrono::milliseconds bound);
  // The first event with this reason about device NAME (a cluster-scoped object: its events are
  // in "default"), once one is posted within `bound`; null when none was.
  json awaitDeviceEvent(const std::string& name, const std::string& reason,
                        std::chrono::milliseconds bound);
  void deletePod(const std::string& name, std::optional<int64_t> gracePeriodSeconds = {});
  // Deletes the pods at once, with their grace period, and waits until the API has none of them:
  // the kubelet removes such a pod only once it has stopped working on it, so it then makes no
  // more creation attempts, each of which has containerd create a missing hostPath source as a
  // folder on the machine (a deletion without grace removes the pod while one may be under way).
  // False when one is still there after a minute.
  bool deletePodsAndAwaitGone(const std::vector<std::string>& names);
  // `kubectl ARGS -o json`, parsed; discarded (is_discarded()) when kubectl fails.
  json kubectlJson(const std::string& args);
  // GET /metrics of the kube-system pod labelled app.kubernetes.io/name=APP, on its pod IP and
  // PORT, from a pod of this test's namespace that the NetworkPolicies let scrape (as Prometheus
  // reaches it). Empty when it cannot be fetched.
  std::string scrapeMetrics(const std::string& app, int port);
  // The kube-system pods of deploy/'s component APP (label app.kubernetes.io/name) that are not
  // terminating, only those on NODE when one is given.
  std::vector<json> componentPods(const std::string& app, const std::string& node = "");
  // Whether the kube-system Deployment has every replica ready; the object in *seen.
  bool deploymentReady(const std::string& name, json* seen = nullptr);

  TestEnv* env_ = nullptr;
  KubeClient* api_ = nullptr;
  std::string ns_;
  std::string resource_;  // this test's rawResourceName
  std::vector<std::string> devices_;

 private:
  std::string node_;
  // (device, node) for each node file entry added: removed, with its stand-in, at TearDown.
  std::vector<std::pair<std::string, std::string>> deviceFiles_;
};

// Runs `undo` when the scope ends, however it ends (a failed ASSERT returns early): what a
// test changed in the shared cluster is put back for the tests after it.
class OnScopeExit {
 public:
  explicit OnScopeExit(std::function<void()> undo) : undo_(std::move(undo)) {}
  ~OnScopeExit() { undo_(); }
  OnScopeExit(const OnScopeExit&) = delete;
  OnScopeExit& operator=(const OnScopeExit&) = delete;

 private:
  std::function<void()> undo_;
};

// Drops, while it lives, what a pod (by its IP) and kube-apiserver send each other: that pod's
// network to the control plane failing, so its requests wait for their timeouts and its watches
// hear nothing. Both directions, since a watch only receives. The rules are in the host's INPUT
// and OUTPUT chains, where every node's pods reach kube-apiserver (after kube-proxy's DNAT of
// the Service address); the pod's probes are left alone.
class ApiServerCutOff {
 public:
  ApiServerCutOff(const TestEnv& env, const std::string& podIp);
  ~ApiServerCutOff() { restore(); }
  ApiServerCutOff(const ApiServerCutOff&) = delete;
  ApiServerCutOff& operator=(const ApiServerCutOff&) = delete;

  bool active() const { return !inserted_.empty(); }
  // Removes the rules; false when iptables would not.
  bool restore();

 private:
  std::vector<std::string> inserted_;
};

// The taint test/run-e2e.sh gives every node but the first, and a toleration of it.
inline constexpr const char* kExtraNodeTaint = "ker.test/extra-node";
json extraNodeToleration();

// The host's processes whose cgroup path names `id` (a container's ID): the container's
// processes, as containerd's cgroupfs layout places them.
std::vector<pid_t> processesOf(const std::string& id);

// The ID of the first container of a pod, without the "containerd://" prefix.
std::string containerIdOf(const json& pod);

// The cgroup v1 freezer folder of a process ("" when it has none).
std::string freezerOf(pid_t pid);

}  // namespace ker::e2e

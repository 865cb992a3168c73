// The trust boundaries, attacked through the real components with deploy/ and its admission
// policy in force: a claim's owner, a node's stolen agent token and anyone who may bind or
// write pods try to move, free or forge an allocation, and are refused.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <thread>

#include "common/api_error.h"
#include "common/kube_client.h"
#include "common/kube_config.h"
#include "common/resource.h"
#include "e2e_fixture.h"
#include "model/objects.h"

namespace ker::e2e {
namespace {

using TrustTest = E2eTest;

constexpr const char* kAgentServiceAccount = "extended-resource-node-agent";

// Runs `write` and returns the message of the ApiError it throws; "" when it succeeds.
template <class F>
std::string refusal(F&& write) {
  try {
    write();
  } catch (const ApiError& e) {
    return e.what();
  }
  return "";
}

// The kind of the ApiError `write` throws; kOther (with a test failure) when it succeeds.
template <class F>
ApiErrorKind refusalKind(F&& write) {
  try {
    write();
  } catch (const ApiError& e) {
    return e.kind();
  }
  ADD_FAILURE() << "the write was accepted";
  return ApiErrorKind::kOther;
}

// refusal() of a read-modify-write that reads the object again while the API answers that it
// changed in between (a component may write it meanwhile): what counts is the answer to a write
// of the current object. Bounded; the last conflict is returned if they never stop.
template <class F>
std::string refusalOfCurrent(F&& readModifyWrite) {
  std::string why;
  for (int attempt = 0; attempt < 20; ++attempt) {
    try {
      readModifyWrite();
      return "";
    } catch (const ApiError& e) {
      if (!e.isConflict()) {
        return e.what();
      }
      why = e.what();
    }
    std::this_thread::sleep_for(100ms);
  }
  return why;
}

// Prints what the container got and keeps running; exits 3 when started without a device.
std::string deviceScript(const std::string& envName) {
  return "[ -n \"$" + envName + "\" ] || { echo 'started without devices'; exit 3; }; " +
         "echo \"ids=$" + envName + "\"; exec sleep 3600";
}

// A client holding a token of a component's ServiceAccount in kube-system; with `node`, bound to
// that Node, so the token names it, as a DaemonSet pod's own token does.
std::unique_ptr<KubeClient> serviceAccountClient(TestEnv& env, KubeClient& admin,
                                                 const std::string& account,
                                                 const std::string& node = "") {
  std::string args = "create token " + account + " -n kube-system --duration=10m";
  if (!node.empty()) {
    const json n = admin.get(resources::kNodes, "", node);
    args += " --bound-object-kind Node --bound-object-name " + node + " --bound-object-uid " +
            n["metadata"]["uid"].get<std::string>();
  }
  std::string out;
  EXPECT_EQ(env.kubectl(args, &out), 0) << out;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) {
    out.pop_back();
  }
  KubeConfig config = KubeConfig::fromKubeconfigFile(env.kubeconfig());
  config.clientCertData.clear();
  config.clientKeyData.clear();
  config.token = out;
  return std::make_unique<KubeClient>(config);
}

class AgentTokenTest : public TrustTest {
 protected:
  // A token of the node agent's ServiceAccount, as root on a node can take from the agent's pod
  // (`nodeBound`: it names this test's node, as the agent's own Pod-bound token does) or mint
  // with `kubectl create token` (it names no node).
  std::unique_ptr<KubeClient> agentClient(bool nodeBound) {
    return serviceAccountClient(*env_, *api_, kAgentServiceAccount, nodeBound ? node() : "");
  }

  // A device as an agent publishes one: labelled with `labelNode`, pinned to `affinityNode`.
  json deviceOn(const std::string& name, const std::string& labelNode,
                const std::string& affinityNode) {
    return {{"apiVersion", kApiVersion},
            {"kind", "ExtendedResource"},
            {"metadata",
             {{"name", name},
              {"labels",
               {{"extendedresource.io/node", labelNode},
                {"app.kubernetes.io/managed-by", "extended-resource-node-agent"}}}}},
            {"spec",
             {{"rawResourceName", resource_},
              {"deviceID", name + "-id"},
              {"nodeAffinity",
               {{"required",
                 {{"nodeSelectorTerms",
                   {{{"matchFields",
                      {{{"key", "metadata.name"},
                        {"operator", "In"},
                        {"values", {affinityNode}}}}}}}}}}}}}}};
  }

  void TearDown() override {
    for (const auto& name : made_) {
      try {
        api_->patch(resources::kExtendedResources, "", name, PatchType::kMerge,
                    {{"metadata", {{"finalizers", json::array()}}}});
        api_->remove(resources::kExtendedResources, "", name);
      } catch (const ApiError&) {
      }
    }
    TrustTest::TearDown();
  }

  std::vector<std::string> made_;  // devices this test created directly
};

// A claim's owner deletes the claim of a running pod and tries to take the protection finalizer
// off, so that the device would be freed and given to another pod while the first container
// still has it. The admission policy refuses the finalizer write; the device stays with the
// running pod, and the next pod gets it only once the first is gone.
TEST_F(TrustTest, AClaimsOwnerCannotFreeTheDeviceOfItsRunningPod) {
  const std::string gpu = uniqueName("gpu");
  createDevice(gpu);
  createClaim("c");
  createPod(busyboxPod("first", {"c"}, deviceScript(deviceEnvName())));
  ASSERT_TRUE(eventually([&] { return podRunning("first"); }, 120s)) << podPhase("first");
  ASSERT_TRUE(eventually(
      [&] {
        return getClaim("c")["metadata"].value("finalizers", json::array()) ==
               json::array({kClaimProtectionFinalizer});
      },
      30s));

  api_->remove(resources::kExtendedResourceClaims, ns_, "c");
  const json dropFinalizers = {{"metadata", {{"finalizers", json::array()}}}};
  try {
    api_->patch(resources::kExtendedResourceClaims, ns_, "c", PatchType::kMerge, dropFinalizers);
    FAIL() << "the protection finalizer of a Bound claim was taken off by its owner";
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("protection finalizer"), std::string::npos) << e.what();
  }
  // Nor a device's, by anyone but the controller.
  try {
    api_->patch(resources::kExtendedResources, "", gpu, PatchType::kMerge, dropFinalizers);
    FAIL() << "the protection finalizer of a Bound device was taken off";
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("protection finalizer"), std::string::npos) << e.what();
  }

  createClaim("c2");
  createPod(busyboxPod("second", {"c2"}, deviceScript(deviceEnvName())));
  std::this_thread::sleep_for(10s);
  EXPECT_TRUE(podRunning("first"));
  EXPECT_FALSE(podRunning("second"));
  EXPECT_EQ(getDevice(gpu).value("/status/claimRef/name"_json_pointer, std::string()), "c");
  EXPECT_EQ(getDevice(gpu).value("/status/holders/0/name"_json_pointer, std::string()), "first");

  deletePod("first", 1);
  ASSERT_TRUE(eventually([&] { return podRunning("second"); }, 120s)) << podPhase("second");
  EXPECT_EQ(getDevice(gpu).value("/status/claimRef/name"_json_pointer, std::string()), "c2");
}

// A token of the agent's ServiceAccount that names no node (`kubectl create token`) writes no
// device at all.
TEST_F(AgentTokenTest, AnAgentTokenWithoutANodeWritesNoDevice) {
  auto agent = agentClient(false);
  const std::string name = uniqueName("dev");
  made_.push_back(name);
  const std::string why = refusal(
      [&] { agent->create(resources::kExtendedResources, "", deviceOn(name, node(), node())); });
  EXPECT_NE(why.find("must name its node"), std::string::npos) << why;
}

// Root on one node holds that node's agent token: it may publish its own node's devices, and
// nothing of another node's, neither spec nor status, nor relabel one to make it its own.
TEST_F(AgentTokenTest, AnAgentTokenWritesOnlyItsOwnNodesDevices) {
  auto agent = agentClient(true);
  const std::string mine = uniqueName("dev");
  const std::string theirs = uniqueName("dev");
  made_.push_back(mine);
  made_.push_back(theirs);
  // The control: its own node's device, as the agent publishes it, is admitted.
  ASSERT_EQ(refusal([&] {
              agent->create(resources::kExtendedResources, "", deviceOn(mine, node(), node()));
            }),
            "");
  api_->create(resources::kExtendedResources, "",
               deviceOn(theirs, "node-elsewhere", "node-elsewhere"));
  ASSERT_TRUE(eventually(
      [&] { return !getDevice(theirs).value("/status/phase"_json_pointer, std::string()).empty(); },
      30s));

  std::string why = refusalOfCurrent([&] {
    json other = getDevice(theirs);
    other["status"]["phase"] = "Pending";
    agent->updateStatus(resources::kExtendedResources, "", other);
  });
  EXPECT_NE(why.find("only the ExtendedResources of its own node"), std::string::npos) << why;

  // Relabelled as its own, with the update the agent's role grants.
  why = refusalOfCurrent([&] {
    json relabelled = getDevice(theirs);
    relabelled["metadata"]["labels"]["extendedresource.io/node"] = node();
    agent->update(resources::kExtendedResources, "", relabelled);
  });
  EXPECT_NE(why.find("only the ExtendedResources of its own node"), std::string::npos) << why;

  why = refusal([&] { agent->remove(resources::kExtendedResources, "", theirs); });
  EXPECT_NE(why.find("only the ExtendedResources of its own node"), std::string::npos) << why;

  // Labelled its own, but reachable from another node: refused too.
  const std::string pinnedElsewhere = uniqueName("dev");
  made_.push_back(pinnedElsewhere);
  why = refusal([&] {
    agent->create(resources::kExtendedResources, "",
                  deviceOn(pinnedElsewhere, node(), "node-elsewhere"));
  });
  EXPECT_NE(why.find("only the ExtendedResources of its own node"), std::string::npos) << why;
  EXPECT_EQ(getDevice(theirs).value("/metadata/labels/extendedresource.io~1node"_json_pointer,
                                    std::string()),
            "node-elsewhere");
}

// The agent's token may write its node's status (it advertises its classes' devices in the
// capacity): root on one node uses it to advertise devices on another node, to take a core
// resource off its own, or with a token naming no node. Each is refused; the agent's own write is
// the control.
TEST_F(AgentTokenTest, AnAgentTokenChangesOnlyItsOwnNodesExtendedResources) {
  auto agent = agentClient(true);
  const std::string name = "agent-token-" + uniqueName("t") + ".example.com/gpu";
  const json advertise = {
      {"status", {{"capacity", {{name, "3"}}}, {"allocatable", {{name, "3"}}}}}};
  struct Remove {
    KubeClient& api;
    const std::string node;
    const std::string name;
    ~Remove() {
      try {
        api.patch(
            resources::kNodes, "", node, PatchType::kMerge,
            {{"status", {{"capacity", {{name, nullptr}}}, {"allocatable", {{name, nullptr}}}}}},
            "status");
      } catch (const ApiError&) {
      }
    }
  } remove{*api_, node(), name};
  ASSERT_EQ(refusal([&] {
              agent->patch(resources::kNodes, "", node(), PatchType::kMerge, advertise, "status");
            }),
            "");

  const std::string elsewhere = uniqueName("node-elsewhere");
  api_->create(resources::kNodes, "",
               {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", elsewhere}}}});
  struct RemoveNode {
    KubeClient& api;
    const std::string node;
    ~RemoveNode() {
      try {
        api.remove(resources::kNodes, "", node);
      } catch (const ApiError&) {
      }
    }
  } removeNode{*api_, elsewhere};
  std::string why = refusal([&] {
    agent->patch(resources::kNodes, "", elsewhere, PatchType::kMerge, advertise, "status");
  });
  EXPECT_NE(why.find("status of its own node only"), std::string::npos) << why;

  why = refusal([&] {
    agent->patch(resources::kNodes, "", node(), PatchType::kMerge,
                 {{"status", {{"allocatable", {{"cpu", "0"}}}}}}, "status");
  });
  EXPECT_NE(why.find("only extended resources"), std::string::npos) << why;

  why = refusal([&] {
    agentClient(false)->patch(resources::kNodes, "", node(), PatchType::kMerge, advertise,
                              "status");
  });
  EXPECT_NE(why.find("status of its own node only"), std::string::npos) << why;
}

// Whoever may bind pods (another scheduler, say) or write pods/status cannot set the allocation
// or the required-plugins annotations that way either.
TEST_F(TrustTest, NeitherABindingNorAPodStatusWriteCarriesAnAllocation) {
  json pod = busyboxPod("bystander", {}, "sleep 3600");
  pod["spec"]["schedulerName"] = "nobody";  // nothing binds it but this test
  createPod(pod);
  const std::string uid = getPod("bystander")->value("/metadata/uid"_json_pointer, std::string());
  std::string why = refusal([&] {
    api_->bindPod(ns_, "bystander", uid, node(), {{kAllocationAnnotation, R"({"c":[]})"}});
  });
  EXPECT_NE(why.find("only the extended-resource scheduler's Binding"), std::string::npos) << why;
  why = refusal([&] {
    api_->bindPod(ns_, "bystander", uid, node(), {{kRequiredPluginsAnnotation, "[]"}});
  });
  EXPECT_NE(why.find("only the extended-resource scheduler's Binding"), std::string::npos) << why;

  why = refusalOfCurrent([&] {
    json status = *getPod("bystander");
    status["metadata"]["annotations"][kAllocationAnnotation] = R"({"c":[]})";
    api_->updateStatus(resources::kPods, ns_, status);
  });
  EXPECT_NE(why.find("cannot be added, changed or removed"), std::string::npos) << why;
  EXPECT_FALSE(getPod("bystander")->contains("/spec/nodeName"_json_pointer));
}

// kube-scheduler and the extender share a pod but not an identity: a token of kube-scheduler's
// ServiceAccount (a compromised kube-scheduler's) writes no claim or device status and binds
// no pod with an allocation, while the extender, running as its own ServiceAccount, still
// allocates.
TEST_F(TrustTest, KubeSchedulersTokenCannotAllocate) {
  auto scheduler = serviceAccountClient(*env_, *api_, "extended-resource-scheduler");
  const std::string gpu = uniqueName("gpu");
  createDevice(gpu);
  createClaim("c");

  // Authorization comes before storage, so these are refused before any conflict could be.
  json device = getDevice(gpu);
  device["status"]["phase"] = "Bound";
  device["status"]["claimRef"] = {{"namespace", ns_}, {"name", "c"}};
  EXPECT_EQ(
      refusalKind([&] { scheduler->updateStatus(resources::kExtendedResources, "", device); }),
      ApiErrorKind::kForbidden);
  json claim = getClaim("c");
  claim["status"]["phase"] = "Bound";
  EXPECT_EQ(
      refusalKind([&] { scheduler->updateStatus(resources::kExtendedResourceClaims, ns_, claim); }),
      ApiErrorKind::kForbidden);

  json bystander = busyboxPod("bystander", {}, "sleep 3600");
  bystander["spec"]["schedulerName"] = "nobody";
  createPod(bystander);
  const std::string uid = getPod("bystander")->value("/metadata/uid"_json_pointer, std::string());
  const std::string why = refusal([&] {
    scheduler->bindPod(ns_, "bystander", uid, node(), {{kAllocationAnnotation, R"({"c":[]})"}});
  });
  EXPECT_NE(why.find("only the extended-resource scheduler's Binding"), std::string::npos) << why;

  createPod(busyboxPod("holder", {"c"}, deviceScript(deviceEnvName())));
  ASSERT_TRUE(eventually([&] { return podRunning("holder"); }, 120s)) << podPhase("holder");
  EXPECT_NE(logs("holder").find("ids=" + gpu + "-id"), std::string::npos) << logs("holder");
}

// A container-scoped required-plugins list written by the pod's author would take precedence
// over the pod's in NRI: the bind adds the agent to it, and once the pod has devices nobody
// changes it.
TEST_F(TrustTest, AContainerCannotOptOutOfTheNodeAgent) {
  const std::string gpu = uniqueName("gpu");
  createDevice(gpu);
  createClaim("c");
  const std::string key = std::string(kRequiredPluginsContainerPrefix) + "app";
  json pod = busyboxPod("optout", {"c"}, deviceScript(deviceEnvName()));
  pod["metadata"]["annotations"][key] = "[]";
  createPod(pod);
  ASSERT_TRUE(eventually([&] { return podRunning("optout"); }, 120s)) << podPhase("optout");
  json bound = *getPod("optout");
  const std::string list = bound["metadata"]["annotations"].value(key, std::string());
  EXPECT_NE(list.find(kNodeAgentPluginName), std::string::npos) << list;
  EXPECT_NE(logs("optout").find("ids=" + gpu + "-id"), std::string::npos) << logs("optout");

  const std::string why = refusal([&] {
    api_->patch(resources::kPods, ns_, "optout", PatchType::kMerge,
                {{"metadata", {{"annotations", {{key, "[]"}}}}}});
  });
  EXPECT_NE(why.find("required-plugins.noderesource.dev annotations"), std::string::npos) << why;
}

// The controller's token changes nothing of a pod but its own two annotations: not the
// allocation, not the required plugins, not the labels.
TEST_F(TrustTest, TheControllersTokenChangesOnlyItsOwnPodAnnotations) {
  auto controller = serviceAccountClient(*env_, *api_, "extended-resource-controller");
  json pod = busyboxPod("target", {}, "sleep 3600");
  pod["spec"]["schedulerName"] = "nobody";
  createPod(pod);
  EXPECT_EQ(
      refusal([&] {
        controller->patch(
            resources::kPods, ns_, "target", PatchType::kMerge,
            {{"metadata",
              {{"annotations", {{"extendedresource.io/requeue-at", "2026-01-01T00:00:00Z"}}}}}});
      }),
      "")
      << "the nudge is the controller's to write";
  for (const json& patch :
       {json{{"metadata", {{"annotations", {{kAllocationAnnotation, R"({"c":[]})"}}}}}},
        json{{"metadata", {{"annotations", {{kRequiredPluginsAnnotation, "[]"}}}}}},
        json{{"metadata", {{"labels", {{"app", "moved"}}}}}}}) {
    const std::string why = refusal(
        [&] { controller->patch(resources::kPods, ns_, "target", PatchType::kMerge, patch); });
    EXPECT_NE(why.find("changes only its own annotations"), std::string::npos)
        << patch.dump() << ": " << why;
  }
}

// A pod deleted with --grace-period=0 --force is gone from the API while its kubelet may still be
// stopping its container (here: its processes frozen, so they outlive the kill). Its claim is
// released and the device bound to the next pod at once; the node agent refuses the next pod's
// container until the runtime reports the first one stopped.
TEST_F(TrustTest, AForceDeletedPodsDeviceReachesTheNextPodOnlyOnceItsContainerStopped) {
  const std::string gpu = uniqueName("gpu");
  createDevice(gpu);
  createClaim("c1");
  createClaim("c2");
  createPod(busyboxPod("first", {"c1"}, deviceScript(deviceEnvName())));
  ASSERT_TRUE(eventually([&] { return podRunning("first"); }, 120s)) << podPhase("first");
  const std::string firstId = containerIdOf(*getPod("first"));
  const std::vector<pid_t> procs = processesOf(firstId);
  ASSERT_FALSE(procs.empty());
  const std::string freezer = freezerOf(procs[0]);
  ASSERT_FALSE(freezer.empty());
  auto setFreezer = [&](const char* state) { std::ofstream(freezer + "/freezer.state") << state; };
  setFreezer("FROZEN");
  struct Thaw {
    std::function<void()> thaw;
    ~Thaw() { thaw(); }
  } thaw{[&] { setFreezer("THAWED"); }};

  createPod(busyboxPod("second", {"c2"}, deviceScript(deviceEnvName())));
  api_->remove(resources::kPods, ns_, "first", DeleteOptions{.gracePeriodSeconds = 0});
  ASSERT_TRUE(eventually(
      [&] {
        return getDevice(gpu).value("/status/claimRef/name"_json_pointer, std::string()) == "c2";
      },
      60s))
      << "the device was not bound to the next pod";
  ASSERT_FALSE(awaitEventMessage("second", "Failed", "is still in use by container", 90s).empty())
      << "the next pod's container was not refused while the first one's processes lived";
  EXPECT_FALSE(podRunning("second"));
  EXPECT_FALSE(processesOf(firstId).empty());

  setFreezer("THAWED");
  ASSERT_TRUE(eventually([&] { return processesOf(firstId).empty(); }, 60s));
  ASSERT_TRUE(eventually([&] { return podRunning("second"); }, 180s)) << podPhase("second");
  std::string out;
  EXPECT_TRUE(eventually(
      [&] { return (out = logs("second")).find("ids=" + gpu + "-id") != std::string::npos; }, 30s))
      << out;
}

// Paths around the agent: a container that names no claim but sets the resource's device
// variable itself (which a runtime like NVIDIA's may honour), or mounts the host's /dev (whole
// or as a subPath of the host's root), the host's root, or a symlink to a device node (as
// udev's /dev/char/<major>:<minor> are), is refused by the node agent; a plain pod still runs.
TEST_F(TrustTest, AContainerWithoutAClaimCannotReachTheNodesDevices) {
  const std::string gpu = uniqueName("gpu");
  createDevice(gpu);
  // The link is on the host the agent sees; the runtime, which would mount the machine's own
  // path, never gets that far (containerd may create the missing path as a folder first).
  const std::string link = "/dev/ker-link-" + gpu;
  ASSERT_EQ(::symlink(("ker-" + gpu).c_str(), (env_->value("NODE_AGENT_HOST_ROOT") + link).c_str()),
            0);
  struct Cleanup {
    std::string agentSide, machineSide;
    ~Cleanup() {
      ::unlink(agentSide.c_str());
      ::rmdir(machineSide.c_str());
    }
  } cleanup{env_->value("NODE_AGENT_HOST_ROOT") + link, link};
  json byVariable = busyboxPod("by-variable", {}, "sleep 3600");
  byVariable["spec"]["containers"][0]["env"].push_back(
      {{"name", deviceEnvName()}, {"value", "all"}});
  createPod(byVariable);
  json byMount = busyboxPod("by-mount", {}, "sleep 3600");
  byMount["spec"]["volumes"] = {{{"name", "dev"}, {"hostPath", {{"path", "/dev"}}}}};
  byMount["spec"]["containers"][0]["volumeMounts"] = {
      {{"name", "dev"}, {"mountPath", "/host-dev"}}};
  createPod(byMount);
  json byRoot = busyboxPod("by-root", {}, "sleep 3600");
  byRoot["spec"]["volumes"] = {{{"name", "root"}, {"hostPath", {{"path", "/"}}}}};
  byRoot["spec"]["containers"][0]["volumeMounts"] = {{{"name", "root"}, {"mountPath", "/host"}}};
  createPod(byRoot);
  json byLink = busyboxPod("by-link", {}, "sleep 3600");
  byLink["spec"]["volumes"] = {{{"name", "gpu"}, {"hostPath", {{"path", link}}}}};
  byLink["spec"]["containers"][0]["volumeMounts"] = {{{"name", "gpu"}, {"mountPath", "/gpu"}}};
  createPod(byLink);
  // The runtime is handed the kubelet's bind mount of a subPath, not the path it reaches.
  json bySubPath = busyboxPod("by-sub-path", {}, "sleep 3600");
  bySubPath["spec"]["volumes"] = {{{"name", "root"}, {"hostPath", {{"path", "/"}}}}};
  bySubPath["spec"]["containers"][0]["volumeMounts"] = {
      {{"name", "root"}, {"mountPath", "/host-dev"}, {"subPath", "dev"}}};
  createPod(bySubPath);
  createPod(busyboxPod("plain", {}, "sleep 3600"));
  const std::string viaLink = "the container mounts " + containerDeviceNode(gpu) + ", which holds";
  for (const auto& [pod, says] :
       {std::pair<std::string, std::string>{"by-variable", "itself; the node agent sets it"},
        {"by-mount", "the container mounts /dev, which holds device node"},
        {"by-root", "the container mounts /, which holds device node"},
        {"by-sub-path", "the container mounts /dev, which holds device node"},
        {"by-link", viaLink}}) {
    EXPECT_FALSE(awaitEventMessage(pod, "Failed", says, 60s).empty()) << pod << " was not refused";
    EXPECT_FALSE(podRunning(pod)) << pod;
  }
  EXPECT_TRUE(eventually([&] { return podRunning("plain"); }, 60s)) << podPhase("plain");
  EXPECT_TRUE(deletePodsAndAwaitGone({"by-link"}));  // before its machine-side folder goes
}

// A second node with a managed device's number, at a path no node file lists (a vendor's alias,
// a driver container's copy), is that device: a container without a claim that mounts it is
// refused, as one mounting the managed node itself is.
TEST_F(TrustTest, AContainerCannotReachAManagedDeviceThroughAnotherNodeOfItsNumber) {
  const std::string gpu = uniqueName("gpu");
  createDevice(gpu);
  struct stat managed {};
  ASSERT_EQ(::stat(hostDeviceNode(gpu).c_str(), &managed), 0);
  const std::string alias = "/dev/ker-alias-" + gpu;
  const std::string agentSide = env_->value("NODE_AGENT_HOST_ROOT") + alias;
  ASSERT_EQ(::mknod(agentSide.c_str(), S_IFCHR | 0666, managed.st_rdev), 0) << agentSide;
  struct Cleanup {
    std::string agentSide, machineSide;
    ~Cleanup() {
      ::unlink(agentSide.c_str());
      ::rmdir(machineSide.c_str());  // containerd may make the missing source a folder
    }
  } cleanup{agentSide, alias};
  json byAlias = busyboxPod("by-alias", {}, "sleep 3600");
  byAlias["spec"]["volumes"] = {{{"name", "gpu"}, {"hostPath", {{"path", alias}}}}};
  byAlias["spec"]["containers"][0]["volumeMounts"] = {{{"name", "gpu"}, {"mountPath", "/gpu"}}};
  createPod(byAlias);
  EXPECT_FALSE(
      awaitEventMessage("by-alias", "Failed", "the container mounts " + alias + " (c ", 60s)
          .empty())
      << "by-alias was not refused";
  EXPECT_FALSE(podRunning("by-alias"));
  EXPECT_TRUE(deletePodsAndAwaitGone({"by-alias"}));  // before its machine-side folder goes
}

}  // namespace
}  // namespace ker::e2e

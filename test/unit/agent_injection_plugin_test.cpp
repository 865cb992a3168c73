#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "agent/device_attribution.h"
#include "agent/injection_plugin.h"
#include "common/request_deadline.h"
#include "nri_fake_runtime.h"

namespace ker::agent {
namespace {

class FakeClaims : public ClaimSource {
 public:
  Result get(const std::string& ns, const std::string& name, const std::string&) override {
    ++calls;
    deadlines.push_back(RequestDeadline::remaining());
    auto it = claims.find(objectKey(ns, name));
    if (it == claims.end()) {
      return {nullptr, error.empty() ? Status() : Status::unavailable(error)};
    }
    return {std::make_shared<const ExtendedResourceClaim>(it->second), {}};
  }
  std::map<std::string, ExtendedResourceClaim> claims;
  std::string error;
  int calls = 0;
  // The time left under the caller's deadline at each read (nullopt: none applied).
  std::vector<std::optional<std::chrono::milliseconds>> deadlines;
};

class FakePods : public PodSource {
 public:
  Result get(const std::string& ns, const std::string& name, const std::string& uid) override {
    ++calls;
    deadlines.push_back(RequestDeadline::remaining());
    std::this_thread::sleep_for(takes);
    if (!fault.empty()) {
      throw std::runtime_error(fault);
    }
    auto it = pods.find(objectKey(ns, name));
    if (it == pods.end() || it->second.meta.uid != uid) {
      return {nullptr, error.empty() ? Status() : Status::unavailable(error)};
    }
    return {std::make_shared<const NodePod>(it->second), {}};
  }
  std::map<std::string, NodePod> pods;
  std::string error;
  int calls = 0;
  std::vector<std::optional<std::chrono::milliseconds>> deadlines;  // as FakeClaims'
  std::chrono::milliseconds takes{0};                               // how long a read lasts
  std::string fault;  // set: a read throws this (a fault, not an answer)
};

class FakeProbe : public DeviceProbe {
 public:
  FakeProbe() : DeviceProbe("") {}
  std::optional<DeviceNodeInfo> deviceNode(const std::string& path) const override {
    ++stats;
    if (path == "/dev/gpu0" || path == "/var/alias-gpu0") {  // the second, made by mknod
      return DeviceNodeInfo{'c', 195, 0, 0660, 0, 44};
    }
    return std::nullopt;
  }
  // /dev/char/195:0 is a symlink to /dev/gpu0, as udev makes them.
  std::string resolve(const std::string& path) const override {
    return path == "/dev/char/195:0" ? "/dev/gpu0" : path;
  }
  CdiDevices cdiDevices() const override {
    ++cdiReads;
    return {specDevices, {}};
  }
  std::set<std::string> specDevices;
  mutable int cdiReads = 0;
  mutable int stats = 0;  // deviceNode calls
};

// Records what it was asked to stop instead of killing anything.
class FakeStopper : public ContainerStopper {
 public:
  Status stop(uint32_t pid, const std::string& containerId) const override {
    stopped.emplace_back(pid, containerId);
    return fail ? Status::notFound("gone") : Status();
  }
  mutable std::vector<std::pair<uint32_t, std::string>> stopped;
  bool fail = false;
};

class InjectionPluginTest : public ::testing::Test {
 protected:
  InjectionPluginTest() : metrics(registry) {
    auto file = std::make_shared<NodeFile>();
    DeviceSpec d;
    d.name = "gpu0";
    d.rawResourceName = "example.com/gpu";
    d.deviceID = "GPU-0";
    d.deviceNodes = {{"/dev/gpu0", "rw"}};
    d.mounts = {{"/opt/lib", "/usr/lib/gpu", true}};
    file->devices = {d};
    inventory = file;
    ExtendedResourceClaim c;
    c.meta.ns = "ns";
    c.meta.name = "c1";
    c.rawResourceName = "example.com/gpu";
    c.phase = ClaimPhase::kBound;
    c.allocated = {"gpu0"};
    c.nodeName = "node-1";
    c.podRef = PodRef{"p", "uid-p"};
    claims.claims["ns/c1"] = c;
  }

  InjectionPlugin plugin() {
    return InjectionPlugin({.node = "node-1",
                            .pluginName = "extended-resource-node-agent",
                            .claims = &claims,
                            .inventory = [this] { return inventory; },
                            .published = [this] { return published; },
                            .probe = &probe,
                            .metrics = &metrics,
                            .stopper = &stopper,
                            .users = &users,
                            .pods = &pods,
                            .readBudget = readBudget,
                            .classes = [this] { return classes; }});
  }

  // A pod of sandbox-1 that names claim c1 and requires the agent, as the bind leaves it.
  static void requiringPod(nri::PodSandbox* pod) {
    pod->set_id("sandbox-1");
    pod->set_uid("uid-p");
    pod->set_namespace_("ns");
    pod->set_name("p");
    (*pod->mutable_annotations())[kClaimsAnnotation] = "c1";
    (*pod->mutable_annotations())[kRequiredPluginsAnnotation] =
        R"(["extended-resource-node-agent"])";
  }
  static void container(nri::Container* c, const std::string& id, nri::ContainerState state,
                        uint32_t pid, bool injected) {
    c->set_id(id);
    c->set_name("main");
    c->set_pod_sandbox_id("sandbox-1");
    c->set_state(state);
    c->set_pid(pid);
    if (injected) {
      (*c->mutable_annotations())[kInjectedAnnotation] = "gpu0";
    }
  }

  // The node file lists gpu0 as gpu0-renamed now; its object is still published as gpu0.
  void renameGpu0() {
    auto renamed = std::make_shared<NodeFile>(*inventory);
    renamed->devices[0].name = "gpu0-renamed";
    inventory = renamed;
    ExtendedResource old;
    old.meta.name = "gpu0";
    old.rawResourceName = "example.com/gpu";
    old.deviceID = "GPU-0";
    published = {old};
  }

  // Pod q's container, whose claim c2 is allocated gpu0 under its new name, gpu0-renamed.
  nri::CreateContainerRequest podQWithTheRenamedDevice() {
    ExtendedResourceClaim c2 = claims.claims.at("ns/c1");
    c2.meta.name = "c2";
    c2.allocated = {"gpu0-renamed"};
    c2.podRef = PodRef{"q", "uid-q"};
    claims.claims["ns/c2"] = c2;
    nri::CreateContainerRequest req = request("c2");
    req.mutable_pod()->set_uid("uid-q");
    req.mutable_pod()->set_name("q");
    return req;
  }

  nri::CreateContainerRequest request(const std::string& claimsAnnotation) {
    nri::CreateContainerRequest req;
    req.mutable_pod()->set_uid("uid-p");
    req.mutable_pod()->set_namespace_("ns");
    req.mutable_pod()->set_name("p");
    if (!claimsAnnotation.empty()) {
      (*req.mutable_pod()->mutable_annotations())[kClaimsAnnotation] = claimsAnnotation;
    }
    req.mutable_container()->set_name("main");
    return req;
  }

  metrics::Registry registry;
  AgentMetrics metrics;
  FakeClaims claims;
  FakePods pods;
  std::optional<ClassTable> classes = ClassTable();
  std::chrono::milliseconds readBudget{1000};
  FakeProbe probe;
  FakeStopper stopper;
  DeviceUsers users;
  std::shared_ptr<const NodeFile> inventory;
  std::vector<ExtendedResource> published;  // this node's ExtendedResources in the API
};

TEST_F(InjectionPluginTest, ConfigureSubscribesToContainerCreationStartStopAndRemoval) {
  nri::ConfigureResponse resp;
  ASSERT_TRUE(plugin().configure({}, &resp).isOk());
  EXPECT_EQ(resp.events(),
            nri::eventBit(nri::CREATE_CONTAINER) | nri::eventBit(nri::POST_START_CONTAINER) |
                nri::eventBit(nri::STOP_CONTAINER) | nri::eventBit(nri::REMOVE_CONTAINER));
}

// The claim was released from pod p (deleted with --force, say) and bound to pod q while p's
// container still runs on this node: q's container is refused until the runtime reports p's
// stopped, whether the agent learnt of p's container from its own answer or from the runtime.
TEST_F(InjectionPluginTest, ADeviceIsNotGivenToAnotherPodWhileAContainerStillHasIt) {
  InjectionPlugin agent = plugin();
  nri::CreateContainerRequest first = request("c1");
  first.mutable_container()->set_id("ctr-p");
  nri::CreateContainerResponse resp;
  ASSERT_TRUE(agent.createContainer(first, &resp).isOk());

  claims.claims["ns/c1"].podRef = PodRef{"q", "uid-q"};
  nri::CreateContainerRequest second = request("c1");
  second.mutable_pod()->set_uid("uid-q");
  second.mutable_pod()->set_name("q");
  second.mutable_container()->set_id("ctr-q");
  nri::CreateContainerResponse refused;
  nri::Status s = agent.createContainer(second, &refused);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("still in use by container main of pod ns/p (uid uid-p)"),
            std::string::npos)
      << s.message();

  nri::StopContainerRequest stop;
  stop.mutable_container()->set_id("ctr-p");
  nri::StopContainerResponse stopped;
  ASSERT_TRUE(agent.stopContainer(stop, &stopped).isOk());
  nri::CreateContainerResponse given;
  EXPECT_TRUE(agent.createContainer(second, &given).isOk());
  EXPECT_EQ(given.adjust().env(0).value(), "GPU-0");

  // Known from the runtime's list on reconnecting: a running container with the device.
  nri::SynchronizeRequest sync;
  requiringPod(sync.add_pods());
  container(sync.add_containers(), "ctr-p2", nri::CONTAINER_RUNNING, 0, true);
  nri::SynchronizeResponse synced;
  ASSERT_TRUE(agent.synchronize(sync, &synced).isOk());
  EXPECT_FALSE(agent.createContainer(second, &refused).isOk());
  // Its removal frees the device as well.
  nri::Container removed;
  removed.set_id("ctr-p2");
  ASSERT_TRUE(agent.lifecycleEvent(nri::REMOVE_CONTAINER, sync.pods(0), &removed).isOk());
  EXPECT_TRUE(agent.createContainer(second, &given).isOk());
}

TEST_F(InjectionPluginTest, AnAllocatedDeviceBecomesAContainerAdjustment) {
  nri::CreateContainerResponse resp;
  ASSERT_TRUE(plugin().createContainer(request("c1"), &resp).isOk());
  const auto& adj = resp.adjust();
  ASSERT_EQ(adj.env_size(), 1);
  EXPECT_EQ(adj.env(0).key(), "EXTENDED_RESOURCE_EXAMPLE_COM_GPU");
  EXPECT_EQ(adj.env(0).value(), "GPU-0");
  ASSERT_EQ(adj.linux().devices_size(), 1);
  const auto& dev = adj.linux().devices(0);
  EXPECT_EQ(dev.path(), "/dev/gpu0");
  EXPECT_EQ(dev.type(), "c");
  EXPECT_EQ(dev.major(), 195);
  EXPECT_EQ(dev.minor(), 0);
  EXPECT_EQ(dev.file_mode().value(), 0660u);
  EXPECT_EQ(dev.gid().value(), 44u);
  ASSERT_EQ(adj.linux().resources().devices_size(), 1);
  const auto& rule = adj.linux().resources().devices(0);
  EXPECT_TRUE(rule.allow());
  EXPECT_EQ(rule.type(), "c");
  EXPECT_EQ(rule.major().value(), 195);
  EXPECT_EQ(rule.minor().value(), 0);
  EXPECT_EQ(rule.access(), "rw");
  ASSERT_EQ(adj.mounts_size(), 1);
  EXPECT_EQ(adj.mounts(0).destination(), "/usr/lib/gpu");
  EXPECT_EQ(adj.mounts(0).source(), "/opt/lib");
  EXPECT_EQ(adj.mounts(0).type(), "bind");
  EXPECT_EQ(metrics.containers.labels({"injected"}).value(), 1);
}

// A device's CDI name goes to the runtime in the adjustment's CDI devices; the specs are read
// only for a container given such a device, and one that no spec defines is refused.
TEST_F(InjectionPluginTest, ADevicesCdiNameGoesToTheRuntime) {
  nri::CreateContainerResponse plain;
  ASSERT_TRUE(plugin().createContainer(request("c1"), &plain).isOk());
  EXPECT_EQ(plain.adjust().cdi_devices_size(), 0);
  EXPECT_EQ(probe.cdiReads, 0);

  auto file = std::make_shared<NodeFile>(*inventory);
  file->devices[0].cdiDevice = "example.com/gpu=GPU-0";
  inventory = file;
  probe.specDevices = {"example.com/gpu=GPU-0"};
  nri::CreateContainerResponse resp;
  ASSERT_TRUE(plugin().createContainer(request("c1"), &resp).isOk());
  ASSERT_EQ(resp.adjust().cdi_devices_size(), 1);
  EXPECT_EQ(resp.adjust().cdi_devices(0).name(), "example.com/gpu=GPU-0");
  EXPECT_EQ(probe.cdiReads, 1);

  probe.specDevices.clear();
  nri::CreateContainerResponse refused;
  nri::Status s = plugin().createContainer(request("c1"), &refused);
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(metrics.refusals.labels({"CdiDeviceUnknown"}).value(), 1);
}

TEST_F(InjectionPluginTest, TheInjectedContainerIsMarked) {
  nri::CreateContainerResponse resp;
  ASSERT_TRUE(plugin().createContainer(request("c1"), &resp).isOk());
  EXPECT_EQ(resp.adjust().annotations().at(kInjectedAnnotation), "gpu0");
}

// A device whose node file entry is renamed while a container of one pod has it is not given to
// another pod under its new name: neither when the agent gave it the device itself nor when it
// learns of that container from the runtime's list on reconnecting (the keys it wrote on it).
TEST_F(InjectionPluginTest, ARenamedDeviceStaysWithTheContainerThatHasIt) {
  nri::CreateContainerRequest first = request("c1");
  first.mutable_container()->set_id("ctr-p");
  first.mutable_pod()->set_id("sandbox-1");
  nri::CreateContainerResponse given;
  ASSERT_TRUE(plugin().createContainer(first, &given).isOk());
  EXPECT_EQ(given.adjust().annotations().at(kInjectedKeysAnnotation),
            R"(["name:gpu0","id:example.com/gpu=GPU-0"])");

  auto renamed = std::make_shared<NodeFile>(*inventory);
  renamed->devices[0].name = "gpu0-renamed";
  inventory = renamed;
  const nri::CreateContainerRequest second = podQWithTheRenamedDevice();
  nri::CreateContainerResponse refused;
  EXPECT_FALSE(plugin().createContainer(second, &refused).isOk());
  EXPECT_EQ(metrics.refusals.labels({"DeviceInUse"}).value(), 1);

  nri::SynchronizeRequest sync;
  requiringPod(sync.add_pods());
  nri::Container* listed = sync.add_containers();
  container(listed, "ctr-p", nri::CONTAINER_RUNNING, 4242, true);
  *listed->mutable_annotations() = given.adjust().annotations();
  nri::SynchronizeResponse synced;
  ASSERT_TRUE(plugin().synchronize(sync, &synced).isOk());
  EXPECT_FALSE(plugin().createContainer(second, &refused).isOk());
  EXPECT_EQ(metrics.refusals.labels({"DeviceInUse"}).value(), 2);
}

// A container of the previous release's agent (no keys annotation) has the device under a
// name the node file has since renamed; the runtime lists it to an agent that started after
// the rename. The published object of the old name says what the device is, so the device is
// not given to another pod under its new name.
TEST_F(InjectionPluginTest, AnOlderAgentsContainerKeepsARenamedDevice) {
  renameGpu0();

  nri::SynchronizeRequest sync;
  requiringPod(sync.add_pods());
  container(sync.add_containers(), "ctr-p", nri::CONTAINER_RUNNING, 4242, true);
  nri::SynchronizeResponse synced;
  ASSERT_TRUE(plugin().synchronize(sync, &synced).isOk());

  const nri::CreateContainerRequest second = podQWithTheRenamedDevice();
  nri::CreateContainerResponse refused;
  nri::Status s = plugin().createContainer(second, &refused);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("still in use by container main of pod ns/p"), std::string::npos)
      << s.message();
}

// The file renamed gpu0 while p holds it (the old object kept for c1, the new name waiting for
// it): p's container, created again after a crash, is given the device through the entry that
// lists it now, rather than refused for good.
TEST_F(InjectionPluginTest, AHoldersContainerStartsAgainWithADeviceRenamedMeanwhile) {
  renameGpu0();

  nri::CreateContainerResponse resp;
  const nri::Status s = plugin().createContainer(request("c1"), &resp);
  ASSERT_TRUE(s.isOk()) << s.message();
  ASSERT_EQ(resp.adjust().linux().devices_size(), 1);
  EXPECT_EQ(resp.adjust().linux().devices(0).path(), "/dev/gpu0");
  EXPECT_EQ(resp.adjust().annotations().at(kInjectedAnnotation), "gpu0");
}

// An agent with no node file in force gives no device and lets no container mount /dev, and the
// runtime's list is still taken in.
TEST_F(InjectionPluginTest, WithoutANodeFileInForceNothingIsGivenAndDevIsNotMounted) {
  inventory = nullptr;
  nri::SynchronizeRequest sync;
  requiringPod(sync.add_pods());
  container(sync.add_containers(), "ctr-p", nri::CONTAINER_RUNNING, 4242, true);
  nri::SynchronizeResponse synced;
  ASSERT_TRUE(plugin().synchronize(sync, &synced).isOk());
  EXPECT_EQ(users.all().size(), 1u);

  nri::CreateContainerResponse resp;
  nri::Status s = plugin().createContainer(request("c1"), &resp);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("has no node file in force"), std::string::npos) << s.message();
  EXPECT_EQ(metrics.refusals.labels({"DeviceNotOnNode"}).value(), 1);

  nri::CreateContainerRequest unclaimed = request("");
  nri::Mount* dev = unclaimed.mutable_container()->add_mounts();
  dev->set_source("/dev");
  dev->set_destination("/host-dev");
  EXPECT_FALSE(plugin().createContainer(unclaimed, &resp).isOk());
  EXPECT_EQ(metrics.refusals.labels({"UnclaimedDevice"}).value(), 1);
}

// A container the runtime started while the agent was away is stopped as soon as the agent
// hears of it, without waiting for anything else to happen on the node.
TEST_F(InjectionPluginTest, AContainerStartedWithoutTheAgentIsStoppedAtSynchronize) {
  InjectionPlugin p = plugin();
  nri::SynchronizeRequest sync;
  requiringPod(sync.add_pods());
  container(sync.add_containers(), "ctr-slipped", nri::CONTAINER_RUNNING, 4242, false);
  container(sync.add_containers(), "ctr-fine", nri::CONTAINER_RUNNING, 4343, true);
  container(sync.add_containers(), "ctr-exited", nri::CONTAINER_STOPPED, 0, false);
  nri::SynchronizeResponse syncResp;
  ASSERT_TRUE(p.synchronize(sync, &syncResp).isOk());
  ASSERT_EQ(stopper.stopped.size(), 1u);
  EXPECT_EQ(stopper.stopped[0], std::make_pair(uint32_t{4242}, std::string("ctr-slipped")));
  EXPECT_EQ(metrics.evictions.value(), 1);
  // Nothing rides on later answers.
  nri::CreateContainerResponse resp;
  ASSERT_TRUE(p.createContainer(request(""), &resp).isOk());
  EXPECT_EQ(resp.evict_size(), 0);
  EXPECT_EQ(stopper.stopped.size(), 1u);
}

// A runtime with more pods and containers than one message holds sends them in parts, `more` set
// on all but the last, and drops a plugin whose reply does not echo it. The parts are taken as
// one list at the last: a container of the first part whose pod comes in the second is judged
// with it (stopped, having started without the agent), and one holding a device keeps it from
// another pod. A reconnection voids the parts of a list left unfinished.
TEST_F(InjectionPluginTest, ASynchronizeSplitIntoPartsIsTakenAsOneList) {
  InjectionPlugin p = plugin();
  nri::ConfigureResponse configured;
  nri::SynchronizeRequest stale;
  stale.set_more(true);
  container(stale.add_containers(), "ctr-of-an-old-connection", nri::CONTAINER_RUNNING, 99, false);
  nri::SynchronizeResponse staleResp;
  ASSERT_TRUE(p.synchronize(stale, &staleResp).isOk());
  ASSERT_TRUE(p.configure({}, &configured).isOk());

  nri::SynchronizeRequest first;
  first.set_more(true);
  container(first.add_containers(), "ctr-slipped", nri::CONTAINER_RUNNING, 4242, false);
  container(first.add_containers(), "ctr-fine", nri::CONTAINER_RUNNING, 4343, true);
  nri::SynchronizeResponse firstResp;
  ASSERT_TRUE(p.synchronize(first, &firstResp).isOk());
  EXPECT_TRUE(firstResp.more()) << "the runtime drops a plugin that does not echo it";
  EXPECT_EQ(firstResp.update_size(), 0);
  EXPECT_TRUE(stopper.stopped.empty()) << "judged before its pod was seen";

  nri::SynchronizeRequest last;
  requiringPod(last.add_pods());
  nri::SynchronizeResponse lastResp;
  ASSERT_TRUE(p.synchronize(last, &lastResp).isOk());
  EXPECT_FALSE(lastResp.more());
  ASSERT_EQ(stopper.stopped.size(), 1u);
  EXPECT_EQ(stopper.stopped[0], std::make_pair(uint32_t{4242}, std::string("ctr-slipped")));

  claims.claims["ns/c1"].podRef = PodRef{"q", "uid-q"};
  nri::CreateContainerRequest other = request("c1");
  other.mutable_pod()->set_uid("uid-q");
  other.mutable_pod()->set_name("q");
  nri::CreateContainerResponse refused;
  const nri::Status s = p.createContainer(other, &refused);
  EXPECT_FALSE(s.isOk()) << "ctr-fine, listed in the first part, still has gpu0";
  EXPECT_NE(s.message().find("still in use"), std::string::npos) << s.message();
}

// Found created but not started (no process yet): stopped when it starts.
TEST_F(InjectionPluginTest, AContainerStartingWithoutTheAgentIsStoppedWhenItStarts) {
  InjectionPlugin p = plugin();
  nri::SynchronizeRequest sync;
  requiringPod(sync.add_pods());
  container(sync.add_containers(), "ctr-slipped", nri::CONTAINER_CREATED, 0, false);
  nri::SynchronizeResponse syncResp;
  ASSERT_TRUE(p.synchronize(sync, &syncResp).isOk());
  EXPECT_TRUE(stopper.stopped.empty());

  nri::PodSandbox pod;
  requiringPod(&pod);
  nri::Container started;
  container(&started, "ctr-slipped", nri::CONTAINER_RUNNING, 4242, false);
  ASSERT_TRUE(p.lifecycleEvent(nri::POST_START_CONTAINER, pod, &started).isOk());
  nri::Container injected;
  container(&injected, "ctr-fine", nri::CONTAINER_RUNNING, 4343, true);
  ASSERT_TRUE(p.lifecycleEvent(nri::POST_START_CONTAINER, pod, &injected).isOk());
  ASSERT_EQ(stopper.stopped.size(), 1u);
  EXPECT_EQ(stopper.stopped[0].second, "ctr-slipped");
}

// A pod naming no claims is not required to pass the agent, so its containers may start while
// the agent is away (a rolling update, say) with what the guard would have emptied or refused:
// a CUDA image's NVIDIA_VISIBLE_DEVICES=all, a mount of a managed device node. Such a container
// is stopped once the agent hears of it, and created again through the agent.
TEST_F(InjectionPluginTest, AClaimlessContainerThatSlippedPastTheGuardIsStopped) {
  auto file = std::make_shared<NodeFile>(*inventory);
  file->envNames["example.com/gpu"] = "NVIDIA_VISIBLE_DEVICES";
  inventory = file;
  auto claimless = [](nri::PodSandbox* pod) {
    pod->set_id("sandbox-2");
    pod->set_uid("uid-free");
    pod->set_namespace_("ns");
    pod->set_name("free");
  };
  auto slipped = [](nri::Container* c, const std::string& id, uint32_t pid) {
    c->set_id(id);
    c->set_name(id);
    c->set_pod_sandbox_id("sandbox-2");
    c->set_state(nri::CONTAINER_RUNNING);
    c->set_pid(pid);
  };
  InjectionPlugin p = plugin();
  nri::SynchronizeRequest sync;
  claimless(sync.add_pods());
  slipped(sync.add_containers(), "cuda", 10);
  sync.mutable_containers(0)->add_env("NVIDIA_VISIBLE_DEVICES=all");
  slipped(sync.add_containers(), "emptied", 11);
  sync.mutable_containers(1)->add_env("NVIDIA_VISIBLE_DEVICES=");
  slipped(sync.add_containers(), "mounts", 12);
  sync.mutable_containers(2)->add_mounts()->set_source("/dev/char/195:0");
  slipped(sync.add_containers(), "answered", 13);
  sync.mutable_containers(3)->add_env("NVIDIA_VISIBLE_DEVICES=all");
  (*sync.mutable_containers(3)->mutable_annotations())[kInjectedAnnotation] = "";
  slipped(sync.add_containers(), "plain", 14);
  sync.mutable_containers(4)->add_env("PATH=/bin");
  nri::SynchronizeResponse synced;
  ASSERT_TRUE(p.synchronize(sync, &synced).isOk());
  ASSERT_EQ(stopper.stopped.size(), 2u);
  EXPECT_EQ(stopper.stopped[0], std::make_pair(uint32_t{10}, std::string("cuda")));
  EXPECT_EQ(stopper.stopped[1], std::make_pair(uint32_t{12}, std::string("mounts")));

  // One created while the agent was away and started after it came back: stopped as it starts.
  nri::PodSandbox pod;
  claimless(&pod);
  nri::Container late;
  slipped(&late, "late", 15);
  late.add_env("NVIDIA_VISIBLE_DEVICES=0,1");
  ASSERT_TRUE(p.lifecycleEvent(nri::POST_START_CONTAINER, pod, &late).isOk());
  ASSERT_EQ(stopper.stopped.size(), 3u);
  EXPECT_EQ(stopper.stopped[2].second, "late");

  // Without a node file in force nothing is known to be managed: nothing is stopped for it.
  inventory = nullptr;
  stopper.stopped.clear();
  ASSERT_TRUE(plugin().synchronize(sync, &synced).isOk());
  EXPECT_TRUE(stopper.stopped.empty());
}

// A variable the file names for a resource is the agent's on this node once the node has a device
// of it, listed or only published (held, dropped from the file); until then it is left alone.
TEST_F(InjectionPluginTest, AVariableIsTheAgentsOnceThisNodeHasADeviceOfItsResource) {
  auto file = std::make_shared<NodeFile>(*inventory);
  file->envNames["example.com/other"] = "OTHER_VISIBLE_DEVICES";
  inventory = file;
  nri::CreateContainerRequest req = request("");
  req.mutable_container()->add_env("OTHER_VISIBLE_DEVICES=all");
  nri::CreateContainerResponse resp;
  ASSERT_TRUE(plugin().createContainer(req, &resp).isOk());
  EXPECT_EQ(resp.adjust().env_size(), 0) << "no device of example.com/other here";

  ExtendedResource held;
  held.meta.name = "other0";
  held.rawResourceName = "example.com/other";
  held.deviceID = "OTHER-0";
  published = {held};
  NodePod p;  // read to tell whether its spec sets the variable: it does not, its image does
  p.meta.uid = "uid-p";
  pods.pods["ns/p"] = p;
  nri::CreateContainerResponse emptied;
  ASSERT_TRUE(plugin().createContainer(req, &emptied).isOk());
  ASSERT_EQ(emptied.adjust().env_size(), 1);
  EXPECT_EQ(emptied.adjust().env(0).key(), "OTHER_VISIBLE_DEVICES");
  EXPECT_EQ(emptied.adjust().env(0).value(), "");
}

TEST_F(InjectionPluginTest, AStopThatFailsIsNotCounted) {
  stopper.fail = true;
  InjectionPlugin p = plugin();
  nri::SynchronizeRequest sync;
  requiringPod(sync.add_pods());
  container(sync.add_containers(), "ctr-slipped", nri::CONTAINER_RUNNING, 4242, false);
  nri::SynchronizeResponse syncResp;
  ASSERT_TRUE(p.synchronize(sync, &syncResp).isOk());
  EXPECT_EQ(stopper.stopped.size(), 1u);
  EXPECT_EQ(metrics.evictions.value(), 0);
}

// The same over the wire, as containerd sends it: Synchronize and PostStartContainer requests
// on the plugin connection stop the container before their answer goes back.
TEST_F(InjectionPluginTest, OverTheWireSynchronizeAndPostStartStopTheContainer) {
  using namespace std::chrono_literals;
  InjectionPlugin p = plugin();
  nri::PluginDispatcher dispatcher(&p);
  nri::testing::FakeRuntime runtime;
  nri::Session session(runtime.connect(), &dispatcher);

  nri::SynchronizeRequest sync;
  requiringPod(sync.add_pods());
  container(sync.add_containers(), "ctr-running", nri::CONTAINER_RUNNING, 4242, false);
  container(sync.add_containers(), "ctr-created", nri::CONTAINER_CREATED, 0, false);
  runtime.sendRequest(1, "Synchronize", sync.SerializeAsString());
  ASSERT_TRUE(session.serve(1s).isOk());
  auto resp = runtime.receiveResponse();
  ASSERT_TRUE(resp.has_value());
  EXPECT_FALSE(resp->has_status());
  ASSERT_EQ(stopper.stopped.size(), 1u);
  EXPECT_EQ(stopper.stopped[0].second, "ctr-running");

  nri::ContainerEventRequest started;
  requiringPod(started.mutable_pod());
  container(started.mutable_container(), "ctr-created", nri::CONTAINER_RUNNING, 4343, false);
  runtime.sendRequest(3, "PostStartContainer", started.SerializeAsString());
  ASSERT_TRUE(session.serve(1s).isOk());
  resp = runtime.receiveResponse();
  ASSERT_TRUE(resp.has_value());
  EXPECT_FALSE(resp->has_status());
  ASSERT_EQ(stopper.stopped.size(), 2u);
  EXPECT_EQ(stopper.stopped[1], std::make_pair(uint32_t{4343}, std::string("ctr-created")));
}

TEST_F(InjectionPluginTest, APodWithoutClaimsIsAnsweredWithoutLookups) {
  nri::CreateContainerResponse resp;
  ASSERT_TRUE(plugin().createContainer(request(""), &resp).isOk());
  EXPECT_FALSE(resp.has_adjust());
  EXPECT_EQ(claims.calls, 0);
  EXPECT_EQ(metrics.containers.labels({"untouched"}).value(), 1);
}

// The guard compares the host path a mount names, symlinks resolved: a container without a claim
// that mounts a symlink to a managed device node is refused.
TEST_F(InjectionPluginTest, AMountOfASymlinkToAManagedDeviceNodeIsRefused) {
  nri::CreateContainerRequest req = request("");
  req.mutable_container()->add_mounts()->set_source("/dev/char/195:0");
  nri::CreateContainerResponse resp;
  const nri::Status s = plugin().createContainer(req, &resp);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("mounts /dev/gpu0"), std::string::npos) << s.message();
}

// A managed device node under another path is the same device: a container without a claim
// that mounts a second node of gpu0's number, or is given gpu0's number as its own /dev/accel0
// (by a device plugin or CDI spec), is refused. A container that is given no device node and
// mounts none costs no stat of the managed nodes.
TEST_F(InjectionPluginTest, AManagedDeviceUnderAnotherPathIsRefused) {
  nri::CreateContainerRequest plain = request("");
  plain.mutable_container()->add_mounts()->set_source("proc");
  plain.mutable_container()->add_mounts()->set_source("/var/lib/data");
  nri::CreateContainerResponse resp;
  EXPECT_TRUE(plugin().createContainer(plain, &resp).isOk());
  EXPECT_EQ(probe.stats, 1) << "the one absolute mount source, and no managed node";

  // The message of the refused creation; "" when it was let through.
  auto refused = [&](const nri::CreateContainerRequest& req) {
    const nri::Status s = plugin().createContainer(req, &resp);
    return s.isOk() ? std::string() : s.message();
  };
  nri::CreateContainerRequest alias = request("");
  alias.mutable_container()->add_mounts()->set_source("/var/alias-gpu0");
  EXPECT_THAT(refused(alias),
              ::testing::HasSubstr("the container mounts /var/alias-gpu0 (c 195:0), "
                                   "which is device node /dev/gpu0 of a device it "
                                   "was not allocated"));

  nri::CreateContainerRequest renamed = request("");
  auto* dev = renamed.mutable_container()->mutable_linux()->add_devices();
  dev->set_path("/dev/accel0");
  dev->set_type("c");
  dev->set_major(195);
  dev->set_minor(0);
  EXPECT_THAT(refused(renamed), ::testing::HasSubstr("given device node /dev/accel0 (c 195:0), "
                                                     "which is device node /dev/gpu0"));

  // The pod whose claim holds gpu0 may have it under any name.
  nri::CreateContainerRequest holder = request("c1");
  *holder.mutable_container()->mutable_linux()->add_devices() = *dev;
  EXPECT_TRUE(plugin().createContainer(holder, &resp).isOk());
}

// A subPath mount reaches its host path through the kubelet's bind mount, which names no device:
// the pod's spec tells the path, and a container without a claim whose subPath of a hostPath
// volume reaches a managed device node is refused; one whose pod cannot be read is refused too.
TEST_F(InjectionPluginTest, ASubPathMountIsJudgedByTheHostPathItReaches) {
  const nlohmann::json spec = {
      {"volumes", {{{"name", "root"}, {"hostPath", {{"path", "/"}}}}}},
      {"containers",
       {{{"name", "main"}, {"volumeMounts", {{{"name", "root"}, {"subPath", "dev"}}}}}}}};
  NodePod p = NodePod::fromJson(
      {{"metadata", {{"namespace", "ns"}, {"name", "p"}, {"uid", "uid-p"}}}, {"spec", spec}});
  pods.pods["ns/p"] = p;
  nri::CreateContainerRequest req = request("");
  req.mutable_container()->add_mounts()->set_source(
      "/var/lib/kubelet/pods/uid-p/volume-subpaths/root/main/0");
  nri::CreateContainerResponse resp;
  nri::Status s = plugin().createContainer(req, &resp);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("mounts /dev, which holds device node /dev/gpu0"), std::string::npos)
      << s.message();
  EXPECT_EQ(pods.calls, 1);

  pods.pods.clear();
  pods.error = "connection refused";
  s = plugin().createContainer(req, &resp);
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(metrics.refusals.labels({"PodUnreadable"}).value(), 1);

  // A mount that is not a subPath needs no read of the pod.
  nri::CreateContainerRequest plain = request("");
  plain.mutable_container()->add_mounts()->set_source("/var/lib/kubelet/pods/uid-p/volumes/x");
  EXPECT_TRUE(plugin().createContainer(plain, &resp).isOk());
  EXPECT_EQ(pods.calls, 2);
}

// The runtime passes a container's variables mixed, its image's with its spec's. One carrying a
// device variable has its pod read: set by the image (as CUDA images set NVIDIA_VISIBLE_DEVICES),
// the variable is emptied and the container runs; set by the spec, it is refused.
TEST_F(InjectionPluginTest, ADeviceVariableIsEmptiedWhenTheImageSetsItAndRefusedWhenTheSpecDoes) {
  const auto podWithEnv = [](nlohmann::json env) {
    return NodePod::fromJson(
        {{"metadata", {{"namespace", "ns"}, {"name", "p"}, {"uid", "uid-p"}}},
         {"spec", {{"containers", {{{"name", "main"}, {"env", std::move(env)}}}}}}});
  };
  pods.pods["ns/p"] = podWithEnv({{{"name", "OTHER"}, {"value", "1"}}});
  nri::CreateContainerRequest req = request("");
  req.mutable_container()->add_env("PATH=/bin");
  req.mutable_container()->add_env("EXTENDED_RESOURCE_EXAMPLE_COM_GPU=all");
  nri::CreateContainerResponse resp;
  ASSERT_TRUE(plugin().createContainer(req, &resp).isOk());
  ASSERT_EQ(resp.adjust().env_size(), 1);
  EXPECT_EQ(resp.adjust().env(0).key(), "EXTENDED_RESOURCE_EXAMPLE_COM_GPU");
  EXPECT_EQ(resp.adjust().env(0).value(), "");
  EXPECT_EQ(resp.adjust().linux().devices_size(), 0);
  EXPECT_EQ(pods.calls, 1);

  pods.pods["ns/p"] =
      podWithEnv({{{"name", "EXTENDED_RESOURCE_EXAMPLE_COM_GPU"}, {"value", "all"}}});
  nri::CreateContainerResponse refused;
  const nri::Status s = plugin().createContainer(req, &refused);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("sets EXTENDED_RESOURCE_EXAMPLE_COM_GPU itself"), std::string::npos)
      << s.message();

  // A container carrying no device variable needs no read of its pod.
  EXPECT_TRUE(plugin().createContainer(request(""), &resp).isOk());
  EXPECT_EQ(pods.calls, 2);
}

// A fault of the agent's own while deciding refuses the container (the kubelet retries it) where
// an escaping exception would end the agent and let containerd start the container without it.
TEST_F(InjectionPluginTest, AFaultWhileDecidingRefusesTheContainer) {
  classes.reset();  // the classes unread: the pod is read
  pods.fault = "bad state";
  nri::CreateContainerResponse resp;
  const nri::Status s = plugin().createContainer(request("c1"), &resp);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("the node agent failed to decide: bad state"), std::string::npos)
      << s.message();
  EXPECT_EQ(metrics.refusals.labels({"AgentFault"}).value(), 1);
}

// While a class exists, a container's pod is read for what its containers ask; its record of
// claims comes from the runtime, and the container's name picks its share of a class's claim.
TEST_F(InjectionPluginTest, WhileAClassExistsThePodIsReadForItsRequests) {
  classes = ClassTable({std::make_shared<const ExtendedResourceClass>(
      ExtendedResourceClass::fromJson({{"metadata", {{"name", "gpu"}}},
                                       {"spec",
                                        {{"extendedResourceName", "example.com/gpu"},
                                         {"rawResourceName", "example.com/gpu"}}}}))});
  NodePod p;
  p.meta.ns = "ns";
  p.meta.name = "p";
  p.meta.uid = "uid-p";
  p.schedulerName = "default-scheduler";
  p.extendedRequests["example.com/gpu"] = {{"main", 1, ContainerKind::kApp}};
  pods.pods["ns/p"] = p;
  nri::CreateContainerResponse resp;
  nri::Status s = plugin().createContainer(request(""), &resp);
  ASSERT_EQ(s.code(), nri::Status::Code::kRpcError);
  EXPECT_NE(s.message().find("no claim was made for it"), std::string::npos) << s.message();
  EXPECT_EQ(metrics.refusals.labels({"ClassClaimMissing"}).value(), 1);
  EXPECT_EQ(pods.calls, 1);

  claims.claims["ns/c1"].extendedResourceNum = 1;
  claims.claims["ns/c1"].containers = {{"main", 1, ContainerKind::kApp}};
  nri::CreateContainerRequest recorded = request("");
  (*recorded.mutable_pod()->mutable_annotations())[kGeneratedClaimsAnnotation] =
      R"({"example.com/gpu": "c1"})";
  ASSERT_TRUE(plugin().createContainer(recorded, &resp).isOk());
  EXPECT_EQ(resp.adjust().annotations().at(kInjectedAnnotation), "gpu0");
  recorded.mutable_container()->set_name("logger");
  nri::CreateContainerResponse sibling;
  ASSERT_TRUE(plugin().createContainer(recorded, &sibling).isOk());
  EXPECT_EQ(sibling.adjust().annotations().at(kInjectedAnnotation), "");
  EXPECT_EQ(sibling.adjust().linux().devices_size(), 0);

  pods.pods.clear();
  pods.error = "timed out";
  EXPECT_EQ(plugin().createContainer(request(""), &resp).code(), nri::Status::Code::kRpcError);
  EXPECT_EQ(metrics.refusals.labels({"PodUnreadable"}).value(), 1);
  pods.error.clear();  // gone, or created again under another UID
  EXPECT_EQ(plugin().createContainer(request(""), &resp).code(), nri::Status::Code::kRpcError);
  EXPECT_EQ(metrics.refusals.labels({"PodUnreadable"}).value(), 2);
}

// Without classes no pod is read: a pod naming no claims is still answered without lookups.
TEST_F(InjectionPluginTest, WithoutClassesNoPodIsRead) {
  nri::CreateContainerResponse resp;
  ASSERT_TRUE(plugin().createContainer(request(""), &resp).isOk());
  ASSERT_TRUE(plugin().createContainer(request("c1"), &resp).isOk());
  EXPECT_EQ(pods.calls, 0);
  // Classes not read yet: the pod is read, and refused only if it asks for a resource.
  classes.reset();
  NodePod p;
  p.meta.uid = "uid-p";
  pods.pods["ns/p"] = p;
  ASSERT_TRUE(plugin().createContainer(request(""), &resp).isOk());
  EXPECT_EQ(pods.calls, 1);
  pods.pods["ns/p"].extendedRequests["example.com/gpu"] = {{"main", 1, ContainerKind::kApp}};
  EXPECT_EQ(plugin().createContainer(request(""), &resp).code(), nri::Status::Code::kRpcError);
  EXPECT_EQ(metrics.refusals.labels({"PodUnreadable"}).value(), 1);
}

TEST_F(InjectionPluginTest, ARefusalFailsTheCreationWithItsMessage) {
  claims.claims["ns/c1"].podRef = PodRef{"other", "uid-other"};
  nri::CreateContainerResponse resp;
  nri::Status s = plugin().createContainer(request("c1"), &resp);
  ASSERT_EQ(s.code(), nri::Status::Code::kRpcError);
  EXPECT_EQ(s.rpcCode(), nri::RpcCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("uid-other"), std::string::npos) << s.message();
  EXPECT_EQ(metrics.refusals.labels({"ClaimOfOtherPod"}).value(), 1);
}

// The pod read and the claim reads share one deadline: a slow pod read leaves the claim read
// only what is left of the budget, so together they stay below the runtime's request timeout
// (past which it starts the container without the agent).
TEST_F(InjectionPluginTest, TheReadsOfOneAnswerShareOneDeadline) {
  using std::chrono::milliseconds;
  classes.reset();  // not read yet: the pod is read too
  NodePod p;
  p.meta.uid = "uid-p";
  pods.pods["ns/p"] = p;
  pods.takes = milliseconds(300);
  readBudget = milliseconds(400);
  nri::CreateContainerResponse resp;
  ASSERT_TRUE(plugin().createContainer(request("c1"), &resp).isOk());
  ASSERT_EQ(pods.deadlines.size(), 1u);
  ASSERT_EQ(claims.deadlines.size(), 1u);
  ASSERT_TRUE(pods.deadlines[0].has_value());
  EXPECT_LE(*pods.deadlines[0], milliseconds(400));
  ASSERT_TRUE(claims.deadlines[0].has_value());
  EXPECT_LE(*claims.deadlines[0], milliseconds(100));
  // Nothing outlives the answer: a read made afterwards on this thread has no deadline.
  EXPECT_FALSE(RequestDeadline::remaining().has_value());
}

// A runtime configured with a request timeout shorter than the read budget gets its answer in
// time: the reads are cut to leave a quarter of its timeout (at least 250 ms) for the rest.
TEST_F(InjectionPluginTest, TheReadBudgetFitsTheRequestTimeoutTheRuntimeReports) {
  using std::chrono::milliseconds;
  EXPECT_EQ(readBudgetFor(milliseconds(1000), milliseconds(0)), milliseconds(1000));
  EXPECT_EQ(readBudgetFor(milliseconds(1000), milliseconds(2000)), milliseconds(1000));
  EXPECT_EQ(readBudgetFor(milliseconds(1000), milliseconds(1000)), milliseconds(750));
  EXPECT_EQ(readBudgetFor(milliseconds(1000), milliseconds(600)), milliseconds(350));
  EXPECT_EQ(readBudgetFor(milliseconds(1000), milliseconds(300)), milliseconds(150));

  readBudget = milliseconds(1000);
  InjectionPlugin agent = plugin();
  nri::ConfigureRequest configure;
  configure.set_request_timeout(600);
  nri::ConfigureResponse configured;
  ASSERT_TRUE(agent.configure(configure, &configured).isOk());
  nri::CreateContainerResponse resp;
  ASSERT_TRUE(agent.createContainer(request("c1"), &resp).isOk());
  ASSERT_EQ(claims.deadlines.size(), 1u);
  ASSERT_TRUE(claims.deadlines[0].has_value());
  EXPECT_LE(*claims.deadlines[0], milliseconds(350));
  EXPECT_GT(*claims.deadlines[0], milliseconds(0));
}

TEST_F(InjectionPluginTest, AnUnreadableClaimIsRefusedNotSkipped) {
  claims.claims.clear();
  claims.error = "timed out";
  nri::CreateContainerResponse resp;
  nri::Status s = plugin().createContainer(request("c1"), &resp);
  EXPECT_EQ(s.code(), nri::Status::Code::kRpcError);
  EXPECT_EQ(metrics.refusals.labels({"ClaimUnreadable"}).value(), 1);
}

// The attribution series of a container appear with the agent's answer to its creation (or
// with the runtime's list on reconnecting) and vanish with its stop or removal.
TEST_F(InjectionPluginTest, AttributionSeriesFollowTheContainersThatHaveDevices) {
  exportAttribution(registry, "node-1", users, [this] { return inventory; });
  const std::string series =
      std::string(kAttributionMetric) +
      R"({node="node-1",namespace="ns",pod="p",container="main",device="gpu0",device_id="GPU-0",resource="example.com/gpu"} 1)";
  InjectionPlugin agent = plugin();
  EXPECT_EQ(registry.render().find(std::string(kAttributionMetric) + "{"), std::string::npos);

  nri::CreateContainerRequest create = request("c1");
  create.mutable_container()->set_id("ctr-p");
  nri::CreateContainerResponse resp;
  ASSERT_TRUE(agent.createContainer(create, &resp).isOk());
  EXPECT_NE(registry.render().find(series), std::string::npos) << registry.render();

  nri::StopContainerRequest stop;
  stop.mutable_container()->set_id("ctr-p");
  nri::StopContainerResponse stopped;
  ASSERT_TRUE(agent.stopContainer(stop, &stopped).isOk());
  EXPECT_EQ(registry.render().find(std::string(kAttributionMetric) + "{"), std::string::npos)
      << registry.render();

  // A refused creation has no series.
  claims.claims["ns/c1"].podRef = PodRef{"other", "uid-other"};
  EXPECT_FALSE(agent.createContainer(create, &resp).isOk());
  EXPECT_EQ(registry.render().find(std::string(kAttributionMetric) + "{"), std::string::npos);

  // Learnt from the runtime's list; a stopped container in it has none.
  nri::SynchronizeRequest sync;
  requiringPod(sync.add_pods());
  container(sync.add_containers(), "ctr-p2", nri::CONTAINER_RUNNING, 0, true);
  container(sync.add_containers(), "ctr-p3", nri::CONTAINER_STOPPED, 0, true);
  nri::SynchronizeResponse synced;
  ASSERT_TRUE(agent.synchronize(sync, &synced).isOk());
  const std::string page = registry.render();
  EXPECT_NE(page.find(series), std::string::npos) << page;
  EXPECT_EQ(page.find(series), page.rfind(series)) << page;

  nri::Container removed;
  removed.set_id("ctr-p2");
  ASSERT_TRUE(agent.lifecycleEvent(nri::REMOVE_CONTAINER, sync.pods(0), &removed).isOk());
  EXPECT_EQ(registry.render().find(std::string(kAttributionMetric) + "{"), std::string::npos);
}

TEST(DeviceAttribution, ADeviceTheNodeFileNoLongerListsKeepsItsSeriesWithoutAnId) {
  NodeFile inventory;
  DeviceSpec d;
  d.name = "gpu0";
  d.rawResourceName = "example.com/gpu";
  d.deviceID = "GPU-0";
  inventory.devices = {d};
  std::vector<ContainerDevices> containers = {
      {{"ctr-1", "main", "uid-1", "team-a", "train"}, {"gpu0", "gpu9"}},
      {{"ctr-2", "side", "uid-2", "team-b", "serve"}, {}}};
  auto series = attributionSeries("node-1", containers, inventory);
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].labelValues, (std::vector<std::string>{"node-1", "team-a", "train", "main",
                                                             "gpu0", "GPU-0", "example.com/gpu"}));
  EXPECT_EQ(series[1].labelValues,
            (std::vector<std::string>{"node-1", "team-a", "train", "main", "gpu9", "", ""}));
  EXPECT_EQ(series[1].value, 1);
  EXPECT_EQ(attributionLabels().size(), series[0].labelValues.size());
}

}  // namespace
}  // namespace ker::agent

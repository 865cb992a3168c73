#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "agent/device_users.h"
#include "agent/injection.h"

namespace ker::agent {
namespace {

// Device nodes as a runtime lists them for a container, each with the number the host gives
// that path: the fixture's device nodes, a default device's own, else one no node file lists.
std::map<std::string, DeviceNumber> at(std::initializer_list<std::string> paths) {
  static const std::map<std::string, DeviceNumber> kKnown{
      {"/dev/gpu0", {'c', 195, 0}}, {"/dev/./gpu0", {'c', 195, 0}},
      {"/dev/gpu1", {'c', 195, 1}}, {"/dev/gpuctl", {'c', 195, 255}},
      {"/dev/null", {'c', 1, 3}},   {"/dev/urandom", {'c', 1, 9}},
      {"/dev/tty", {'c', 5, 0}}};
  std::map<std::string, DeviceNumber> out;
  int64_t other = 0;
  for (const auto& path : paths) {
    auto known = kKnown.find(path);
    out[path] = known != kKnown.end() ? known->second : DeviceNumber{'c', 240, other++};
  }
  return out;
}

class InjectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pod.uid = "uid-p";
    pod.ns = "ns";
    pod.name = "p";
    pod.annotations[kClaimsAnnotation] = "c1";
    DeviceSpec gpu0;
    gpu0.name = "gpu0";
    gpu0.rawResourceName = "example.com/gpu";
    gpu0.deviceID = "GPU-0";
    gpu0.deviceNodes = {{"/dev/gpu0", "rw"}, {"/dev/gpuctl", "rwm"}};
    gpu0.env = {{"SLOT", "0"}};
    gpu0.mounts = {{"/opt/lib", "/usr/local/lib/gpu", true}};
    DeviceSpec gpu1 = gpu0;
    gpu1.name = "gpu1";
    gpu1.deviceID = "GPU-1";
    gpu1.deviceNodes = {{"/dev/gpu1", "rw"}, {"/dev/gpuctl", "rwm"}};
    gpu1.env = {{"SLOT", "1"}};
    inventory.devices = {gpu0, gpu1};
    claims["c1"] = claim("c1", {"gpu0"});
    nodes["/dev/gpu0"] = DeviceNodeInfo{'c', 195, 0, 0666, 0, 0};
    nodes["/dev/gpu1"] = DeviceNodeInfo{'c', 195, 1, 0666, 0, 0};
    nodes["/dev/gpuctl"] = DeviceNodeInfo{'c', 195, 255, 0666, 0, 0};
  }

  ExtendedResourceClaim claim(const std::string& name, std::vector<std::string> devices) {
    ExtendedResourceClaim c;
    c.meta.ns = "ns";
    c.meta.name = name;
    c.rawResourceName = "example.com/gpu";
    c.phase = ClaimPhase::kBound;
    c.phaseWritten = true;
    c.allocated = std::move(devices);
    c.nodeName = "node-1";
    c.podRef = PodRef{"p", "uid-p"};
    return c;
  }

  Injection decide() {
    InjectionInput in;
    in.pod = &pod;
    in.node = "node-1";
    in.named = namedClaims(pod);
    for (const auto& name : in.named.names) {
      auto it = claims.find(name);
      in.claims[name] = it == claims.end() ? nullptr : &it->second;
    }
    in.unreadable = unreadable;
    in.inventory = inventoryInForce ? &inventory : nullptr;
    in.renamed = renamedForTest;
    in.publishedResources = publishedResources;
    for (const auto& [path, info] : nodes) {
      in.deviceNodes[path] = info;
    }
    for (const auto& path : missing) {
      in.deviceNodes[path] = std::nullopt;
    }
    in.users = users;
    in.container = container;
    in.guard = guard;
    in.cdiDevices = cdiDevices;
    in.cdiSpecDirs = {"/etc/cdi", "/var/run/cdi"};
    in.requests = requests;
    in.schedulerName = "default-scheduler";
    in.podUnreadable = podUnreadable;
    in.classes = classes ? &*classes : nullptr;
    in.managedNumbers = managedNumbers;
    return decideInjection(in);
  }

  Adjustment adjustment() {
    Injection inj = decide();
    EXPECT_TRUE(std::holds_alternative<Adjustment>(inj));
    return std::holds_alternative<Adjustment>(inj) ? std::get<Adjustment>(inj) : Adjustment{};
  }

  Refusal refusal() {
    Injection inj = decide();
    EXPECT_TRUE(std::holds_alternative<Refusal>(inj));
    return std::holds_alternative<Refusal>(inj) ? std::get<Refusal>(inj) : Refusal{};
  }

  PodIdentity pod;
  NodeFile inventory;
  bool inventoryInForce = true;  // false: the agent has no node file in force
  RenamedDevices renamedForTest;
  std::set<std::string> publishedResources;
  std::map<std::string, ExtendedResourceClaim> claims;
  std::map<std::string, std::string> unreadable;
  std::map<std::string, DeviceNodeInfo> nodes;
  std::vector<std::string> missing;
  std::map<std::string, std::vector<DeviceUse>> users;
  ContainerRequest container;
  DeviceGuard guard{.enabled = true, .exemptNamespaces = {"kube-system"}};
  std::set<std::string> cdiDevices;
  ExtendedRequests requests;
  std::string podUnreadable;
  std::optional<ClassTable> classes = ClassTable();
  std::map<DeviceNumber, std::string> managedNumbers;  // InjectionInput::managedNumbers
};

// Class gpu, serving example.com/gpu from the example.com/gpu devices.
ClassTable gpuClass() {
  return ClassTable({std::make_shared<const ExtendedResourceClass>(ExtendedResourceClass::fromJson(
      {{"metadata", {{"name", "gpu"}, {"uid", "uid-class"}}},
       {"spec",
        {{"extendedResourceName", "example.com/gpu"}, {"rawResourceName", "example.com/gpu"}}}}))});
}

// A pod that names no claims reaches no managed device: not by the resource's variable, not by
// mounting /, /dev or a device node, not by being given one (privileged). Another device node, or
// a namespace of system daemons, is left alone.
TEST_F(InjectionTest, AContainerWithoutAClaimReachesNoManagedDevice) {
  pod.annotations.erase(kClaimsAnnotation);
  container.envNames = {"PATH", "EXTENDED_RESOURCE_EXAMPLE_COM_GPU"};
  container.specEnvNames = {{"EXTENDED_RESOURCE_EXAMPLE_COM_GPU"}};
  Refusal r = refusal();
  EXPECT_EQ(r.reason, RefusalReason::kUnclaimedDevice);
  EXPECT_EQ(r.message,
            "the container sets EXTENDED_RESOURCE_EXAMPLE_COM_GPU itself; the node agent sets it "
            "from the pod's claims");
  container = {{"PATH"}, {"/dev/"}, {}};
  EXPECT_EQ(refusal().message,
            "the container mounts /dev, which holds device node /dev/gpu0 of a device it was not "
            "allocated");
  container = {{}, {"/"}, {}};
  EXPECT_EQ(refusal().message,
            "the container mounts /, which holds device node /dev/gpu0 of a device it was not "
            "allocated");
  container = {{}, {}, at({"/dev/null", "/dev/gpu1"})};
  EXPECT_EQ(refusal().reason, RefusalReason::kUnclaimedDevice);
  container = {{"PATH"}, {"/var/lib/data"}, at({"/dev/null"})};
  EXPECT_TRUE(std::holds_alternative<Untouched>(decide()));
  container = {{}, {"/dev"}, {}};
  pod.ns = "kube-system";
  EXPECT_TRUE(std::holds_alternative<Untouched>(decide()));
  pod.ns = "ns";
  guard.enabled = false;
  EXPECT_TRUE(std::holds_alternative<Untouched>(decide()));
}

// A device variable the container's image sets (NVIDIA_VISIBLE_DEVICES=all in every CUDA image)
// is nobody's choice to refuse: the agent sets it, to the IDs of the container's devices of that
// resource or to nothing, so a runtime that honours it hands out no other device. One its pod spec
// sets is refused, as a request for devices without a claim.
TEST_F(InjectionTest, ADeviceVariableTheImageSetsIsTheAgentsToSet) {
  container.envNames = {"PATH", "EXTENDED_RESOURCE_EXAMPLE_COM_GPU", "OTHER"};
  container.specEnvNames = {{"OTHER"}};
  const Adjustment claimed = adjustment();
  EXPECT_EQ(claimed.env, (std::vector<std::pair<std::string, std::string>>{
                             {"EXTENDED_RESOURCE_EXAMPLE_COM_GPU", "GPU-0"}, {"SLOT", "0"}}));
  EXPECT_EQ(claimed.deviceNames, (std::vector<std::string>{"gpu0"}));

  pod.annotations.erase(kClaimsAnnotation);
  const Adjustment unclaimed = adjustment();
  EXPECT_EQ(unclaimed.env, (std::vector<std::pair<std::string, std::string>>{
                               {"EXTENDED_RESOURCE_EXAMPLE_COM_GPU", ""}}));
  EXPECT_TRUE(unclaimed.deviceNames.empty());
  EXPECT_TRUE(unclaimed.devices.empty());

  container.specEnvNames.reset();  // a static pod's spec is not read: emptied all the same
  EXPECT_EQ(adjustment().env, unclaimed.env);

  container.specEnvNames = {{"EXTENDED_RESOURCE_EXAMPLE_COM_GPU"}};
  EXPECT_EQ(refusal().message,
            "the container sets EXTENDED_RESOURCE_EXAMPLE_COM_GPU itself; the node agent sets it "
            "from the pod's claims");

  container.specEnvNames = std::vector<std::string>{};
  container.envNames = {"PATH"};
  EXPECT_TRUE(std::holds_alternative<Untouched>(decide()));
  container.envNames = {"EXTENDED_RESOURCE_EXAMPLE_COM_GPU"};
  pod.ns = "kube-system";
  EXPECT_TRUE(std::holds_alternative<Untouched>(decide()));
  pod.ns = "ns";

  inventoryInForce = false;  // no file: any variable named as the agent's default is emptied
  container.envNames = {"EXTENDED_RESOURCE_ANY_THING", "NVIDIA_VISIBLE_DEVICES"};
  EXPECT_EQ(
      adjustment().env,
      (std::vector<std::pair<std::string, std::string>>{{"EXTENDED_RESOURCE_ANY_THING", ""}}));
}

// The file names the variable a runtime honours for a resource; once its last device leaves the
// file (still held, or about to come back), a runtime still hands out whatever the variable says,
// so the variable stays the agent's.
TEST_F(InjectionTest, AVariableTheFileNamesIsTheAgentsWhileNoDeviceOfItsResourceIsListed) {
  inventory.envNames["nvidia.com/gpu"] = "NVIDIA_VISIBLE_DEVICES";
  pod.annotations.erase(kClaimsAnnotation);
  container.envNames = {"PATH", "NVIDIA_VISIBLE_DEVICES"};
  container.specEnvNames = {{"NVIDIA_VISIBLE_DEVICES"}};
  // This node has no device of the resource, listed or published: the variable is left to
  // whoever serves it here (a vendor's device plugin, with a node file shared by all nodes).
  EXPECT_TRUE(std::holds_alternative<Untouched>(decide()));

  publishedResources = {"nvidia.com/gpu"};  // one is published, held, no longer listed
  container.specEnvNames = std::vector<std::string>{};
  EXPECT_EQ(adjustment().env,
            (std::vector<std::pair<std::string, std::string>>{{"NVIDIA_VISIBLE_DEVICES", ""}}));
  container.specEnvNames = {{"NVIDIA_VISIBLE_DEVICES"}};
  EXPECT_EQ(refusal().reason, RefusalReason::kUnclaimedDevice);
}

// The file renamed gpu0's entry while c1 holds it: the old object stays for the claim, the new
// name waits. A holder's container that starts again (a crash, a restart) still gets the device,
// as the new entry describes it, under the name its claim lists.
TEST_F(InjectionTest, ADeviceRenamedInTheFileWhileHeldIsStillGivenToItsHolder) {
  inventory.devices[0].name = "gpu0-a";
  EXPECT_EQ(refusal().reason, RefusalReason::kDeviceNotOnNode);

  ExtendedResource published;
  published.meta.name = "gpu0";
  published.rawResourceName = "example.com/gpu";
  published.deviceID = "GPU-0";
  ExtendedResource other = published;
  other.meta.name = "gpu9";
  other.deviceID = "GPU-9";
  const RenamedDevices renamed =
      renamedEntries(inventory, {"gpu0", "gpu1", "gpu9", "unknown"}, {other, published});
  EXPECT_EQ(renamed, (RenamedDevices{{"gpu0", "gpu0-a"}})) << "gpu1 is listed, gpu9 is not";
  EXPECT_EQ(deviceNodePaths({&claims["c1"]}, inventory, renamed),
            (std::vector<std::string>{"/dev/gpu0", "/dev/gpuctl"}));

  renamedForTest = renamed;
  const Adjustment adj = adjustment();
  EXPECT_EQ(adj.deviceNames, (std::vector<std::string>{"gpu0"}));
  ASSERT_EQ(adj.devices.size(), 2u);
  EXPECT_EQ(adj.devices[0].path, "/dev/gpu0");
  EXPECT_EQ(adj.env, (std::vector<std::pair<std::string, std::string>>{
                         {"EXTENDED_RESOURCE_EXAMPLE_COM_GPU", "GPU-0"}, {"SLOT", "0"}}));
}

// While the agent has no node file in force it knows no managed device, so it fails closed: a
// container without a claim may not mount /dev, a folder holding it or a device node in it, nor
// be given a device node, beyond the runtime's default devices, the syslog socket and shared
// memory; a container with a claim gets no device.
TEST_F(InjectionTest, WithoutANodeFileInForceNoDeviceNodeIsReachedAndNoneGiven) {
  inventoryInForce = false;
  const Refusal claimed = refusal();
  EXPECT_EQ(claimed.reason, RefusalReason::kDeviceNotOnNode);
  EXPECT_EQ(claimed.message,
            "device gpu0 of claim ns/c1 cannot be given on node node-1: the node agent has no "
            "node file in force (its file is missing or cannot be used, and no usable copy of one "
            "that parsed was kept)");

  pod.annotations.erase(kClaimsAnnotation);
  for (const char* source :
       {"/", "/dev/", "/dev/nvidia0", "/dev/dri", "/dev/char/195:0", "/dev/shm/../nvidia0"}) {
    container = {{}, {source}, {}};
    const Refusal r = refusal();
    EXPECT_EQ(r.reason, RefusalReason::kUnclaimedDevice) << source;
    EXPECT_NE(r.message.find("has no node file in force"), std::string::npos) << r.message;
  }
  container = {{}, {}, {{"/dev/null", {'c', 195, 0}}}};
  EXPECT_EQ(refusal().reason, RefusalReason::kUnclaimedDevice) << "another device as /dev/null";
  container = {{}, {}, at({"/dev/null", "/dev/nvidia0"})};
  EXPECT_EQ(refusal().message,
            "the container is given device node /dev/nvidia0; the node agent has no node file in "
            "force (its file is missing or cannot be used, and no usable copy of one that parsed "
            "was kept), so any device may be one it manages");
  container = {{"PATH", "EXTENDED_RESOURCE_EXAMPLE_COM_GPU"}, {}, {}};
  container.specEnvNames = {{"PATH", "EXTENDED_RESOURCE_EXAMPLE_COM_GPU"}};
  EXPECT_EQ(refusal().reason, RefusalReason::kUnclaimedDevice);
  container = {{"PATH", "NVIDIA_VISIBLE_DEVICES"},
               {"/var/lib/data", "/dev/log", "/dev/shm/x", "/dev/null", "/devices"},
               at({"/dev/null", "/dev/urandom", "/dev/tty"})};
  EXPECT_TRUE(std::holds_alternative<Untouched>(decide()));
  container = {{}, {"/dev"}, at({"/dev/nvidia0"})};
  pod.ns = "kube-system";
  EXPECT_TRUE(std::holds_alternative<Untouched>(decide()));
}

// A pod given gpu0 may have gpu0's node (a privileged container lists it), not gpu1's.
TEST_F(InjectionTest, AClaimingContainerReachesOnlyItsOwnDevices) {
  container = {{}, {}, at({"/dev/gpu0", "/dev/gpuctl"})};
  EXPECT_TRUE(std::holds_alternative<Adjustment>(decide()));
  container = {{}, {}, at({"/dev/gpu0", "/dev/gpu1"})};
  const Refusal r = refusal();
  EXPECT_EQ(r.reason, RefusalReason::kUnclaimedDevice);
  EXPECT_NE(r.message.find("/dev/gpu1"), std::string::npos) << r.message;
}

// A managed device is known by its number under any path: a device plugin or CDI spec giving
// gpu1's node as /dev/accel0, or gpu1's number under gpu0's path, or a mounted alias of gpu1's
// node, reaches gpu1. The runtime's defaults at their own paths and numbers are no one's.
TEST_F(InjectionTest, AManagedDeviceIsKnownByItsNumberUnderAnyPath) {
  managedNumbers = {
      {{'c', 195, 0}, "/dev/gpu0"}, {{'c', 195, 1}, "/dev/gpu1"}, {{'c', 195, 255}, "/dev/gpuctl"}};
  container.devices = {{"/dev/null", {'c', 1, 3}}, {"/dev/accel0", {'c', 195, 0}}};
  EXPECT_TRUE(std::holds_alternative<Adjustment>(decide())) << "gpu0 is its own, by any name";
  container.devices = {{"/dev/accel0", {'c', 195, 1}}};
  EXPECT_EQ(refusal().message,
            "the container is given device node /dev/accel0 (c 195:1), which is device node "
            "/dev/gpu1 of a device it was not allocated");
  container.devices = {{"/dev/gpu0", {'c', 195, 1}}};
  EXPECT_EQ(refusal().reason, RefusalReason::kUnclaimedDevice) << "gpu1 under gpu0's path";
  container.devices.clear();
  container.mountedNodes = {{"/var/alias", {'c', 195, 1}}};
  EXPECT_EQ(refusal().message,
            "the container mounts /var/alias (c 195:1), which is device node /dev/gpu1 of a "
            "device it was not allocated");
  container.mountedNodes = {{"/var/alias", {'b', 195, 1}}};
  EXPECT_TRUE(std::holds_alternative<Adjustment>(decide())) << "a block device of that number";

  // A node file listing a device with a default's number (a test node made with /dev/null's)
  // leaves the default alone, not its number under another path.
  pod.annotations.erase(kClaimsAnnotation);
  managedNumbers = {{{'c', 1, 3}, "/dev/gpu0"}};
  container.mountedNodes.clear();
  container.devices = at({"/dev/null", "/dev/urandom"});
  EXPECT_TRUE(std::holds_alternative<Untouched>(decide()));
  container.devices = {{"/dev/zero", {'c', 1, 3}}};
  EXPECT_EQ(refusal().reason, RefusalReason::kUnclaimedDevice) << "/dev/null's number as /dev/zero";
  container.devices.clear();
  container.mountedNodes = {{"/dev/null", {'c', 1, 3}}};
  EXPECT_TRUE(std::holds_alternative<Untouched>(decide()));
  container.mountedNodes = {{"/tmp/n", {'c', 1, 3}}};
  EXPECT_EQ(refusal().reason, RefusalReason::kUnclaimedDevice);
  pod.ns = "kube-system";
  EXPECT_TRUE(std::holds_alternative<Untouched>(decide())) << "not a namespace the guard checks";
}

// Paths are compared as the paths they name: a node file's /dev//gpu1 is /dev/gpu1, mounted or
// given, and a container's own /dev/./gpu0 is its allocated /dev/gpu0.
TEST_F(InjectionTest, DeviceNodePathsAreComparedNormalised) {
  inventory.devices[1].deviceNodes[0].path = "/dev//gpu1";
  container = {{}, {}, at({"/dev/./gpu0", "/dev/gpuctl"})};
  EXPECT_TRUE(std::holds_alternative<Adjustment>(decide()));
  pod.annotations.erase(kClaimsAnnotation);
  container = {{}, {"/dev/gpu1"}, {}};
  EXPECT_EQ(refusal().reason, RefusalReason::kUnclaimedDevice);
  container = {{}, {}, at({"/dev/gpu1"})};
  EXPECT_EQ(refusal().reason, RefusalReason::kUnclaimedDevice);
}

// The kubelet says where it got the pod: a static pod (its file source) can carry any UID, so it
// holds no claim.
TEST_F(InjectionTest, APodNotFromTheApiServerHoldsNoClaim) {
  pod.annotations["kubernetes.io/config.source"] = "file";
  const Refusal r = refusal();
  EXPECT_EQ(r.reason, RefusalReason::kNotFromApiServer);
  pod.annotations["kubernetes.io/config.source"] = "api";
  EXPECT_TRUE(std::holds_alternative<Adjustment>(decide()));
}

TEST_F(InjectionTest, ADeviceAnotherPodsContainerStillHasIsRefused) {
  users["name:gpu0"] = {{"ctr-old", "main", "uid-old", "ns", "old"}};
  const Refusal r = refusal();
  EXPECT_EQ(r.reason, RefusalReason::kDeviceInUse);
  EXPECT_EQ(r.message,
            "device gpu0 of claim ns/c1 is still in use by container main of pod ns/old (uid "
            "uid-old) on node node-1, which has not stopped yet");
  // The pod's own other container is no obstacle, nor is a co-holder of a shared claim.
  users["name:gpu0"] = {{"ctr-side", "side", "uid-p", "ns", "p"}};
  EXPECT_TRUE(std::holds_alternative<Adjustment>(decide()));
  claims["c1"].shareable = true;
  claims["c1"].podRef.reset();
  claims["c1"].sharedHolders = {{"p", "uid-p"}, {"r", "uid-r"}};
  users["name:gpu0"] = {{"ctr-r", "main", "uid-r", "ns", "r"}};
  EXPECT_TRUE(std::holds_alternative<Adjustment>(decide()));
}

// The device another pod's container got under an older name (the node file's entry renamed
// since, or the device found by discovery as well) is that container's still: it is known by
// its ID within its resource, or by its CDI name.
TEST_F(InjectionTest, ADeviceAnotherPodsContainerHasUnderAnotherNameIsRefused) {
  users["id:example.com/gpu=GPU-0"] = {{"ctr-old", "main", "uid-old", "ns", "old"}};
  Refusal r = refusal();
  EXPECT_EQ(r.reason, RefusalReason::kDeviceInUse);
  EXPECT_EQ(r.message,
            "device gpu0 of claim ns/c1 is still in use by container main of pod ns/old (uid "
            "uid-old) on node node-1, which has not stopped yet (it has the same device, "
            "id:example.com/gpu=GPU-0)");
  users.clear();
  inventory.devices[0].cdiDevice = "example.com/gpu=GPU-0";
  cdiDevices = {"example.com/gpu=GPU-0"};
  users["cdi:example.com/gpu=GPU-0"] = {{"ctr-old", "main", "uid-old", "ns", "old"}};
  EXPECT_EQ(refusal().reason, RefusalReason::kDeviceInUse);
  // Another resource's device of the same ID is another device.
  users.clear();
  users["id:example.com/fpga=GPU-0"] = {{"ctr-old", "main", "uid-old", "ns", "old"}};
  EXPECT_TRUE(std::holds_alternative<Adjustment>(decide()));
}

// What the container is given is recorded by what it is, each key once.
TEST_F(InjectionTest, TheAdjustmentNamesTheKeysOfTheDevicesGiven) {
  claims["c1"] = claim("c1", {"gpu0", "gpu1"});
  claims["c1"].extendedResourceNum = 2;
  inventory.devices[1].cdiDevice = "example.com/gpu=GPU-1";
  cdiDevices = {"example.com/gpu=GPU-1"};
  const Adjustment adj = std::get<Adjustment>(decide());
  EXPECT_EQ(adj.deviceKeys,
            (std::vector<std::string>{"name:gpu0", "id:example.com/gpu=GPU-0", "name:gpu1",
                                      "id:example.com/gpu=GPU-1", "cdi:example.com/gpu=GPU-1"}));
}

// What a subPath mount reaches (read from the pod's spec) is guarded as a mount's source is.
TEST_F(InjectionTest, ASubPathMountReachingADeviceNodeIsRefused) {
  pod.annotations.clear();
  container.subPathSources = {"/dev"};
  const Refusal r = refusal();
  EXPECT_EQ(r.reason, RefusalReason::kUnclaimedDevice);
  EXPECT_NE(r.message.find("mounts /dev, which holds device node /dev/gpu"), std::string::npos)
      << r.message;
  container.subPathSources = {"/opt/lib"};
  EXPECT_TRUE(std::holds_alternative<Untouched>(decide()));
}

TEST_F(InjectionTest, APodWithoutClaimsIsUntouched) {
  pod.annotations.clear();
  EXPECT_TRUE(std::holds_alternative<Untouched>(decide()));
  pod.annotations[kClaimsAnnotation] = " , ";
  EXPECT_TRUE(std::holds_alternative<Untouched>(decide()));
}

TEST_F(InjectionTest, TheContainerGetsItsDevicesNodesEnvironmentAndMounts) {
  Injection inj = decide();
  ASSERT_TRUE(std::holds_alternative<Adjustment>(inj));
  const Adjustment& a = std::get<Adjustment>(inj);
  EXPECT_EQ(a.env, (std::vector<std::pair<std::string, std::string>>{
                       {"EXTENDED_RESOURCE_EXAMPLE_COM_GPU", "GPU-0"}, {"SLOT", "0"}}));
  ASSERT_EQ(a.devices.size(), 2u);
  EXPECT_EQ(a.devices[0].path, "/dev/gpu0");
  EXPECT_EQ(a.devices[0].info.major, 195);
  EXPECT_EQ(a.devices[0].info.minor, 0);
  EXPECT_EQ(a.devices[0].permissions, "rw");
  EXPECT_EQ(a.devices[1].path, "/dev/gpuctl");
  EXPECT_EQ(a.devices[1].permissions, "rwm");
  ASSERT_EQ(a.mounts.size(), 1u);
  EXPECT_EQ(a.mounts[0].destination, "/usr/local/lib/gpu");
  EXPECT_EQ(a.deviceNames, std::vector<std::string>{"gpu0"});
}

TEST_F(InjectionTest, SeveralDevicesShareOneVariableAndSharedNodesAndMountsOnce) {
  claims["c1"] = claim("c1", {"gpu1", "gpu0"});
  inventory.envNames["example.com/gpu"] = "NVIDIA_VISIBLE_DEVICES";
  Injection inj = decide();
  ASSERT_TRUE(std::holds_alternative<Adjustment>(inj));
  const Adjustment& a = std::get<Adjustment>(inj);
  EXPECT_EQ(a.env, (std::vector<std::pair<std::string, std::string>>{
                       {"NVIDIA_VISIBLE_DEVICES", "GPU-1,GPU-0"}, {"SLOT", "1,0"}}));
  ASSERT_EQ(a.devices.size(), 3u);  // gpu1, gpuctl once, gpu0
  EXPECT_EQ(a.devices[0].path, "/dev/gpu1");
  EXPECT_EQ(a.devices[1].path, "/dev/gpuctl");
  EXPECT_EQ(a.devices[2].path, "/dev/gpu0");
  EXPECT_EQ(a.mounts.size(), 1u);
}

TEST_F(InjectionTest, TwoClaimsOfTheSamePodAreBothInjected) {
  pod.annotations[kClaimsAnnotation] = "c1,c2";
  claims["c2"] = claim("c2", {"gpu1"});
  Injection inj = decide();
  ASSERT_TRUE(std::holds_alternative<Adjustment>(inj));
  EXPECT_EQ(std::get<Adjustment>(inj).deviceNames, (std::vector<std::string>{"gpu0", "gpu1"}));
}

TEST_F(InjectionTest, EveryHolderOfASharedClaimGetsItsDevices) {
  claims["c1"].shareable = true;
  claims["c1"].podRef.reset();
  claims["c1"].sharedHolders = {PodRef{"first", "uid-first"}, PodRef{"p", "uid-p"}};
  Injection inj = decide();
  ASSERT_TRUE(std::holds_alternative<Adjustment>(inj));
  EXPECT_EQ(std::get<Adjustment>(inj).deviceNames, std::vector<std::string>{"gpu0"});
  claims["c1"].sharedHolders.pop_back();
  Refusal r = refusal();
  EXPECT_EQ(r.reason, RefusalReason::kClaimOfOtherPod);
  EXPECT_NE(r.message.find("pod first (uid uid-first)"), std::string::npos) << r.message;
}

TEST_F(InjectionTest, AGarbledAnnotationIsRefused) {
  pod.annotations[kClaimsAnnotation] = "c1,Not_A_Name";
  EXPECT_EQ(refusal().reason, RefusalReason::kInvalidAnnotation);
}

TEST_F(InjectionTest, AMissingOrUnreadableClaimIsRefused) {
  claims.clear();
  Refusal r = refusal();
  EXPECT_EQ(r.reason, RefusalReason::kClaimNotFound);
  EXPECT_NE(r.message.find("ns/c1"), std::string::npos) << r.message;
  unreadable["c1"] = "connection refused";
  r = refusal();
  EXPECT_EQ(r.reason, RefusalReason::kClaimUnreadable);
  EXPECT_NE(r.message.find("connection refused"), std::string::npos) << r.message;
}

TEST_F(InjectionTest, AClaimNotBoundIsRefused) {
  claims["c1"].phase = ClaimPhase::kPending;
  EXPECT_EQ(refusal().reason, RefusalReason::kClaimNotBound);
  claims["c1"].phase = ClaimPhase::kLost;
  EXPECT_EQ(refusal().reason, RefusalReason::kClaimNotBound);
  claims["c1"].phase = ClaimPhase::kBound;
  claims["c1"].statusReadable = false;
  EXPECT_EQ(refusal().reason, RefusalReason::kClaimNotBound);
}

// The forged case: a pod that names another pod's claim (any user can write the annotation).
TEST_F(InjectionTest, AClaimBoundToAnotherPodOrNodeIsRefused) {
  claims["c1"].podRef = PodRef{"p", "uid-an-earlier-p"};
  Refusal r = refusal();
  EXPECT_EQ(r.reason, RefusalReason::kClaimOfOtherPod);
  EXPECT_NE(r.message.find("uid-an-earlier-p"), std::string::npos) << r.message;
  claims["c1"].podRef.reset();
  EXPECT_EQ(refusal().reason, RefusalReason::kClaimOfOtherPod);
  claims["c1"] = claim("c1", {"gpu0"});
  claims["c1"].nodeName = "node-2";
  EXPECT_EQ(refusal().reason, RefusalReason::kClaimOfOtherPod);
}

TEST_F(InjectionTest, ADeviceThisNodeDoesNotListIsRefused) {
  claims["c1"] = claim("c1", {"gpu9"});
  EXPECT_EQ(refusal().reason, RefusalReason::kDeviceNotOnNode);
  claims["c1"] = claim("c1", {"gpu0"});
  claims["c1"].rawResourceName = "example.com/other";
  EXPECT_EQ(refusal().reason, RefusalReason::kDeviceNotOnNode);
}

TEST_F(InjectionTest, AMissingDeviceNodeIsRefused) {
  nodes.erase("/dev/gpu0");
  missing = {"/dev/gpu0"};
  Refusal r = refusal();
  EXPECT_EQ(r.reason, RefusalReason::kDeviceNodeMissing);
  EXPECT_NE(r.message.find("/dev/gpu0"), std::string::npos) << r.message;
}

TEST_F(InjectionTest, DeviceNodePathsAreThoseOfTheAllocatedDevices) {
  ExtendedResourceClaim c = claim("c1", {"gpu1", "gpu9"});
  EXPECT_EQ(deviceNodePaths({&c}, inventory),
            (std::vector<std::string>{"/dev/gpu1", "/dev/gpuctl"}));
}

TEST(StartedWithoutDevicesTest, OnlyContainersOfPodsThatRequiredTheAgentAndLackItsMark) {
  PodIdentity pod;
  pod.annotations[kClaimsAnnotation] = "c1";
  pod.annotations[kRequiredPluginsAnnotation] = R"(["other", "agent"])";
  EXPECT_TRUE(startedWithoutDevices(pod, {}, "agent"));
  EXPECT_FALSE(startedWithoutDevices(pod, {{kInjectedAnnotation, "gpu0"}}, "agent"));
  // Bound before the agent was required: left alone.
  PodIdentity older = pod;
  older.annotations.erase(kRequiredPluginsAnnotation);
  EXPECT_FALSE(startedWithoutDevices(older, {}, "agent"));
  older.annotations[kRequiredPluginsAnnotation] = R"(["other"])";
  EXPECT_FALSE(startedWithoutDevices(older, {}, "agent"));
  // A pod that names no claims never needed the agent.
  PodIdentity plain;
  plain.annotations[kRequiredPluginsAnnotation] = R"(["agent"])";
  EXPECT_FALSE(startedWithoutDevices(plain, {}, "agent"));
}

// The guard's rule for containers that started without the agent skips pods that name claims
// (their own rule), namespaces it does not check, and every pod while it is off.
TEST(PlanGuardEvictions, OnlyCheckedClaimlessPodsAreStopped) {
  NodeFile file;
  DeviceSpec gpu;
  gpu.name = "gpu0";
  gpu.rawResourceName = "example.com/gpu";
  gpu.deviceID = "GPU-0";
  gpu.deviceNodes = {{"/dev/gpu0", "rw"}};
  file.devices = {gpu};
  std::map<std::string, PodIdentity> pods;
  for (const auto& [sandbox, ns, claims] :
       {std::tuple<std::string, std::string, std::string>{"s-free", "ns", ""},
        {"s-system", "kube-system", ""},
        {"s-claims", "ns", "c1"}}) {
    PodIdentity pod;
    pod.ns = ns;
    pod.name = sandbox;
    pod.uid = "uid-" + sandbox;
    if (!claims.empty()) {
      pod.annotations[kClaimsAnnotation] = claims;
    }
    pods[sandbox] = pod;
  }
  std::vector<RuntimeContainer> containers;
  for (const char* sandbox : {"s-free", "s-system", "s-claims"}) {
    RuntimeContainer c;
    c.id = std::string("ctr-") + sandbox;
    c.name = "app";
    c.podSandboxId = sandbox;
    c.running = true;
    c.pid = 7;
    c.request.devices = at({"/dev/gpu0"});
    containers.push_back(c);
  }
  DeviceGuard guard{.enabled = true, .exemptNamespaces = {"kube-system"}};
  RuntimeContainer agent = containers[0];
  agent.id = "ctr-agent";
  agent.pid = 9;  // the agent itself
  agent.request.devices.clear();
  agent.request.mountSources = {"/dev"};
  containers.push_back(agent);
  const auto plan = planGuardEvictions(pods, containers, &file, {}, {}, guard, "agent", 9);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].containerId, "ctr-s-free");
  EXPECT_EQ(plan[0].reason,
            "container app of pod ns/s-free started without agent: the container is given device "
            "node /dev/gpu0 (privileged?) of a device it was not allocated");
  guard.enabled = false;
  EXPECT_TRUE(planGuardEvictions(pods, containers, &file, {}, {}, guard, "agent", 9).empty());

  // One that mounts an alias of gpu0's node (another path, the same number).
  guard.enabled = true;
  containers[0].request.devices.clear();
  containers[0].request.mountedNodes = {{"/var/alias", {'c', 195, 0}}};
  EXPECT_TRUE(planGuardEvictions(pods, containers, &file, {}, {}, guard, "agent", 9).empty())
      << "numbers unknown";
  const auto byNumber = planGuardEvictions(pods, containers, &file, {{{'c', 195, 0}, "/dev/gpu0"}},
                                           {}, guard, "agent", 9);
  ASSERT_EQ(byNumber.size(), 1u);
  EXPECT_EQ(byNumber[0].containerId, "ctr-s-free");
}

TEST(PlanEvictionsTest, StopsOnlyRunningContainersThatStartedWithoutTheAgent) {
  PodIdentity pod;
  pod.ns = "ns";
  pod.name = "p";
  pod.annotations[kClaimsAnnotation] = "c1";
  pod.annotations[kRequiredPluginsAnnotation] = R"(["agent"])";
  PodIdentity plain;
  plain.ns = "ns";
  plain.name = "plain";
  const std::map<std::string, PodIdentity> pods{{"sb-1", pod}, {"sb-2", plain}};
  auto ctr = [](std::string id, std::string sandbox, bool running, uint32_t pid, bool injected) {
    RuntimeContainer c{.id = std::move(id),
                       .name = "main",
                       .podSandboxId = std::move(sandbox),
                       .running = running,
                       .pid = pid,
                       .annotations = {}};
    if (injected) {
      c.annotations[kInjectedAnnotation] = "gpu0";
    }
    return c;
  };
  std::vector<Eviction> plan = planEvictions(
      pods,
      {ctr("slipped", "sb-1", true, 10, false), ctr("injected", "sb-1", true, 11, true),
       // Not started yet: no process to stop (its start is seen later).
       ctr("created", "sb-1", false, 0, false), ctr("exited", "sb-1", false, 0, false),
       // A pod that names no claims; a sandbox the runtime did not list.
       ctr("plain", "sb-2", true, 12, false), ctr("orphan", "sb-9", true, 13, false)},
      "agent");
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].containerId, "slipped");
  EXPECT_EQ(plan[0].pid, 10u);
  EXPECT_EQ(plan[0].pod, "ns/p");
  EXPECT_EQ(plan[0].reason, "container main of pod ns/p started without agent");
}

TEST(RequiredPluginsTest, ReadAsNrisValidatorReadsThem) {
  EXPECT_TRUE(requiredPlugins({}).empty());
  EXPECT_EQ(requiredPlugins({{kRequiredPluginsAnnotation, R"(["a","b"])"},
                             {"required-plugins.noderesource.dev", R"(["c"])"}}),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(requiredPlugins({{"required-plugins.noderesource.dev", R"(["c"])"}}),
            std::vector<std::string>{"c"});
  EXPECT_TRUE(requiredPlugins({{kRequiredPluginsAnnotation, R"(["a", 1])"}}).empty());
}

TEST(RequiredPluginsTest, TheAgentIsAddedToThePodsOwnList) {
  EXPECT_EQ(requiredPluginsValue({}, "agent"), R"(["agent"])");
  EXPECT_EQ(requiredPluginsValue({{kRequiredPluginsAnnotation, R"(["a"])"}}, "agent"),
            R"(["a","agent"])");
  EXPECT_EQ(requiredPluginsValue({{"required-plugins.noderesource.dev", R"(["b"])"}}, "agent"),
            R"(["b","agent"])");
  EXPECT_EQ(requiredPluginsValue({{kRequiredPluginsAnnotation, R"(["agent"])"}}, "agent"),
            R"(["agent"])");
  EXPECT_EQ(requiredPluginsValue({{kRequiredPluginsAnnotation, "not json"}}, "agent"),
            R"(["agent"])");
  EXPECT_EQ(requiredPluginsValue({{kRequiredPluginsAnnotation, "[1]"}}, "agent"), R"(["agent"])");
}

// Another pod's container on this node still has the device: refused; a co-holder of the same
// shared claim, or the pod's own other container, is no obstacle.
TEST(DeviceUsersTest, TheRuntimesContainersThatHaveADevice) {
  DeviceUsers users;
  PodIdentity p{"uid-p", "ns", "p", {}};
  RuntimeContainer running{"c1",
                           "main",
                           "sb-p",
                           true,
                           false,
                           10,
                           {{kInjectedAnnotation, "d0,d1"},
                            {kInjectedKeysAnnotation, R"(["name:d0","name:d1","id:r=1"])"}}};
  RuntimeContainer stopped{"c2", "old", "sb-p", false, true, 0, {{kInjectedAnnotation, "d2"}}};
  RuntimeContainer plain{"c3", "side", "sb-p", true, false, 11, {}};
  users.reset({{"sb-p", p}}, {running, stopped, plain}, {});
  const auto found = users.of({"name:d1", "name:d2", "id:r=1"});
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found.at("name:d1"), (std::vector<DeviceUse>{{"c1", "main", "uid-p", "ns", "p"}}));
  EXPECT_EQ(found.at("id:r=1"), (std::vector<DeviceUse>{{"c1", "main", "uid-p", "ns", "p"}}));
  Adjustment given;
  given.deviceNames = {"d2"};
  given.deviceKeys = {"name:d2", "id:r=2"};
  users.add("c4", {"c4", "x", "uid-q", "ns", "q"}, given);
  EXPECT_EQ(users.of({"id:r=2"}).at("id:r=2").size(), 1u);
  users.remove("c1");
  EXPECT_TRUE(users.of({"name:d0", "name:d1", "id:r=1"}).empty());
  EXPECT_EQ(injectedDevices({{kInjectedAnnotation, "a,,b"}}), (std::vector<std::string>{"a", "b"}));
}

// A container given its devices by an agent that wrote no keys (or keys that do not read) is
// known by their names, and by the keys of those the inventory still lists.
TEST(DeviceUsersTest, AContainerWithoutKeysIsKnownByItsDevicesNamesAndWhatTheyAreNow) {
  DeviceUsers users;
  NodeFile inventory;
  inventory.devices = {DeviceSpec{.name = "d0", .rawResourceName = "r", .deviceID = "0"}};
  RuntimeContainer older{"c1", "main", "sb-p", true, false, 10, {{kInjectedAnnotation, "d0,gone"}}};
  RuntimeContainer garbled{"c2",
                           "side",
                           "sb-p",
                           true,
                           false,
                           11,
                           {{kInjectedAnnotation, "d0"}, {kInjectedKeysAnnotation, "[1]"}}};
  users.reset({{"sb-p", PodIdentity{"uid-p", "ns", "p", {}}}}, {older, garbled},
              knownKeys(inventory, {}));
  const auto found = users.of({"id:r=0", "name:gone"});
  EXPECT_EQ(found.at("id:r=0").size(), 2u);
  EXPECT_EQ(found.at("name:gone").size(), 1u);
}

// A name the inventory no longer lists is still known by what the device is while this node's
// published ExtendedResource of that name says it; an invalid object adds nothing but its name.
TEST(DeviceUsersTest, APublishedDeviceTellsWhatANameTheInventoryDroppedWas) {
  NodeFile inventory;
  inventory.devices = {DeviceSpec{.name = "new", .rawResourceName = "r", .deviceID = "0"}};
  ExtendedResource old;
  old.meta.name = "old";
  old.rawResourceName = "r";
  old.deviceID = "0";
  ExtendedResource broken = old;
  broken.meta.name = "broken";
  broken.deviceID = "1";
  broken.invalid = "spec.deviceID: not a string";
  const KeysByName known = knownKeys(inventory, {old, broken});
  EXPECT_EQ(known.at("new"), (std::vector<std::string>{"name:new", "id:r=0"}));
  EXPECT_EQ(known.at("old"), (std::vector<std::string>{"name:old", "id:r=0"}));
  EXPECT_EQ(known.at("broken"), (std::vector<std::string>{"name:broken"}));

  DeviceUsers users;
  RuntimeContainer older{"c1", "main", "sb-p", true, false, 10, {{kInjectedAnnotation, "old"}}};
  users.reset({{"sb-p", PodIdentity{"uid-p", "ns", "p", {}}}}, {older}, known);
  EXPECT_EQ(users.of({"id:r=0"}).at("id:r=0").size(), 1u);
}

// The runtime's list comes again (the runtime restarted) after the device's old name left both
// the inventory and the API: the container keeps the keys it was known by, so the device is
// not free under its new name.
TEST(DeviceUsersTest, AContainerListedAgainKeepsTheKeysItWasKnownBy) {
  DeviceUsers users;
  NodeFile inventory;
  inventory.devices = {DeviceSpec{.name = "old", .rawResourceName = "r", .deviceID = "0"}};
  RuntimeContainer older{"c1", "main", "sb-p", true, false, 10, {{kInjectedAnnotation, "old"}}};
  RuntimeContainer other{"c2", "main", "sb-q", true, false, 11, {{kInjectedAnnotation, "x"}}};
  const std::map<std::string, PodIdentity> pods{{"sb-p", PodIdentity{"uid-p", "ns", "p", {}}},
                                                {"sb-q", PodIdentity{"uid-q", "ns", "q", {}}}};
  users.reset(pods, {older, other}, knownKeys(inventory, {}));
  ASSERT_EQ(users.of({"id:r=0"}).size(), 1u);

  users.reset(pods, {older}, {});
  EXPECT_EQ(users.of({"id:r=0"}).at("id:r=0"),
            (std::vector<DeviceUse>{{"c1", "main", "uid-p", "ns", "p"}}));
  EXPECT_TRUE(users.of({"name:x"}).empty()) << "a container no longer listed is forgotten";
}

// A device with a CDI name is passed to the runtime by that name, once however many of the
// container's devices share it, beside what the node file lists; one whose name no spec
// defines is refused, naming the device and the directories.
TEST_F(InjectionTest, ADevicesCdiNameIsPassedOnWhenASpecDefinesIt) {
  inventory.devices[0].cdiDevice = "example.com/gpu=GPU-0";
  inventory.devices[1].cdiDevice = "example.com/gpu=all";
  claims["c1"] = claim("c1", {"gpu0", "gpu1"});
  cdiDevices = {"example.com/gpu=GPU-0", "example.com/gpu=GPU-1", "example.com/gpu=all"};
  Injection inj = decide();
  ASSERT_TRUE(std::holds_alternative<Adjustment>(inj));
  const auto& adj = std::get<Adjustment>(inj);
  EXPECT_EQ(adj.cdiDevices,
            (std::vector<std::string>{"example.com/gpu=GPU-0", "example.com/gpu=all"}));
  EXPECT_EQ(adj.deviceNames, (std::vector<std::string>{"gpu0", "gpu1"}));
  EXPECT_EQ(adj.devices.size(), 3u);  // the node file's device nodes still come

  cdiDevices.erase("example.com/gpu=all");
  Refusal r = refusal();
  EXPECT_EQ(r.reason, RefusalReason::kCdiDeviceUnknown);
  EXPECT_EQ(r.message,
            "CDI device example.com/gpu=all of device gpu1 is in no spec under /etc/cdi,"
            "/var/run/cdi on node node-1, so the runtime cannot inject it");
}

// A claim made from a class splits its devices among the containers that asked for them: each
// gets its share, an init container the devices it uses before the app containers start, and a
// container without a share gets none of them, and is refused if it reaches one on its own.
TEST_F(InjectionTest, EachContainerGetsItsShareOfAClassClaim) {
  ExtendedResourceClaim c = claim("c1", {"gpu0", "gpu1"});
  c.extendedResourceNum = 2;
  c.containers = {{"prep", 1, ContainerKind::kInit},
                  {"main", 1, ContainerKind::kApp},
                  {"aux", 1, ContainerKind::kApp}};
  claims["c1"] = c;
  auto devicesOf = [&](const std::string& name) {
    container.name = name;
    Injection inj = decide();
    EXPECT_TRUE(std::holds_alternative<Adjustment>(inj)) << name;
    return std::holds_alternative<Adjustment>(inj) ? std::get<Adjustment>(inj) : Adjustment{};
  };
  EXPECT_EQ(devicesOf("prep").deviceNames, std::vector<std::string>{"gpu0"});
  EXPECT_EQ(devicesOf("main").deviceNames, std::vector<std::string>{"gpu0"});
  const Adjustment aux = devicesOf("aux");
  EXPECT_EQ(aux.deviceNames, std::vector<std::string>{"gpu1"});
  EXPECT_EQ(aux.env, (std::vector<std::pair<std::string, std::string>>{
                         {"EXTENDED_RESOURCE_EXAMPLE_COM_GPU", "GPU-1"}, {"SLOT", "1"}}));
  ASSERT_EQ(aux.devices.size(), 2u);
  EXPECT_EQ(aux.devices[0].path, "/dev/gpu1");
  // A sibling without a share is still marked as answered, with nothing.
  const Adjustment logger = devicesOf("logger");
  EXPECT_TRUE(logger.deviceNames.empty());
  EXPECT_TRUE(logger.devices.empty());
  EXPECT_TRUE(logger.env.empty());
  container.devices = at({"/dev/gpu1"});  // privileged
  const Refusal r = refusal();
  EXPECT_EQ(r.reason, RefusalReason::kUnclaimedDevice);
  EXPECT_EQ(r.message,
            "the container is given device node /dev/gpu1 (privileged?) of a device it was not "
            "allocated");
}

// The checks see only the devices the container gets: another pod's container still holding
// gpu1 holds up the container given gpu1, not its sibling given gpu0.
TEST_F(InjectionTest, OnlyTheDevicesOfTheContainersShareAreChecked) {
  ExtendedResourceClaim c = claim("c1", {"gpu0", "gpu1"});
  c.extendedResourceNum = 2;
  c.containers = {{"main", 1, ContainerKind::kApp}, {"aux", 1, ContainerKind::kApp}};
  claims["c1"] = c;
  users["name:gpu1"] = {{"ctr-old", "main", "uid-old", "ns", "old"}};
  missing = {"/dev/gpu1"};
  nodes.erase("/dev/gpu1");
  container.name = "main";
  EXPECT_TRUE(std::holds_alternative<Adjustment>(decide()));
  container.name = "aux";
  EXPECT_EQ(refusal().reason, RefusalReason::kDeviceInUse);
  users.clear();
  EXPECT_EQ(refusal().reason, RefusalReason::kDeviceNodeMissing);
}

// A pod asking for a resource a class serves runs only with the claim made for it: one bound by
// a scheduler that never called the extender has none, and is refused rather than started
// without the devices it asked for.
TEST_F(InjectionTest, AClassRequestWithoutItsClaimIsRefused) {
  pod.annotations.erase(kClaimsAnnotation);
  requests["example.com/gpu"] = {{"main", 1, ContainerKind::kApp}};
  // No class serves it (a device plugin's resource, say): not the agent's.
  EXPECT_TRUE(std::holds_alternative<Untouched>(decide()));
  classes = gpuClass();
  Refusal r = refusal();
  EXPECT_EQ(r.reason, RefusalReason::kClassClaimMissing);
  EXPECT_STREQ(toString(r.reason), "ClassClaimMissing");
  EXPECT_EQ(r.message,
            "pod ns/p asks for example.com/gpu, which ExtendedResourceClass gpu serves, but no "
            "claim was made for it (was it scheduled by default-scheduler, other than the profile "
            "the extended-resource scheduler serves?)");
  // The claims annotation is no record of a class's claim.
  pod.annotations[kClaimsAnnotation] = "c1";
  EXPECT_EQ(refusal().reason, RefusalReason::kClassClaimMissing);
  // The record names it: the claim's own checks decide.
  pod.annotations.erase(kClaimsAnnotation);
  pod.annotations[kGeneratedClaimsAnnotation] = R"({"example.com/gpu": "c1"})";
  Injection inj = decide();
  ASSERT_TRUE(std::holds_alternative<Adjustment>(inj));
  EXPECT_EQ(std::get<Adjustment>(inj).deviceNames, std::vector<std::string>{"gpu0"});
  claims["c1"].podRef = PodRef{"q", "uid-q"};
  EXPECT_EQ(refusal().reason, RefusalReason::kClaimOfOtherPod);
}

// What cannot be read refuses the container (the kubelet retries it); a static pod, which has no
// API object of its UID, is not asked.
TEST_F(InjectionTest, APodWhoseRequestsCannotBeKnownIsRefused) {
  pod.annotations.erase(kClaimsAnnotation);
  classes = gpuClass();
  podUnreadable = "connection refused";
  Refusal r = refusal();
  EXPECT_EQ(r.reason, RefusalReason::kPodUnreadable);
  EXPECT_EQ(r.message,
            "pod ns/p cannot be read to tell what it asks for (the extended resources of its "
            "containers, the host paths of their subPath mounts, the variables their spec sets): "
            "connection refused");
  podUnreadable.clear();
  requests["example.com/gpu"] = {{"main", 1, ContainerKind::kApp}};
  classes.reset();
  EXPECT_EQ(refusal().reason, RefusalReason::kPodUnreadable);
  requests.clear();
  EXPECT_TRUE(std::holds_alternative<Untouched>(decide()));
  requests["example.com/gpu"] = {{"main", 1, ContainerKind::kApp}};
  classes = gpuClass();
  pod.annotations["kubernetes.io/config.source"] = "file";
  EXPECT_TRUE(std::holds_alternative<Untouched>(decide()));
}

TEST_F(InjectionTest, DevicesWithoutACdiNameNameNone) {
  Injection inj = decide();
  ASSERT_TRUE(std::holds_alternative<Adjustment>(inj));
  EXPECT_TRUE(std::get<Adjustment>(inj).cdiDevices.empty());
}

}  // namespace
}  // namespace ker::agent

// NodeSync, the node agent's only writer to the API, against a fake API: it publishes the node
// file's devices, follows edits of the file, reports health through the model's transitions,
// and never takes over a name another object holds.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "agent/node_sync.h"
#include "fake_api_client.h"
#include "model/device_transitions.h"
#include "model/objects.h"
#include "model/reasons.h"
#include "test/unit/eventually.h"

namespace ker::agent {
namespace {

using namespace std::chrono_literals;
using testing::FakeApiClient;

using testing::eventually;

// /dev/null is a character device on every Linux host: a device node that is there.
std::string nodeFile(const std::vector<std::pair<std::string, std::string>>& devices) {
  std::string out =
      "resources:\n  - rawResourceName: example.com/gpu\n    envName: GPUS\ndevices:\n";
  for (const auto& [name, path] : devices) {
    out += "  - name: " + name + "\n    rawResourceName: example.com/gpu\n    deviceID: " + name +
           "-id\n    properties: {model: k80}\n    deviceNodes:\n      - path: " + path + "\n";
  }
  return out;
}

class NodeSyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ker-node-sync-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    file_ = (dir_ / "node.yaml").string();
  }
  void TearDown() override {
    if (sync_) {
      sync_->stop();
    }
    devices_.stop();
    claims_.stop();
    events_.stop();
    std::filesystem::remove_all(dir_);
  }

  void write(const std::string& text) {
    // Replaced whole, as an editor or a ConfigMap update does.
    const std::string tmp = file_ + ".tmp";
    std::ofstream(tmp) << text;
    std::filesystem::rename(tmp, file_);
  }

  void start() {
    devices_.start();
    claims_.start();
    ASSERT_TRUE(devices_.waitForSync(5s) && claims_.waitForSync(5s));
    events_.start();
    startSync();
  }

  // The node file lists n1-gpu0; the agent starts and publishes it.
  void startWithGpu0() {
    write(nodeFile({{"n1-gpu0", "/dev/null"}}));
    start();
    ASSERT_TRUE(eventually([&] { return device("n1-gpu0").has_value(); }));
  }

  // Where the agent keeps its copy of the last node file that parsed.
  std::filesystem::path keptCopy() const { return dir_ / "state" / "last-node-file.yaml"; }

  // A new NodeSync, as an agent that starts again, on the informers already synced.
  void startSync() {
    if (sync_) {
      sync_->stop();
    }
    sync_ = std::make_unique<NodeSync>(
        NodeSync::Options{
            .node = "n1", .nodeFile = file_, .stateDir = (dir_ / "state").string(), .period = 20ms},
        api_, devices_, claims_, probe_, events_, metrics_);
    sync_->start();
  }

  std::optional<ExtendedResource> device(const std::string& name) {
    auto obj = api_.peek(resources::kExtendedResources, "", name);
    return obj ? std::optional(ExtendedResource::fromJson(*obj)) : std::nullopt;
  }

  // Applies `change` to the device's status as another component would, until a write of it
  // goes through (the agent's own writes race with it).
  bool changeStatus(const std::string& name,
                    const std::function<Status(ExtendedResource&)>& change) {
    return eventually([&] {
      auto d = device(name);
      if (!d || !change(*d).ok()) {
        return false;
      }
      try {
        api_.updateStatus(resources::kExtendedResources, "",
                          d->toJson(std::chrono::system_clock::now()));
        return true;
      } catch (const ApiError&) {
        return false;
      }
    });
  }

  // Binds the device to `claim` for pod p, once it is Available.
  bool bind(const std::string& name, const ClaimRef& claim) {
    return changeStatus(name, [&](ExtendedResource& d) {
      if (d.phase != DevicePhase::kAvailable) {
        return Status::failedPrecondition("not initialised yet");
      }
      return bindDevice(d, claim, 1, {{"p", "uid-p"}});
    });
  }

  bool eventWithReason(const std::string& reason) {
    const auto events = api_.list(resources::kEvents, "", {});
    for (const auto& e : events["items"]) {
      if (e.value("reason", "") == reason) {
        return true;
      }
    }
    return false;
  }

  std::filesystem::path dir_;
  std::string file_;
  FakeApiClient api_;
  Informer<ExtendedResource> devices_{
      api_,
      resources::kExtendedResources,
      {.name = "node-devices", .labelSelector = managedSelector("n1")}};
  Informer<ExtendedResourceClaim> claims_{
      api_, resources::kExtendedResourceClaims, {.name = "node-claims"}};
  EventRecorder events_{api_, {.component = "extended-resource-node-agent", .instance = "n1"}};
  DeviceProbe probe_{""};
  metrics::Registry registry_;
  AgentMetrics metrics_{registry_};
  std::unique_ptr<NodeSync> sync_;
};

TEST_F(NodeSyncTest, PublishesTheNodeFilesDevicesAsItsOwnAndProtected) {
  write(nodeFile({{"n1-gpu0", "/dev/null"}, {"n1-gpu1", "/dev/null"}}));
  start();
  ASSERT_TRUE(eventually([&] { return device("n1-gpu0") && device("n1-gpu1"); }));
  const ExtendedResource d = *device("n1-gpu0");
  EXPECT_EQ(d.rawResourceName, "example.com/gpu");
  EXPECT_EQ(d.deviceID, "n1-gpu0-id");
  EXPECT_EQ(d.properties.at("model"), "k80");
  EXPECT_EQ(d.meta.labels.at(kNodeLabel), "n1");
  EXPECT_EQ(d.meta.labels.at(kManagedByLabel), kManagedByValue);
  EXPECT_NE(
      std::find(d.meta.finalizers.begin(), d.meta.finalizers.end(), kDeviceProtectionFinalizer),
      d.meta.finalizers.end());
  EXPECT_TRUE(sync_->fileCurrent());
  EXPECT_EQ(sync_->inventory()->devices.size(), 2u);
}

TEST_F(NodeSyncTest, FollowsTheFileADeviceRemovedFromItIsWithdrawn) {
  write(nodeFile({{"n1-gpu0", "/dev/null"}, {"n1-gpu1", "/dev/null"}}));
  start();
  ASSERT_TRUE(eventually([&] { return device("n1-gpu1").has_value(); }));
  write(nodeFile({{"n1-gpu0", "/dev/null"}}));
  EXPECT_TRUE(eventually([&] {
    auto d = device("n1-gpu1");
    return !d || d->meta.deleting;
  }));
  EXPECT_FALSE(device("n1-gpu0")->meta.deleting);
}

// An entry removed while a claim holds the device (its pod running, or bound and about to start)
// must not take the device from the claim: it is kept, marked, and its holder warned; the entry
// coming back clears the mark, and only a device its claim freed is withdrawn.
TEST_F(NodeSyncTest, AHeldDeviceRemovedFromTheFileIsKeptUntilItsClaimFreesIt) {
  ASSERT_NO_FATAL_FAILURE(startWithGpu0());
  auto writeStatus = [&](const std::function<Status(ExtendedResource&)>& change) {
    return changeStatus("n1-gpu0", change);
  };
  const ClaimRef claim{"ns", "c", "uid-c"};
  ASSERT_TRUE(bind("n1-gpu0", claim));

  write(nodeFile({}));
  ASSERT_TRUE(eventually([&] {
    auto d = device("n1-gpu0");
    return d && parseReason(d->reason) == Reason::kDeviceNotListed;
  }));
  ExtendedResource kept = *device("n1-gpu0");
  EXPECT_FALSE(kept.meta.deleting);
  EXPECT_EQ(kept.phase, DevicePhase::kBound);
  EXPECT_NE(kept.message.find("node file"), std::string::npos) << kept.message;
  EXPECT_TRUE(eventually([&] { return eventWithReason("DeviceNotListed"); }));
  std::this_thread::sleep_for(100ms);  // five periods: still there
  EXPECT_FALSE(device("n1-gpu0")->meta.deleting);

  write(nodeFile({{"n1-gpu0", "/dev/null"}}));
  ASSERT_TRUE(eventually([&] {
    auto d = device("n1-gpu0");
    return d && d->reason.empty() && d->phase == DevicePhase::kBound;
  }));

  write(nodeFile({}));
  ASSERT_TRUE(eventually([&] {
    auto d = device("n1-gpu0");
    return d && parseReason(d->reason) == Reason::kDeviceNotListed;
  }));
  ASSERT_TRUE(writeStatus([&](ExtendedResource& d) { return freeDevice(d, "released", claim); }));
  EXPECT_TRUE(eventually([&] {
    auto d = device("n1-gpu0");
    return !d || d->meta.deleting;
  }));
}

TEST_F(NodeSyncTest, AnInvalidFileKeepsTheLastGoodInventory) {
  ASSERT_NO_FATAL_FAILURE(startWithGpu0());
  write("devices: [this is not a device list");
  EXPECT_TRUE(eventually([&] { return !sync_->fileCurrent(); }));
  EXPECT_TRUE(device("n1-gpu0")) << "nothing is unpublished for a file that does not parse";
  EXPECT_EQ(sync_->inventory()->devices.size(), 1u);
}

// An agent restarted with a file that does not parse (one device under two names, say) has
// read no list of devices: it withdraws none of those an earlier run published.
TEST_F(NodeSyncTest, AnAgentStartedWithAnInvalidFileWithdrawsNothing) {
  DeviceSpec gpu{.name = "n1-gpu0", .rawResourceName = "example.com/gpu", .deviceID = "GPU-0"};
  api_.create(resources::kExtendedResources, "", desiredObject(gpu, "n1"));
  write("devices: [this is not a device list");
  start();
  std::this_thread::sleep_for(300ms);  // fifteen sync periods
  EXPECT_FALSE(sync_->fileCurrent());
  auto withdrawn = [&] {
    auto d = device("n1-gpu0");
    return !d || d->meta.deleting;  // its protection finalizer keeps it until the controller
  };
  EXPECT_FALSE(withdrawn()) << "withdrawn for a file that never parsed";
  write("devices: []\n");
  EXPECT_TRUE(eventually(withdrawn)) << "a file that parses is followed";
}

// A node without a node file, and without a kept copy, has no devices: an empty inventory is in
// force (the guard has nothing to check), not none (it would refuse every /dev mount). Its file
// turning up broken puts nothing in force; a file that parses, its devices.
TEST_F(NodeSyncTest, ANodeWithoutANodeFileHasNoDevices) {
  start();
  ASSERT_NE(sync_->inventory(), nullptr);
  EXPECT_TRUE(sync_->inventory()->devices.empty());
  EXPECT_TRUE(sync_->fileCurrent()) << "no file and no devices is what the node says";
  write("devices: [this is not a device list");
  EXPECT_TRUE(eventually([&] { return sync_->inventory() == nullptr; }));
  EXPECT_FALSE(sync_->fileCurrent());
  write(nodeFile({{"n1-gpu0", "/dev/null"}}));
  EXPECT_TRUE(eventually([&] {
    const auto inForce = sync_->inventory();
    return inForce && inForce->devices.size() == 1;
  }));
}

// A node file deleted where no copy was kept (an agent upgraded from a release that kept none):
// the published devices show the node had one, so their device nodes are unknown and the agent
// fails closed rather than guard nothing. The devices are not withdrawn meanwhile.
TEST_F(NodeSyncTest, ANodeWhoseFileIsGoneButWhoseDevicesArePublishedKnowsNoDevice) {
  ASSERT_NO_FATAL_FAILURE(startWithGpu0());
  ASSERT_TRUE(eventually([&] { return devices_.get("n1-gpu0") != nullptr; }));
  sync_->stop();
  std::filesystem::remove(file_);
  std::filesystem::remove(keptCopy());
  startSync();
  EXPECT_EQ(sync_->inventory(), nullptr) << "in force from the start: nothing";
  EXPECT_FALSE(sync_->fileCurrent());
  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(device("n1-gpu0").has_value());
  EXPECT_FALSE(device("n1-gpu0")->meta.deleting) << "withdrawn for a file that is gone";
  api_.patch(resources::kExtendedResources, "", "n1-gpu0", PatchType::kMerge,
             {{"metadata", {{"finalizers", nullptr}}}});
  api_.remove(resources::kExtendedResources, "", "n1-gpu0");
  EXPECT_TRUE(eventually([&] {
    const auto inForce = sync_->inventory();
    return inForce && inForce->devices.empty();
  })) << "once no device of the node is published, the node has none";
  EXPECT_TRUE(sync_->fileCurrent());
}

// While no node file is in force the agent gives no device, so its free devices are taken out
// of offer (pods go elsewhere rather than be placed here and refused); a held one stays with its
// pod. A file that parses puts the free ones back.
TEST_F(NodeSyncTest, WhileNoFileIsInForceFreeDevicesAreNotOfferedAndHeldOnesStay) {
  write(nodeFile({{"n1-gpu0", "/dev/null"}, {"n1-gpu1", "/dev/null"}, {"n1-gpu2", "/dev/null"}}));
  // A Bound claim listing n1-gpu2, which is Available (restored without its status, say): the
  // controller binds it back, which it does only while the device is Available.
  api_.seed(resources::kExtendedResourceClaims,
            {{"apiVersion", "extendedresource.io/v1alpha1"},
             {"kind", "ExtendedResourceClaim"},
             {"metadata", {{"namespace", "ns"}, {"name", "restored"}, {"uid", "uid-r"}}},
             {"spec", {{"rawResourceName", "example.com/gpu"}, {"extendedResourceNum", 1}}},
             {"status",
              {{"phase", "Bound"},
               {"nodeName", "n1"},
               {"podRef", {{"name", "q"}, {"uid", "uid-q"}}},
               {"extendedResourceNames", {"n1-gpu2"}}}}});
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_TRUE(bind("n1-gpu1", {"ns", "c", "uid-c"}));
  ASSERT_TRUE(eventually([&] {
    auto free = devices_.get("n1-gpu0");
    auto held = devices_.get("n1-gpu1");
    return free && free->phase == DevicePhase::kAvailable && held &&
           held->phase == DevicePhase::kBound;
  }));
  sync_->stop();
  std::filesystem::remove(keptCopy());
  write("devices: [this is not a device list");
  startSync();
  ASSERT_EQ(sync_->inventory(), nullptr);
  ASSERT_TRUE(eventually([&] {
    auto d = device("n1-gpu0");
    return d && d->phase == DevicePhase::kPending && parseReason(d->reason) == Reason::kNoNodeFile;
  })) << "a free device is offered while the agent would refuse it";
  const std::string written = device("n1-gpu0")->meta.resourceVersion;
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(device("n1-gpu0")->meta.resourceVersion, written) << "written again at each sync";
  EXPECT_EQ(device("n1-gpu1")->phase, DevicePhase::kBound);
  EXPECT_TRUE(device("n1-gpu1")->reason.empty()) << device("n1-gpu1")->message;
  EXPECT_FALSE(eventWithReason("DeviceUnhealthy")) << "the pod holding n1-gpu1 was warned";
  EXPECT_EQ(device("n1-gpu2")->phase, DevicePhase::kAvailable)
      << "a device a claim lists was withheld before it could be bound back";

  write(nodeFile({{"n1-gpu0", "/dev/null"}, {"n1-gpu1", "/dev/null"}, {"n1-gpu2", "/dev/null"}}));
  EXPECT_TRUE(eventually([&] {
    auto d = device("n1-gpu0");
    return d && d->phase == DevicePhase::kAvailable && d->reason.empty();
  }));
}

// The devices an agent published stay in force across a restart with a broken file, so the
// DeviceGuard still knows their device nodes and their pods still get them.
TEST_F(NodeSyncTest, AnAgentRestartedWithAnInvalidFileHasTheDevicesOfTheLastFileThatParsed) {
  ASSERT_NO_FATAL_FAILURE(startWithGpu0());
  write("devices: [this is not a device list");
  startSync();
  ASSERT_EQ(sync_->inventory()->devices.size(), 1u) << "in force from the start";
  EXPECT_EQ(sync_->inventory()->devices[0].deviceNodes.at(0).path, "/dev/null");
  EXPECT_FALSE(sync_->fileCurrent());
  std::this_thread::sleep_for(300ms);  // fifteen sync periods
  ASSERT_TRUE(device("n1-gpu0").has_value());
  EXPECT_FALSE(device("n1-gpu0")->meta.deleting);
  write("devices: []\n");
  EXPECT_TRUE(eventually([&] {
    auto d = device("n1-gpu0");
    return !d || d->meta.deleting;
  })) << "a file that parses is followed";
  EXPECT_TRUE(sync_->fileCurrent());
}

TEST_F(NodeSyncTest, AGarbledKeptCopyIsNotUsed) {
  ASSERT_NO_FATAL_FAILURE(startWithGpu0());
  sync_->stop();
  std::ofstream(keptCopy()) << "devices: [garbled";
  write("devices: [this is not a device list");
  startSync();
  EXPECT_EQ(sync_->inventory(), nullptr) << "no device known";
  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(device("n1-gpu0").has_value());
  EXPECT_FALSE(device("n1-gpu0")->meta.deleting) << "withdrawn for a file that never parsed";
}

// An agent that starts again with the same file leaves the kept copy as it is: no write, no
// sync of the state folder at every start.
TEST_F(NodeSyncTest, TheSameFileIsNotKeptAgainAtARestart) {
  ASSERT_NO_FATAL_FAILURE(startWithGpu0());
  struct stat before {};
  ASSERT_EQ(::stat(keptCopy().c_str(), &before), 0);
  startSync();
  struct stat after {};
  ASSERT_EQ(::stat(keptCopy().c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "the kept copy was replaced";
  write(nodeFile({{"n1-gpu0", "/dev/null"}, {"n1-gpu1", "/dev/null"}}));
  ASSERT_TRUE(eventually([&] { return device("n1-gpu1").has_value(); }));
  std::stringstream kept;
  kept << std::ifstream(keptCopy()).rdbuf();
  EXPECT_EQ(kept.str(), nodeFile({{"n1-gpu0", "/dev/null"}, {"n1-gpu1", "/dev/null"}}));
}

// A file that parsed but could not be kept leaves no older copy behind: that copy would put
// older devices in force at the next start and withdraw those added since.
TEST_F(NodeSyncTest, AFileThatCannotBeKeptLeavesNoOlderCopy) {
  ASSERT_NO_FATAL_FAILURE(startWithGpu0());
  ASSERT_TRUE(std::filesystem::exists(keptCopy()));
  std::filesystem::create_directory(keptCopy().string() + ".tmp");  // no write
  write(nodeFile({{"n1-gpu0", "/dev/null"}, {"n1-gpu1", "/dev/null"}}));
  ASSERT_TRUE(eventually([&] { return device("n1-gpu1").has_value(); }));
  EXPECT_FALSE(std::filesystem::exists(keptCopy()));
  write("devices: [this is not a device list");
  startSync();
  EXPECT_EQ(sync_->inventory(), nullptr) << "no device known";
  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(device("n1-gpu1").has_value());
  EXPECT_FALSE(device("n1-gpu1")->meta.deleting) << "withdrawn by an older copy";
}

// A kept copy that cannot be read is looked at again at each sync until it can.
TEST_F(NodeSyncTest, AKeptCopyThatCannotBeReadIsTriedAgain) {
  ASSERT_NO_FATAL_FAILURE(startWithGpu0());
  sync_->stop();
  const auto kept = keptCopy();
  std::filesystem::remove(kept);
  std::filesystem::create_directory(kept);  // read() fails: EISDIR
  write("devices: [this is not a device list");
  startSync();
  EXPECT_EQ(sync_->inventory(), nullptr) << "no device known";
  std::filesystem::remove(kept);
  std::ofstream(kept) << nodeFile({{"n1-gpu0", "/dev/null"}});
  EXPECT_TRUE(eventually([&] {
    const auto inForce = sync_->inventory();
    return inForce && inForce->devices.size() == 1;
  }));
}

TEST_F(NodeSyncTest, AFreeDeviceWhoseNodeIsMissingIsTakenOutOfOfferAndBack) {
  const std::string missing = "/dev/ker-unit-test-device-that-is-not-there";
  write(nodeFile({{"n1-gpu0", missing}}));
  start();
  ASSERT_TRUE(eventually([&] {
    auto d = device("n1-gpu0");
    return d && parseReason(d->reason) == Reason::kDeviceUnhealthy;
  }));
  EXPECT_EQ(device("n1-gpu0")->phase, DevicePhase::kPending) << "not offered";
  EXPECT_NE(device("n1-gpu0")->message.find(missing), std::string::npos)
      << device("n1-gpu0")->message;

  write(nodeFile({{"n1-gpu0", "/dev/null"}}));
  EXPECT_TRUE(eventually([&] {
    auto d = device("n1-gpu0");
    return d && d->phase == DevicePhase::kAvailable && d->reason.empty();
  }));
}

TEST_F(NodeSyncTest, ANameAnotherObjectHoldsIsNeverTakenOver) {
  // Published by the agent of node n2 under the same name.
  api_.seed(
      resources::kExtendedResources,
      {{"apiVersion", kApiVersion},
       {"kind", "ExtendedResource"},
       {"metadata",
        {{"name", "gpu0"}, {"labels", {{kNodeLabel, "n2"}, {kManagedByLabel, kManagedByValue}}}}},
       {"spec", {{"rawResourceName", "example.com/gpu"}, {"deviceID", "theirs"}}}});
  write(nodeFile({{"gpu0", "/dev/null"}}));
  start();
  EXPECT_TRUE(eventually([&] { return eventWithReason("DeviceNameTaken"); }));
  const ExtendedResource d = *device("gpu0");
  EXPECT_EQ(d.deviceID, "theirs");
  EXPECT_EQ(d.meta.labels.at(kNodeLabel), "n2");
}

// Devices found by the file's sources are published beside the listed ones and follow the
// sources: a CDI spec's devices (not its "all"), a command's output; a command that fails or
// prints nonsense withdraws nothing, and a device its next good output leaves out is withdrawn.
TEST_F(NodeSyncTest, DevicesFoundByTheSourcesArePublishedAndFollowThem) {
  std::filesystem::create_directories(dir_ / "cdi");
  const std::string spec = (dir_ / "cdi" / "vendor.yaml").string();
  std::ofstream(spec) << "cdiVersion: 0.6.0\nkind: example.com/gpu\n"
                         "devices: [{name: GPU-A}, {name: all}]\n";
  const std::string found = (dir_ / "found.json").string();
  auto output = [&](const std::string& text) {
    std::ofstream(found + ".tmp") << text;
    std::filesystem::rename(found + ".tmp", found);
  };
  output(R"({"devices": [{"id": "fpga-7", "properties": {"slot": "7"}},
                         {"id": "fpga-8", "deviceNodes": ["/dev/null"]}]})");
  probe_ = DeviceProbe("", {(dir_ / "cdi").string()});
  write(nodeFile({{"n1-gpu0", "/dev/null"}}) +
        "discover:\n"
        "  - rawResourceName: example.com/gpu\n"
        "    cdi: {kind: example.com/gpu}\n"
        "  - rawResourceName: example.com/fpga\n"
        "    properties: {source: command}\n"
        "    command: [/bin/sh, -c, 'cat " +
        found + "']\n");
  start();
  ASSERT_TRUE(eventually([&] {
    return device("n1-gpu0") && device("n1-gpu-a") && device("n1-fpga-7") && device("n1-fpga-8");
  }));
  EXPECT_FALSE(device("n1-all"));
  EXPECT_EQ(device("n1-gpu-a")->deviceID, "GPU-A");
  const auto fpga = *device("n1-fpga-7");
  EXPECT_EQ(fpga.rawResourceName, "example.com/fpga");
  EXPECT_EQ(fpga.properties,
            (std::map<std::string, std::string>{{"slot", "7"}, {"source", "command"}}));
  EXPECT_EQ(sync_->inventory()->find("n1-gpu-a")->cdiDevice, "example.com/gpu=GPU-A");

  output("not json");
  std::this_thread::sleep_for(200ms);  // ten periods
  EXPECT_TRUE(device("n1-fpga-7") && device("n1-fpga-8"));

  // Withdrawn: deleted, its protection finalizer left for the controller.
  auto withdrawn = [&](const std::string& name) {
    auto d = device(name);
    return !d || d->meta.deleting;
  };
  output(R"({"devices": [{"id": "fpga-8", "deviceNodes": ["/dev/null"]}]})");
  ASSERT_TRUE(eventually([&] { return withdrawn("n1-fpga-7"); }));
  EXPECT_FALSE(withdrawn("n1-fpga-8"));

  // A spec cut short while its vendor rewrites it withdraws nothing either.
  std::ofstream(spec) << "cdiVersion: 0.6.0\nkind: example.com/gpu\ndevices: [{name: GP";
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(withdrawn("n1-gpu-a"));
  EXPECT_TRUE(sync_->inventory()->find("n1-gpu-a"));
  // Another vendor's broken spec keeps only its own devices: a device this spec no longer
  // defines is withdrawn meanwhile.
  std::ofstream((dir_ / "cdi" / "other.yaml").string()) << "not: a spec";
  std::ofstream(spec) << "cdiVersion: 0.6.0\nkind: example.com/gpu\ndevices: [{name: GPU-B}]\n";
  ASSERT_TRUE(eventually([&] { return withdrawn("n1-gpu-a") && device("n1-gpu-b"); }));

  std::filesystem::remove(spec);
  ASSERT_TRUE(eventually([&] { return withdrawn("n1-gpu-b"); }));
  EXPECT_FALSE(withdrawn("n1-gpu0"));
}

}  // namespace
}  // namespace ker::agent

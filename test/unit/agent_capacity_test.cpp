// What the node agent advertises in its Node's status for the ExtendedResourceClasses: the plan
// (planCapacity), the patch that makes the node show it (capacityPatch), and the sync that
// writes it against a fake API.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include "agent/advertised_names.h"
#include "agent/capacity.h"
#include "agent/capacity_sync.h"
#include "fake_api_client.h"
#include "test/unit/eventually.h"
#include "test/unit/temp_dir.h"

namespace ker::agent {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using testing::FakeApiClient;

json classJson(const std::string& name, const std::string& resource, const std::string& created,
               json requirements = nullptr) {
  json spec = {{"extendedResourceName", resource}, {"rawResourceName", "example.com/gpu"}};
  if (!requirements.is_null()) {
    spec["metadataRequirements"] = std::move(requirements);
  }
  return {{"apiVersion", "extendedresource.io/v1alpha1"},
          {"kind", "ExtendedResourceClass"},
          {"metadata", {{"name", name}, {"creationTimestamp", created}}},
          {"spec", std::move(spec)}};
}

ClassPtr cls(const json& obj) {
  return std::make_shared<const ExtendedResourceClass>(ExtendedResourceClass::fromJson(obj));
}

DeviceSpec device(const std::string& name, const std::string& model,
                  const std::string& resource = "example.com/gpu") {
  DeviceSpec d;
  d.name = name;
  d.rawResourceName = resource;
  d.deviceID = name + "-id";
  d.properties = {{"model", model}};
  return d;
}

class PlanCapacityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    inventory.devices = {device("gpu0", "k80"), device("gpu1", "k80"), device("gpu2", "a100"),
                         device("gpu3", "k80"), device("fpga0", "k80", "example.com/fpga")};
    // gpu3 is not checked yet (not published): it is not counted either.
    healthy = {{"gpu0", true}, {"gpu1", false}, {"gpu2", true}, {"fpga0", true}};
  }
  NodeFile inventory;
  std::map<std::string, bool> healthy;
};

// A class counts the healthy devices of its raw resource that its selector picks.
TEST_F(PlanCapacityTest, AClassCountsTheHealthyDevicesItSelects) {
  const json k80 = {{"matchLabels", {{"model", "k80"}}}};
  ClassTable classes({cls(classJson("k80", "example.com/k80", "2026-01-01T00:00:00Z", k80)),
                      cls(classJson("any", "example.com/gpu", "2026-01-01T00:00:00Z"))});
  EXPECT_EQ(planCapacity(classes, inventory, healthy),
            (Capacity{{"example.com/gpu", 2}, {"example.com/k80", 1}}));
  healthy["gpu0"] = false;
  EXPECT_EQ(planCapacity(classes, inventory, healthy),
            (Capacity{{"example.com/gpu", 1}, {"example.com/k80", 0}}));
  EXPECT_EQ(planCapacity(ClassTable(), inventory, healthy), Capacity{});
}

// Of two classes naming one resource the older serves it; the other, and an invalid one,
// advertise nothing.
TEST_F(PlanCapacityTest, OnlyTheServingClassIsAdvertised) {
  const json a100 = {{"matchLabels", {{"model", "a100"}}}};
  const json k80 = {{"matchLabels", {{"model", "k80"}}}};
  json invalid = classJson("broken", "kubernetes.io/gpu", "2025-01-01T00:00:00Z");
  ClassTable classes({cls(classJson("newer", "example.com/gpu", "2026-02-01T00:00:00Z", k80)),
                      cls(classJson("older", "example.com/gpu", "2026-01-01T00:00:00Z", a100)),
                      cls(invalid)});
  EXPECT_EQ(planCapacity(classes, inventory, healthy), (Capacity{{"example.com/gpu", 1}}));
}

TEST(CapacityPatchTest, OnlyWhatDiffersIsWrittenAndWhatWasAdvertisedAndIsNoMoreIsRemoved) {
  NodeResources node;
  node.capacity = {{"cpu", "4"}, {"example.com/a", "2"}, {"example.com/c", "1"}};
  node.allocatable = {{"cpu", "4"}, {"example.com/a", "1"}};
  const Capacity desired = {{"example.com/a", 2}, {"example.com/b", 0}};
  EXPECT_EQ(capacityPatch(desired, {"example.com/a", "example.com/c"}, node),
            json::parse(R"({"status": {
              "capacity": {"example.com/b": "0", "example.com/c": null},
              "allocatable": {"example.com/a": "2", "example.com/b": "0"}}})"));
  // A name the agent never advertised (a device plugin's) is not its to remove.
  EXPECT_EQ(capacityPatch(desired, {}, node),
            json::parse(R"({"status": {"capacity": {"example.com/b": "0"},
              "allocatable": {"example.com/a": "2", "example.com/b": "0"}}})"));
  // Quantities are compared as quantities: the API server writes 1000 as 1k.
  node.capacity = {{"example.com/a", "1k"}};
  node.allocatable = {{"example.com/a", "1000"}};
  EXPECT_EQ(capacityPatch({{"example.com/a", 1000}}, {"example.com/a"}, node), json::object());
  node.capacity = {{"example.com/a", "not a quantity"}};
  EXPECT_EQ(capacityPatch({{"example.com/a", 1000}}, {}, node),
            json::parse(R"({"status": {"capacity": {"example.com/a": "1000"}}})"));
}

// Recorded while a write is out: what the node may show before it and what it may show after.
TEST(CapacityPatchTest, WhileAWriteIsOutBothTheOldAndTheNewNamesAreRecorded) {
  EXPECT_EQ(advertisedDuringWrite({{"example.com/a", 1}, {"example.com/b", 0}},
                                  {"example.com/a", "example.com/c"}),
            (std::set<std::string>{"example.com/a", "example.com/b", "example.com/c"}));
  EXPECT_EQ(advertisedDuringWrite({}, {}), std::set<std::string>{});
}

TEST(NodeResourcesTest, ReadsCapacityAndAllocatableLeniently) {
  const NodeResources n = NodeResources::fromJson(json::parse(R"({
    "metadata": {"name": "n1"},
    "status": {"capacity": {"cpu": "4", "example.com/gpu": "2", "odd": 3},
               "allocatable": {"cpu": "3500m"}}})"));
  EXPECT_EQ(n.meta.name, "n1");
  EXPECT_EQ(n.capacity,
            (std::map<std::string, std::string>{{"cpu", "4"}, {"example.com/gpu", "2"}}));
  EXPECT_EQ(n.allocatable, (std::map<std::string, std::string>{{"cpu", "3500m"}}));
  EXPECT_TRUE(NodeResources::fromJson(json::parse(R"({"status": null})")).capacity.empty());
}

using testing::eventually;

class CapacitySyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_.seed(resources::kNodes,
              {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", {{"name", "n1"}}},
               {"status", {{"capacity", {{"cpu", "4"}}}, {"allocatable", {{"cpu", "4"}}}}}});
    api_.seed(resources::kNodes,
              {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "n2"}}}});
    api_.seed(resources::kExtendedResourceClasses,
              classJson("gpu", "example.com/gpu", "2026-01-01T00:00:00Z"));
    auto file = std::make_shared<NodeFile>();
    file->devices = {device("gpu0", "k80"), device("gpu1", "k80")};
    inventory_ = file;
  }
  void TearDown() override {
    stopSync();
    classes_.stop();
    node_.stop();
  }

  void start() {
    classes_.addHandlers({.onAdd = [this](const auto&) { wake(); },
                          .onUpdate = [this](const auto&, const auto&) { wake(); },
                          .onDelete = [this](const auto&) { wake(); }});
    node_.addHandlers({.onAdd = [this](const auto&) { wake(); },
                       .onUpdate = [this](const auto&, const auto&) { wake(); }});
    startSync();
    classes_.start();
    node_.start();
    ASSERT_TRUE(classes_.waitForSync(5s) && node_.waitForSync(5s));
  }
  // A sync of its own, as an agent that (re)starts has: only the record in stateDir_ is kept.
  void startSync() {
    std::lock_guard lock(syncMu_);
    sync_ = std::make_unique<CapacitySync>(
        CapacitySync::Options{
            .node = "n1", .stateDir = stateDir_, .backoff = {.initial = 1ms, .cap = 5ms}},
        api_, classes_, node_, [this] { return inventory_; },
        [this] {
          std::lock_guard lock(mu_);
          return health_;
        },
        metrics_);
    sync_->start();
  }
  void stopSync() {
    std::lock_guard lock(syncMu_);
    if (sync_) {
      sync_->stop();
      sync_.reset();
    }
  }
  void wake() {
    std::lock_guard lock(syncMu_);
    if (sync_) {
      sync_->wake();
    }
  }
  void setHealth(std::map<std::string, bool> health) {
    {
      std::lock_guard lock(mu_);
      health_ = std::make_shared<const std::map<std::string, bool>>(std::move(health));
    }
    wake();
  }
  // The names the record on disk holds (or why it cannot be read).
  std::set<std::string> recorded() {
    std::set<std::string> names;
    if (Status st = AdvertisedNames(stateDir_).load(names); !st.ok()) {
      return {st.message()};
    }
    return names;
  }
  json status(const std::string& node = "n1") {
    return api_.peek(resources::kNodes, "", node)->value("status", json::object());
  }

  testing::TempDir stateTmp_{"ker-capacity-sync"};
  const std::string stateDir_ = stateTmp_.path();
  FakeApiClient api_;
  Informer<ExtendedResourceClass> classes_{api_, resources::kExtendedResourceClasses, {}};
  Informer<NodeResources> node_{api_, resources::kNodes, {.fieldSelector = "metadata.name=n1"}};
  std::shared_ptr<const NodeFile> inventory_;
  std::mutex mu_;
  CapacitySync::Health health_;
  metrics::Registry registry_;
  AgentMetrics metrics_{registry_};
  std::mutex syncMu_;
  std::unique_ptr<CapacitySync> sync_;  // guarded by syncMu_
};

// Nothing is written before the devices' health is known (that would zero what the node shows
// after an agent restart); then the class's healthy devices, in capacity and allocatable; again
// when the kubelet zeroes them; and the name goes with the class.
TEST_F(CapacitySyncTest, TheNodeShowsTheClassesHealthyDevices) {
  start();
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(api_.calls(FakeApiClient::Verb::kPatch), 0);
  setHealth({{"gpu0", true}, {"gpu1", false}});
  ASSERT_TRUE(eventually(
      [&] { return status().value("/capacity/example.com~1gpu"_json_pointer, "") == "1"; }));
  EXPECT_EQ(status()["allocatable"]["example.com/gpu"], "1");
  EXPECT_EQ(status()["capacity"]["cpu"], "4");
  EXPECT_FALSE(status("n2").contains("capacity"));
  EXPECT_TRUE(eventually([&] { return metrics_.capacityWrites.labels({"success"}).value() == 1; }));

  // The kubelet registered again and zeroed what it does not know.
  api_.patch(resources::kNodes, "", "n1", PatchType::kMerge,
             {{"status", {{"capacity", {{"example.com/gpu", "0"}}}}}}, "status");
  ASSERT_TRUE(eventually([&] { return status()["capacity"]["example.com/gpu"] == "1"; }));

  setHealth({{"gpu0", true}, {"gpu1", true}});
  ASSERT_TRUE(eventually([&] { return status()["allocatable"]["example.com/gpu"] == "2"; }));

  api_.remove(resources::kExtendedResourceClasses, "", "gpu");
  ASSERT_TRUE(eventually([&] {
    return !status()["capacity"].contains("example.com/gpu") &&
           !status()["allocatable"].contains("example.com/gpu");
  }));
  EXPECT_EQ(status()["capacity"]["cpu"], "4");
}

// A failed write is tried again after a backoff, a bounded number of times per turn.
TEST_F(CapacitySyncTest, AFailedWriteIsTriedAgain) {
  api_.failNext(FakeApiClient::Verb::kPatch, ApiError(ApiErrorKind::kTransport, 0, "", "reset"), 2);
  start();
  setHealth({{"gpu0", true}, {"gpu1", true}});
  ASSERT_TRUE(eventually([&] { return status()["capacity"].value("example.com/gpu", "") == "2"; }));
  EXPECT_EQ(metrics_.capacityWrites.labels({"error"}).value(), 2);
  EXPECT_TRUE(eventually([&] { return metrics_.capacityWrites.labels({"success"}).value() == 1; }));
  std::this_thread::sleep_for(50ms);  // the node's update comes back: nothing more to write
  EXPECT_EQ(metrics_.capacityWrites.labels({"success"}).value(), 1);
}

// A write the node's watch has not delivered is not written again: the next turns plan against
// the node the write returned. (The watch is stopped here, so it never delivers it.)
TEST_F(CapacitySyncTest, AWriteTheWatchHasNotShownYetIsNotWrittenAgain) {
  start();
  node_.stop();
  setHealth({{"gpu0", true}, {"gpu1", true}});
  ASSERT_TRUE(eventually([&] { return metrics_.capacityWrites.labels({"success"}).value() == 1; }));
  for (int i = 0; i < 3; ++i) {
    wake();
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(api_.calls(FakeApiClient::Verb::kPatch), 1);
  EXPECT_EQ(status()["capacity"]["example.com/gpu"], "2");
}

// The name of a class deleted while no agent ran is removed by the next agent, from the record
// the first one kept; a name the agent never advertised (a device plugin's) stays.
TEST_F(CapacitySyncTest, AClassDeletedWhileTheAgentWasStoppedLeavesTheNodeAfterARestart) {
  api_.patch(resources::kNodes, "", "n1", PatchType::kMerge,
             {{"status", {{"capacity", {{"vendor.com/plugin", "3"}}}}}}, "status");
  start();
  setHealth({{"gpu0", true}, {"gpu1", true}});
  ASSERT_TRUE(
      eventually([&] { return status()["allocatable"].value("example.com/gpu", "") == "2"; }));
  EXPECT_EQ(recorded(), std::set<std::string>{"example.com/gpu"});

  stopSync();
  api_.remove(resources::kExtendedResourceClasses, "", "gpu");
  std::this_thread::sleep_for(50ms);  // the class informer has seen the deletion
  EXPECT_TRUE(status()["capacity"].contains("example.com/gpu")) << "no agent ran to remove it";

  startSync();
  wake();
  ASSERT_TRUE(eventually([&] {
    return !status()["capacity"].contains("example.com/gpu") &&
           !status()["allocatable"].contains("example.com/gpu");
  })) << status();
  EXPECT_EQ(status()["capacity"]["vendor.com/plugin"], "3");
  EXPECT_TRUE(eventually([&] { return recorded().empty(); }));
}

// A name is recorded before the write that advertises it is sent: while the writes fail, the
// record already holds it (an agent stopped now would still know it).
TEST_F(CapacitySyncTest, ANameIsRecordedBeforeItIsWritten) {
  api_.failNext(FakeApiClient::Verb::kPatch, ApiError(ApiErrorKind::kTransport, 0, "", "reset"),
                1000);
  start();
  setHealth({{"gpu0", true}});
  ASSERT_TRUE(eventually([&] { return metrics_.capacityWrites.labels({"error"}).value() >= 1; }));
  EXPECT_EQ(recorded(), std::set<std::string>{"example.com/gpu"});
  EXPECT_FALSE(status()["capacity"].contains("example.com/gpu"));
}

// No write goes out that could not be recorded first; once the record can be written, it does.
TEST_F(CapacitySyncTest, AWriteWaitsForItsRecord) {
  std::filesystem::create_directories(stateDir_ + "/advertised-names.json.tmp/x");
  start();
  setHealth({{"gpu0", true}});
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(api_.calls(FakeApiClient::Verb::kPatch), 0);
  EXPECT_FALSE(status()["capacity"].contains("example.com/gpu"));
  std::filesystem::remove_all(stateDir_ + "/advertised-names.json.tmp");
  setHealth({{"gpu0", true}, {"gpu1", true}});
  ASSERT_TRUE(eventually([&] { return status()["capacity"].value("example.com/gpu", "") == "2"; }));
  EXPECT_EQ(recorded(), std::set<std::string>{"example.com/gpu"});
}

// A garbled record is no reason to stop advertising: the agent starts from an empty one and
// replaces the file at its first write.
TEST_F(CapacitySyncTest, AGarbledRecordIsReplaced) {
  std::ofstream(stateDir_ + "/advertised-names.json") << "{\"extendedResourceNames\": [";
  start();
  setHealth({{"gpu0", true}});
  ASSERT_TRUE(eventually([&] { return status()["capacity"].value("example.com/gpu", "") == "1"; }));
  EXPECT_TRUE(eventually([&] { return recorded() == std::set<std::string>{"example.com/gpu"}; }));
}

}  // namespace
}  // namespace ker::agent

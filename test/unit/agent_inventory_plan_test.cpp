#include <gtest/gtest.h>

#include "agent/inventory_plan.h"

namespace ker::agent {
namespace {

using json = nlohmann::json;

DeviceSpec spec(const std::string& name, const std::string& id = "id-0") {
  DeviceSpec d;
  d.name = name;
  d.rawResourceName = "example.com/gpu";
  d.deviceID = id;
  d.properties = {{"type", "k80"}};
  return d;
}

// The object as the API server returns it after the agent created it, with a status.
ExtendedResource published(const DeviceSpec& d, const std::string& node) {
  json obj = desiredObject(d, node);
  obj["metadata"]["uid"] = "uid-" + d.name;
  obj["metadata"]["resourceVersion"] = "7";
  obj["status"] = {{"phase", "Bound"}, {"claimRef", {{"namespace", "ns"}, {"name", "c"}}}};
  return ExtendedResource::fromJson(obj);
}

TEST(InventoryPlanTest, DesiredObjectIsPinnedToTheNodeAndLabelledAsTheAgents) {
  json obj = desiredObject(spec("d0"), "node-1");
  EXPECT_EQ(obj["metadata"]["labels"][kNodeLabel], "node-1");
  EXPECT_EQ(obj["metadata"]["labels"][kManagedByLabel], kManagedByValue);
  EXPECT_EQ(obj["metadata"]["finalizers"], json::array({kDeviceProtectionFinalizer}))
      << "protected from its first moment, as the controller would protect it";
  ExtendedResource er = ExtendedResource::fromJson(obj);
  EXPECT_TRUE(er.invalid.empty()) << er.invalid;
  EXPECT_EQ(er.rawResourceName, "example.com/gpu");
  ASSERT_EQ(er.nodeAffinity.terms.size(), 1u);
  ASSERT_EQ(er.nodeAffinity.terms[0].matchFields.size(), 1u);
  EXPECT_EQ(er.nodeAffinity.terms[0].matchFields[0].values, std::vector<std::string>{"node-1"});
  EXPECT_FALSE(obj.contains("status"));
  EXPECT_TRUE(publishedBy(er, "node-1"));
  EXPECT_FALSE(publishedBy(er, "node-2"));
  EXPECT_FALSE(publishedBy(ExtendedResource{}, "node-1"));
  EXPECT_EQ(
      managedSelector("node-1"),
      "extendedresource.io/node=node-1,app.kubernetes.io/managed-by=extended-resource-node-agent");
}

TEST(InventoryPlanTest, CreatesWhatIsMissingAndNothingElse) {
  NodeFile f;
  f.devices = {spec("d0"), spec("d1")};
  ExtendedResource d0 = published(spec("d0"), "node-1");
  InventoryPlan plan = planInventory(f, "node-1", {&d0});
  ASSERT_EQ(plan.creates.size(), 1u);
  EXPECT_EQ(plan.creates[0].object["metadata"]["name"], "d1");
  EXPECT_TRUE(plan.updates.empty());
  EXPECT_TRUE(plan.deletes.empty());
}

TEST(InventoryPlanTest, AChangedSpecIsUpdatedKeepingStatusAndResourceVersion) {
  NodeFile f;
  f.devices = {spec("d0", "id-new")};
  json raw = desiredObject(spec("d0", "id-old"), "node-1");
  raw["metadata"]["uid"] = "uid-d0";
  raw["metadata"]["resourceVersion"] = "7";
  raw["metadata"]["finalizers"] = {"other.example.com/keep"};
  raw["status"] = {{"phase", "Bound"}, {"claimRef", {{"namespace", "ns"}, {"name", "c"}}}};
  ExtendedResource d0 = ExtendedResource::fromJson(raw);
  InventoryPlan plan = planInventory(f, "node-1", {&d0});
  ASSERT_EQ(plan.updates.size(), 1u);
  const json& obj = plan.updates[0].object;
  EXPECT_EQ(obj["spec"]["deviceID"], "id-new");
  EXPECT_EQ(obj["metadata"]["finalizers"], json::array({"other.example.com/keep"}))
      << "the finalizers as the object has them, whoever put them on";
  EXPECT_EQ(obj["metadata"]["resourceVersion"], "7");
  EXPECT_EQ(obj["status"]["phase"], "Bound");
  EXPECT_TRUE(plan.creates.empty());
}

TEST(InventoryPlanTest, AnUnchangedInventoryPlansNothing) {
  NodeFile f;
  f.devices = {spec("d0")};
  ExtendedResource d0 = published(spec("d0"), "node-1");
  EXPECT_TRUE(planInventory(f, "node-1", {&d0}).empty());
}

TEST(InventoryPlanTest, FreeDevicesDroppedFromTheFileAreDeletedAsSeen) {
  json obj = desiredObject(spec("d0"), "node-1");
  obj["metadata"]["uid"] = "uid-d0";
  obj["metadata"]["resourceVersion"] = "9";
  obj["status"] = {{"phase", "Pending"}, {"reason", "DeviceUnhealthy"}};
  ExtendedResource d0 = ExtendedResource::fromJson(obj);
  InventoryPlan plan = planInventory(NodeFile{}, "node-1", {&d0});
  ASSERT_EQ(plan.deletes.size(), 1u);
  EXPECT_EQ(plan.deletes[0].name, "d0");
  EXPECT_EQ(plan.deletes[0].uid, "uid-d0");
  EXPECT_EQ(plan.deletes[0].resourceVersion, "9") << "a bind since it was seen free wins";
  EXPECT_TRUE(plan.unlistedHeld.empty());
}

// Bound, or naming a claim at all: a pod may run with it or be about to start with it.
TEST(InventoryPlanTest, HeldDevicesDroppedFromTheFileAreKeptUntilFreed) {
  ExtendedResource bound = published(spec("d0"), "node-1");
  json obj = desiredObject(spec("d1"), "node-1");
  obj["status"] = {{"phase", "Available"}, {"claimRef", {{"namespace", "ns"}, {"name", "c"}}}};
  ExtendedResource naming = ExtendedResource::fromJson(obj);
  ExtendedResource listed = published(spec("d2"), "node-1");
  NodeFile f;
  f.devices = {spec("d2")};
  InventoryPlan plan = planInventory(f, "node-1", {&bound, &naming, &listed});
  EXPECT_TRUE(plan.empty()) << "nothing deleted";
  EXPECT_EQ(plan.unlistedHeld, (std::vector<std::string>{"d0", "d1"}));
}

// An entry renamed in the file is the same device as the object under its old name: it is
// published once that object is gone (held for a claim until freed, or deleted now if free), so
// no scheduler sees it twice. A device new to the file is published at once.
TEST(InventoryPlanTest, ADeviceListedUnderANewNameWaitsForItsOldObject) {
  ExtendedResource held = published(spec("d0", "id-0"), "node-1");
  NodeFile f;
  f.devices = {spec("d0-new", "id-0"), spec("d1", "id-1")};
  InventoryPlan plan = planInventory(f, "node-1", {&held});
  ASSERT_EQ(plan.creates.size(), 1u);
  EXPECT_EQ(plan.creates[0].object["metadata"]["name"], "d1");
  EXPECT_EQ(plan.waiting, (std::map<std::string, std::string>{{"d0-new", "d0"}}));
  EXPECT_EQ(plan.unlistedHeld, std::vector<std::string>{"d0"});

  json obj = desiredObject(spec("d0", "id-0"), "node-1");
  obj["metadata"]["uid"] = "uid-d0";
  ExtendedResource free = ExtendedResource::fromJson(obj);
  plan = planInventory(f, "node-1", {&free});
  ASSERT_EQ(plan.deletes.size(), 1u);
  EXPECT_EQ(plan.deletes[0].name, "d0");
  EXPECT_EQ(plan.waiting, (std::map<std::string, std::string>{{"d0-new", "d0"}}));
  EXPECT_TRUE(planInventory(f, "node-1", {}).waiting.empty()) << "once it is gone";
}

TEST(InventoryPlanTest, ObjectsBeingDeletedAreWaitedFor) {
  json obj = desiredObject(spec("d0", "old"), "node-1");
  obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  ExtendedResource d0 = ExtendedResource::fromJson(obj);
  NodeFile with;
  with.devices = {spec("d0", "new")};
  EXPECT_TRUE(planInventory(with, "node-1", {&d0}).empty());
  EXPECT_TRUE(planInventory(NodeFile{}, "node-1", {&d0}).empty());
}

}  // namespace
}  // namespace ker::agent

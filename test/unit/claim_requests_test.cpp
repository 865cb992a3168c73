// A claim's spec.requests: read and checked, fitted request by request with the constraints that
// span them, bound in one claim write naming each request's devices, and held by resource.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fake_api_client.h"
#include "model/claim_transitions.h"
#include "model/invariants.h"
#include "model/objects.h"
#include "model/suitability.h"
#include "scheduler/bind/binder.h"
#include "scheduler/fit/planner.h"
#include "scheduler_fixtures.h"

namespace ker {
namespace {

using nlohmann::json;
using testing::device;

constexpr const char* kGpu = "nvidia.com/gpu";
constexpr const char* kNic = "example.com/nic";

// A GPU and a NIC under one PCIe root.
json gpuAndNic(const std::string& name = "c") {
  return json::parse(R"({
    "apiVersion": "extendedresource.io/v1alpha1", "kind": "ExtendedResourceClaim",
    "metadata": {"name": ")" +
                     name + R"(", "namespace": "default", "uid": "uid-)" + name + R"("},
    "spec": {"extendedResourceNum": 1,
      "requests": [
        {"name": "gpu", "rawResourceName": "nvidia.com/gpu",
         "metadataRequirements": {"matchLabels": {"model": "h100"}}},
        {"name": "nic", "rawResourceName": "example.com/nic"}],
      "constraints": [{"matchProperty": "pcieRoot"}]}})");
}

ExtendedResource gpu(const std::string& name, const std::string& node, const std::string& root,
                     const std::string& model = "h100") {
  return device(name, node, {{"model", model}, {"pcieRoot", root}}, kGpu);
}
ExtendedResource nic(const std::string& name, const std::string& node, const std::string& root) {
  return device(name, node, {{"pcieRoot", root}}, kNic);
}

TEST(ClaimRequests, AreReadAsUnitsEachWithTheConstraintsOverIt) {
  json j = gpuAndNic();
  j["spec"]["constraints"].push_back({{"distinctProperty", "numa"}, {"requests", {"gpu"}}});
  const auto c = ExtendedResourceClaim::fromJson(j);
  ASSERT_EQ(c.invalid, "");
  ASSERT_EQ(c.requests.size(), 2u);
  EXPECT_EQ(c.resourceNames(), (std::vector<std::string>{kGpu, kNic}));
  const auto units = c.units();
  ASSERT_EQ(units.size(), 2u);
  EXPECT_EQ(units[0].request, "gpu");
  EXPECT_EQ(units[0].rawResourceName, kGpu);
  EXPECT_EQ(unitKey(units[0]), "default/c/gpu");
  EXPECT_EQ(unitKey(units[1]), "default/c/nic");
  // The shared rule keeps the requests it spans; the GPU's own one names none.
  ASSERT_EQ(units[0].constraints.size(), 2u);
  EXPECT_EQ(units[0].constraints[0].requests, (std::vector<std::string>{"gpu", "nic"}));
  EXPECT_EQ(units[0].constraints[1].distinctProperty, "numa");
  EXPECT_TRUE(units[0].constraints[1].requests.empty());
  ASSERT_EQ(units[1].constraints.size(), 1u);
  EXPECT_EQ(units[1].constraints[0].matchProperty, "pcieRoot");

  const std::vector<std::pair<std::function<void(json&)>, std::string>> bad = {
      {[](json& j) { j["spec"]["rawResourceName"] = "nvidia.com/gpu"; },
       "spec.requests: rawResourceName, extendedResourceNum, metadataRequirements, "
       "firstAvailable and containers must be left unset on a claim with requests"},
      {[](json& j) { j["spec"]["extendedResourceNum"] = 2; },
       "spec.requests: rawResourceName, extendedResourceNum, metadataRequirements, "
       "firstAvailable and containers must be left unset on a claim with requests"},
      {[](json& j) { j["spec"]["requests"][1]["name"] = "gpu"; },
       "spec.requests[1].name: \"gpu\" names an earlier request too"},
      {[](json& j) { j["spec"]["requests"][1].erase("rawResourceName"); },
       "spec.requests[1].rawResourceName: required"},
      {[](json& j) { j["spec"]["requests"][0]["extendedResourceNum"] = 0; },
       "spec.requests[0].extendedResourceNum: must be at least 1"},
      {[](json& j) {
         j["spec"]["constraints"][0]["requests"] = {"gpu", "fpga"};
       },
       "spec.constraints[0].requests: \"fpga\" is no request of spec.requests"},
      {[](json& j) {
         j["status"] = {{"phase", "Bound"},
                        {"allocations", {{{"request", "fpga"}, {"extendedResourceNames", {"f"}}}}}};
       },
       "status.allocations: \"fpga\" is no request of spec.requests (edited since the bind?)"},
  };
  for (const auto& [change, want] : bad) {
    json k = gpuAndNic();
    change(k);
    EXPECT_EQ(ExtendedResourceClaim::fromJson(k).invalid, want);
  }
  json plain = gpuAndNic();
  plain["spec"].erase("requests");
  EXPECT_EQ(ExtendedResourceClaim::fromJson(plain).invalid,
            "spec.rawResourceName: required (or spec.requests)");
  plain["spec"]["rawResourceName"] = kGpu;
  plain["spec"]["constraints"][0]["requests"] = {"gpu"};
  EXPECT_EQ(ExtendedResourceClaim::fromJson(plain).invalid,
            "spec.constraints[0].requests: names requests, and the claim has no spec.requests");
}

TEST(ClaimRequests, ABindRecordsEachRequestsDevicesAndTheReleaseDropsThem) {
  auto c = ExtendedResourceClaim::fromJson(gpuAndNic());
  EXPECT_FALSE(bindClaim(c, {"p", "u"}, "n1", {"g0"}).ok()) << "one allocation for two requests";
  EXPECT_FALSE(bindRequests(c, {"p", "u"}, "n1", {{"nic", {"x0"}, ""}, {"gpu", {"g0"}, ""}}).ok())
      << "in the spec's order";
  ASSERT_TRUE(bindRequests(c, {"p", "u"}, "n1", {{"gpu", {"g0"}, ""}, {"nic", {"x0"}, ""}}).ok());
  EXPECT_EQ(c.allocated, (std::vector<std::string>{"g0", "x0"}));
  EXPECT_EQ(c.requestOf("x0"), "nic");
  EXPECT_EQ(c.resourceOf("x0"), kNic);
  EXPECT_EQ(c.resourceOf("g0"), kGpu);
  EXPECT_EQ(c.wantedCount(), 2);
  EXPECT_EQ(c.heldByResource(),
            (std::map<std::string, std::vector<std::string>>{{kGpu, {"g0"}}, {kNic, {"x0"}}}));
  const auto read = ExtendedResourceClaim::fromJson(c.toJson({}));
  EXPECT_EQ(read.invalid, "");
  EXPECT_EQ(read.allocations, c.allocations);
  EXPECT_EQ(read.unitNamed("nic")->allocated, std::vector<std::string>{"x0"});

  // A device suits the request its status lists it under, and while Pending any request.
  EXPECT_TRUE(suits(nic("x0", "n1", "r0"), c));
  EXPECT_EQ(suitability(gpu("x0", "n1", "r0"), c), Unsuited::kOtherResource);
  ASSERT_TRUE(releaseClaim(c, "pod gone").ok());
  EXPECT_TRUE(c.allocations.empty());
  EXPECT_FALSE(c.toJson({})["status"].contains("allocations"));
  EXPECT_TRUE(suits(gpu("g1", "n1", "r0"), c));
  EXPECT_EQ(suitability(gpu("g2", "n1", "r0", "a100"), c), Unsuited::kSelectorMismatch);

  // A spec that no longer parses leaves each held device under every resource ("").
  json edited = c.toJson({});
  ASSERT_TRUE(bindRequests(c, {"p", "u"}, "n1", {{"gpu", {"g0"}, ""}, {"nic", {"x0"}, ""}}).ok());
  edited = c.toJson({});
  edited["spec"]["requests"][0]["name"] = "GPU";
  EXPECT_EQ(ExtendedResourceClaim::fromJson(edited).heldByResource(),
            (std::map<std::string, std::vector<std::string>>{{"", {"g0", "x0"}}}));
  // So does a spec edited into a claim of one resource: its status still lists the NIC.
  edited = c.toJson({});
  edited["spec"] = {{"rawResourceName", kGpu}};
  const auto plain = ExtendedResourceClaim::fromJson(edited);
  EXPECT_EQ(plain.heldByResource(),
            (std::map<std::string, std::vector<std::string>>{{"", {"g0", "x0"}}}));
  EXPECT_EQ(plain.resourceOf("x0"), "");
}

TEST(ClaimRequests, TheInvariantsCheckTheConstraintsAcrossRequests) {
  auto c = ExtendedResourceClaim::fromJson(gpuAndNic());
  ASSERT_TRUE(bindRequests(c, {"p", "u"}, "n1", {{"gpu", {"g0"}, ""}, {"nic", {"x1"}, ""}}).ok());
  auto bound = [&](ExtendedResource d) {
    d.phase = DevicePhase::kBound;
    d.claimRef = ClaimRef{"default", "c", "uid-c"};
    d.allocation = c.allocation;
    return d;
  };
  // (The snapshot has no pod: only what it says of the devices counts here.)
  auto violations = [&](const std::string& nicRoot) {
    std::vector<std::string> out;
    for (auto& line : checkInvariants(ClusterSnapshot{
             .devices = {bound(gpu("g0", "n1", "r0")), bound(nic("x1", "n1", nicRoot))},
            .claims = {c}})) {
      if (line.find("no longer exists") == std::string::npos) {
        out.push_back(std::move(line));
      }
    }
    return out;
  };
  EXPECT_EQ(violations("r0"), std::vector<std::string>{});
  EXPECT_EQ(violations("r1"),
            std::vector<std::string>{"the devices of claim default/c do not meet its constraints"});
}

class ClaimRequestsPlannerTest : public ::testing::Test {
 protected:
  void add(ExtendedResource d) { index_.upsert(std::make_shared<const ExtendedResource>(d)); }
  static PodClaims pending(const json& claimJson) {
    PodClaims pc;
    pc.pending.push_back(
        std::make_shared<const ExtendedResourceClaim>(ExtendedResourceClaim::fromJson(claimJson)));
    return pc;
  }
  // The exact plan, and the counted one (filter, prioritize) agreeing with it.
  NodePlan plan(const PodClaims& pc, const std::string& node) {
    NodePlan exact = planNode(pc, "u", node, {}, index_);
    NodeFitter fitter(pc, "u", index_);
    const std::vector<std::string_view> nodes = {node};
    fitter.planAll(nodes, true, [&](size_t, NodePlan& counted) {
      EXPECT_EQ(counted.fits, exact.fits) << node;
      EXPECT_EQ(counted.message, exact.message) << node;
    });
    return exact;
  }
  DeviceIndex index_;
};

TEST_F(ClaimRequestsPlannerTest, RequestsTakeDevicesSharingTheirConstraintsProperty) {
  // n-split: the free GPU and the free NIC are under different roots.
  add(gpu("s-g0", "n-split", "r0"));
  add(nic("s-x1", "n-split", "r1"));
  // n-one: root r1 has both, root r0 only a GPU.
  add(gpu("o-g0", "n-one", "r0"));
  add(gpu("o-g1", "n-one", "r1"));
  add(nic("o-x1", "n-one", "r1"));
  const PodClaims pc = pending(gpuAndNic());

  const NodePlan split = plan(pc, "n-split");
  EXPECT_FALSE(split.fits);
  EXPECT_EQ(split.message,
            "no value of the properties their constraints share serves every request of claims "
            "default/c/gpu, default/c/nic together on this node");

  const NodePlan one = plan(pc, "n-one");
  ASSERT_TRUE(one.fits) << one.message;
  EXPECT_EQ(one.assignment.at("default/c/gpu"), std::vector<std::string>{"o-g1"});
  EXPECT_EQ(one.assignment.at("default/c/nic"), std::vector<std::string>{"o-x1"});
}

TEST_F(ClaimRequestsPlannerTest, ARequestThatCannotBeServedIsNamed) {
  add(gpu("g0", "n1", "r0", "a100"));
  add(nic("x0", "n1", "r0"));
  const NodePlan p = plan(pending(gpuAndNic()), "n1");
  EXPECT_FALSE(p.fits);
  EXPECT_EQ(p.message,
            "claim default/c/gpu: at most 0 of 1 free nvidia.com/gpu with model=h100 sharing "
            "pcieRoot on this node");
}

TEST_F(ClaimRequestsPlannerTest, EachRequestTriesItsAlternativesInOrder) {
  add(gpu("a0", "n1", "r0", "a100"));
  add(gpu("a1", "n1", "r0", "a100"));
  add(nic("x0", "n1", "r0"));
  json j = gpuAndNic();
  j["spec"]["requests"][0] = json::parse(R"({"name": "gpu", "rawResourceName": "nvidia.com/gpu",
      "firstAvailable": [
        {"name": "h100", "metadataRequirements": {"matchLabels": {"model": "h100"}}},
        {"name": "two-a100", "extendedResourceNum": 2,
         "metadataRequirements": {"matchLabels": {"model": "a100"}}}]})");
  const NodePlan p = plan(pending(j), "n1");
  ASSERT_TRUE(p.fits) << p.message;
  EXPECT_EQ(p.alternatives.at("default/c/gpu"), "two-a100");
  EXPECT_EQ(p.assignment.at("default/c/gpu"), (std::vector<std::string>{"a0", "a1"}));
  EXPECT_EQ(p.cost.alternative, 1u);
}

// The index holds what a Bound claim with requests lists under each request's resource: a
// device of either is withheld from other pods.
TEST(ClaimRequestsIndex, HoldsEachRequestsDevicesUnderItsResource) {
  DeviceIndex index;
  index.upsert(std::make_shared<const ExtendedResource>(gpu("g0", "n1", "r0")));
  index.upsert(std::make_shared<const ExtendedResource>(nic("x0", "n1", "r0")));
  auto c = ExtendedResourceClaim::fromJson(gpuAndNic());
  ASSERT_TRUE(bindRequests(c, {"p", "u"}, "n1", {{"gpu", {"g0"}, ""}, {"nic", {"x0"}, ""}}).ok());
  index.setClaim("default/c", c.heldByResource(), allocationOf(c));
  EXPECT_TRUE(index.freeOnNode(kGpu, "n1", {}).empty());
  EXPECT_TRUE(index.freeOnNode(kNic, "n1", {}).empty());
  const auto holding = index.claimsHolding(kNic, {"x0"});
  ASSERT_EQ(holding.size(), 1u);
  EXPECT_EQ(holding.at("default/c").at(kGpu), std::vector<std::string>{"g0"});
  index.setClaimDevices("default/c", DeviceIndex::Holds{});
  EXPECT_EQ(index.freeOnNode(kGpu, "n1", {}).size(), 1u);
  EXPECT_EQ(index.freeOnNode(kNic, "n1", {}).size(), 1u);

  // Held under any resource ("") when the claim cannot say which.
  index.setClaimDevices("default/c", DeviceIndex::Holds{{"", {"x0"}}});
  EXPECT_TRUE(index.freeOnNode(kNic, "n1", {}).empty());
  EXPECT_EQ(index.freeOnNode(kGpu, "n1", {}).size(), 1u);
}

// The bind writes each request's devices, then the claim once with every request's devices,
// and the annotation names the request of each device.
TEST(ClaimRequestsBinder, OneClaimWriteNamesEachRequestsDevices) {
  testing::FakeApiClient api;
  DeviceIndex index;
  for (const auto& d : {gpu("g0", "n1", "r0"), gpu("g1", "n1", "r1"), nic("x1", "n1", "r1")}) {
    const json requirement = {{"key", "metadata.name"}, {"operator", "In"}, {"values", {"n1"}}};
    const json term = {{"matchFields", json::array({requirement})}};
    const json j = {{"apiVersion", kApiVersion},
                    {"kind", "ExtendedResource"},
                    {"metadata", {{"name", d.meta.name}, {"uid", d.meta.uid}}},
                    {"spec",
                     {{"rawResourceName", d.rawResourceName},
                      {"deviceID", d.deviceID},
                      {"properties", d.properties},
                      {"nodeAffinity", {{"required", {{"nodeSelectorTerms", {term}}}}}}}}};
    index.upsert(std::make_shared<const ExtendedResource>(
        ExtendedResource::fromJson(api.seed(resources::kExtendedResources, j))));
  }
  api.seed(resources::kExtendedResourceClaims, gpuAndNic());
  api.seed(
      resources::kPods,
      json{{"apiVersion", "v1"},
           {"kind", "Pod"},
           {"metadata",
            {{"name", "p"}, {"namespace", "default"}, {"annotations", {{kClaimsAnnotation, "c"}}}}},
           {"spec", {{"containers", {{{"name", "c"}, {"image", "x"}}}}}}});
  const std::string podUid = (*api.peek(resources::kPods, "default", "p"))["metadata"]["uid"];
  BinderOptions options;
  options.schedulerName = "";
  options.requireFilterChoice = false;
  Binder binder(
      api, index, [](const std::string&) { return std::map<std::string, std::string>{}; }, options);
  ASSERT_EQ(binder.bind({"p", "default", podUid, "n1"}).message(), "");

  const auto c = ExtendedResourceClaim::fromJson(
      *api.peek(resources::kExtendedResourceClaims, "default", "c"));
  EXPECT_EQ(c.phase, ClaimPhase::kBound);
  EXPECT_EQ(c.allocations,
            (std::vector<RequestAllocation>{{"gpu", {"g1"}, ""}, {"nic", {"x1"}, ""}}));
  EXPECT_EQ(c.allocated, (std::vector<std::string>{"g1", "x1"}));
  for (const auto& name : {"g1", "x1"}) {
    const auto d = ExtendedResource::fromJson(*api.peek(resources::kExtendedResources, "", name));
    EXPECT_EQ(d.phase, DevicePhase::kBound) << name;
    EXPECT_EQ(d.claimRef, (ClaimRef{"default", "c", c.meta.uid})) << name;
    EXPECT_EQ(d.allocation, c.allocation) << name;
  }
  const auto bindings = api.bindings();
  ASSERT_EQ(bindings.size(), 1u);
  const auto annotation = json::parse(bindings[0].annotations.at(kAllocationAnnotation));
  ASSERT_EQ(annotation["c"].size(), 2u);
  EXPECT_EQ(annotation["c"][0]["name"], "g1");
  EXPECT_EQ(annotation["c"][0]["request"], "gpu");
  EXPECT_EQ(annotation["c"][1]["name"], "x1");
  EXPECT_EQ(annotation["c"][1]["request"], "nic");
  EXPECT_EQ(annotation["c"][1]["rawResourceName"], kNic);
}

}  // namespace
}  // namespace ker

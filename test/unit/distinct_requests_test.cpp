// A distinctProperty spanning several requests of a claim: read, checked pair by pair, and
// fitted exactly (against a brute-force search over every assignment) while other claims of
// the pod compete for the same devices.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "model/objects.h"
#include "model/suitability.h"
#include "scheduler/fit/planner.h"
#include "scheduler_fixtures.h"

namespace ker {
namespace {

using nlohmann::json;
using testing::device;

constexpr const char* kGpu = "nvidia.com/gpu";
constexpr const char* kNic = "example.com/nic";

// `gpus` GPUs and a NIC, every one of them under a PCIe root of its own.
json ownRoots(int gpus = 2) {
  return json::parse(R"({
    "apiVersion": "extendedresource.io/v1alpha1", "kind": "ExtendedResourceClaim",
    "metadata": {"name": "c", "namespace": "default", "uid": "uid-c"},
    "spec": {
      "requests": [
        {"name": "gpu", "rawResourceName": "nvidia.com/gpu", "extendedResourceNum": )" +
                     std::to_string(gpus) + R"(},
        {"name": "nic", "rawResourceName": "example.com/nic"}],
      "constraints": [{"distinctProperty": "pcieRoot"}]}})");
}

ExtendedResource gpu(const std::string& name, const std::string& root,
                     const std::string& model = "h100") {
  return device(name, "n1", {{"model", model}, {"pcieRoot", root}}, kGpu);
}
ExtendedResource nic(const std::string& name, const std::string& root) {
  return device(name, "n1", {{"pcieRoot", root}}, kNic);
}

TEST(DistinctRequests, ADistinctPropertyMaySpanRequestsAndEachPairDiffers) {
  const auto c = ExtendedResourceClaim::fromJson(ownRoots());
  ASSERT_EQ(c.invalid, "");
  const auto units = c.units();
  ASSERT_EQ(units.size(), 2u);
  for (const auto& u : units) {
    ASSERT_EQ(u.constraints.size(), 1u);
    EXPECT_EQ(u.constraints[0].requests, (std::vector<std::string>{"gpu", "nic"}));
    EXPECT_EQ(distinctProperty(u), "pcieRoot");
  }
  const auto r0 = gpu("g0", "r0").properties;
  const auto r1 = nic("x1", "r1").properties;
  const auto sameRoot = nic("x0", "r0").properties;
  const auto noRoot = device("x", "n1", {}, kNic).properties;
  EXPECT_TRUE(sharedConstraintsMet(units[0], r0, units[1], r1));
  EXPECT_FALSE(sharedConstraintsMet(units[0], r0, units[1], sameRoot));
  EXPECT_FALSE(sharedConstraintsMet(units[0], r0, units[1], noRoot));
  // The matchProperty half alone leaves distinct values to the allocator.
  EXPECT_TRUE(sharedValuesAgree(units[0], r0, units[1], sameRoot));

  json two = ownRoots();
  two["spec"]["constraints"].push_back({{"distinctProperty", "numa"}, {"requests", {"gpu"}}});
  EXPECT_EQ(ExtendedResourceClaim::fromJson(two).invalid,
            "spec.constraints[1].distinctProperty: only one constraint of a claim may be distinct");
}

class DistinctRequestsPlannerTest : public ::testing::Test {
 protected:
  void add(ExtendedResource d) { index_.upsert(std::make_shared<const ExtendedResource>(d)); }
  // The exact plan, and the counted one (filter, prioritize) agreeing with it.
  NodePlan plan(const PodClaims& pc) {
    NodePlan exact = planNode(pc, "u", "n1", {}, index_);
    NodeFitter fitter(pc, "u", index_);
    const std::vector<std::string_view> nodes = {"n1"};
    fitter.planAll(nodes, true, [&](size_t, NodePlan& counted) {
      EXPECT_EQ(counted.fits, exact.fits);
      EXPECT_EQ(counted.message, exact.message);
    });
    return exact;
  }
  static PodClaims pending(std::vector<ExtendedResourceClaim> claims) {
    PodClaims pc;
    for (auto& c : claims) {
      pc.pending.push_back(std::make_shared<const ExtendedResourceClaim>(std::move(c)));
    }
    return pc;
  }
  DeviceIndex index_;
};

TEST_F(DistinctRequestsPlannerTest, TheNicTakesARootNoGpuHas) {
  // The first GPU and the first NIC share r0: taken request by request they would collide.
  add(gpu("g0", "r0"));
  add(gpu("g1", "r1"));
  add(nic("x0", "r0"));
  add(nic("x2", "r2"));
  const NodePlan p = plan(pending({ExtendedResourceClaim::fromJson(ownRoots())}));
  ASSERT_TRUE(p.fits) << p.message;
  EXPECT_EQ(p.assignment.at("default/c/gpu"), (std::vector<std::string>{"g0", "g1"}));
  EXPECT_EQ(p.assignment.at("default/c/nic"), std::vector<std::string>{"x2"});
}

TEST_F(DistinctRequestsPlannerTest, TooFewRootsForTheRequestsTogetherIsSaid) {
  add(gpu("g0", "r0"));
  add(gpu("g1", "r1"));
  add(nic("x0", "r0"));
  add(nic("x1", "r1"));
  const NodePlan p = plan(pending({ExtendedResourceClaim::fromJson(ownRoots())}));
  EXPECT_FALSE(p.fits);
  EXPECT_EQ(p.message,
            "claim default/c: requests gpu, nic: at most 2 of 3 free devices with a pcieRoot of "
            "their own on this node");
}

TEST_F(DistinctRequestsPlannerTest, AnotherClaimOfThePodKeepsTheDeviceItAloneCanTake) {
  // Claim d wants an a100, and only g0 is one. The spanning claim's first choice of roots (its
  // GPU under r0) then leaves d nothing, its next (r1, the NIC under r2) serves every claim.
  add(gpu("g0", "r0", "a100"));
  add(gpu("g1", "r1"));
  add(nic("x1", "r1"));
  add(nic("x2", "r2"));
  auto d = testing::claim("d", 1, {{"model", "a100"}});
  const NodePlan p = plan(pending({ExtendedResourceClaim::fromJson(ownRoots(1)), d}));
  ASSERT_TRUE(p.fits) << p.message;
  EXPECT_EQ(p.assignment.at("default/c/gpu"), std::vector<std::string>{"g1"});
  EXPECT_EQ(p.assignment.at("default/c/nic"), std::vector<std::string>{"x2"});
  EXPECT_EQ(p.assignment.at("default/d"), std::vector<std::string>{"g0"});
}

TEST_F(DistinctRequestsPlannerTest, ASearchPastItsBoundDoesNotFitAndSaysSo) {
  // Sixteen roots, each with a GPU and a NIC. Claim d needs the NIC under r0, where the GPU is
  // no h100: the spanning claim has fifteen roots for sixteen devices, which neither the flow
  // nor the count of values shows, and there are C(15, 8) ways to try its GPUs' roots.
  for (int i = 0; i < 16; ++i) {
    const std::string root = "r" + std::to_string(100 + i);
    add(gpu("g" + std::to_string(i), root, i == 0 ? "t4" : "h100"));
    add(device("x" + std::to_string(i), "n1", {{"pcieRoot", root}, {"first", i == 0 ? "y" : "n"}},
               kNic));
  }
  json j = ownRoots(8);
  j["spec"]["requests"][0]["metadataRequirements"] = {{"matchLabels", {{"model", "h100"}}}};
  j["spec"]["requests"][1]["extendedResourceNum"] = 8;
  auto d = testing::claim("d", 1, {{"first", "y"}}, kNic);
  const NodePlan p = plan(pending({ExtendedResourceClaim::fromJson(j), d}));
  EXPECT_FALSE(p.fits);
  EXPECT_EQ(p.message,
            "claims default/c/gpu, default/c/nic, default/d: no way of giving their devices values "
            "of their own found in 1024 tries on this node");
}

// Whether some assignment of the node's devices to every unit's slots serves them all: each
// device once, suiting its unit, meeting each unit's own constraints and those spanning two.
bool bruteForceFits(const std::vector<ExtendedResourceClaim>& units,
                    const std::vector<ExtendedResource>& devices) {
  std::vector<size_t> slotUnit;
  for (size_t u = 0; u < units.size(); ++u) {
    for (int64_t k = 0; k < units[u].extendedResourceNum; ++k) {
      slotUnit.push_back(u);
    }
  }
  std::vector<int> taken(devices.size(), -1);  // device -> slot
  std::vector<size_t> deviceOf(slotUnit.size());
  auto valid = [&]() {
    for (size_t u = 0; u < units.size(); ++u) {
      std::vector<const std::map<std::string, std::string>*> props;
      for (size_t s = 0; s < slotUnit.size(); ++s) {
        if (slotUnit[s] == u) {
          props.push_back(&devices[deviceOf[s]].properties);
        }
      }
      if (!meetConstraints(units[u], props)) {
        return false;
      }
    }
    for (size_t a = 0; a < slotUnit.size(); ++a) {
      for (size_t b = a + 1; b < slotUnit.size(); ++b) {
        if (!sharedConstraintsMet(units[slotUnit[a]], devices[deviceOf[a]].properties,
                                  units[slotUnit[b]], devices[deviceOf[b]].properties)) {
          return false;
        }
      }
    }
    return true;
  };
  auto search = [&](auto& self, size_t slot) -> bool {
    if (slot == slotUnit.size()) {
      return valid();
    }
    for (size_t d = 0; d < devices.size(); ++d) {
      // Slots of one unit take devices in increasing order: each set once.
      const bool ordered =
          slot == 0 || slotUnit[slot - 1] != slotUnit[slot] || d > deviceOf[slot - 1];
      if (taken[d] < 0 && ordered && suits(devices[d], units[slotUnit[slot]])) {
        taken[d] = static_cast<int>(slot);
        deviceOf[slot] = d;
        if (self(self, slot + 1)) {
          return true;
        }
        taken[d] = -1;
      }
    }
    return false;
  };
  return search(search, 0);
}

TEST(DistinctRequestsExact, ThePlannerFitsExactlyWhenSomeAssignmentExists) {
  const std::vector<std::string> roots = {"r0", "r1", "r2"};
  const std::vector<std::string> models = {"h100", "a100"};
  int fitting = 0;
  const int cases = 400;
  for (uint32_t seed = 1; seed <= cases; ++seed) {
    std::mt19937 rng(seed);
    auto pickOf = [&](const std::vector<std::string>& from) {
      return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
    };
    DeviceIndex index;
    std::vector<ExtendedResource> devices;
    const int count = std::uniform_int_distribution<int>(2, 7)(rng);
    for (int i = 0; i < count; ++i) {
      const std::string name = "d" + std::to_string(i);
      ExtendedResource d = std::bernoulli_distribution(0.6)(rng)
                               ? gpu(name, pickOf(roots), pickOf(models))
                               : nic(name, pickOf(roots));
      d.phaseWritten = true;
      index.upsert(std::make_shared<const ExtendedResource>(d));
      devices.push_back(std::move(d));
    }
    json j = ownRoots(std::uniform_int_distribution<int>(1, 2)(rng));
    if (std::bernoulli_distribution(0.5)(rng)) {
      j["spec"]["requests"][0]["metadataRequirements"] = {{"matchLabels", {{"model", "h100"}}}};
    }
    std::vector<ExtendedResourceClaim> claims = {ExtendedResourceClaim::fromJson(j)};
    ASSERT_EQ(claims[0].invalid, "");
    if (std::bernoulli_distribution(0.6)(rng)) {  // a second claim wanting GPUs too
      claims.push_back(testing::claim("d", std::uniform_int_distribution<int>(1, 2)(rng),
                                      {{"model", pickOf(models)}}));
    }
    PodClaims pc;
    std::vector<ExtendedResourceClaim> units;
    for (const auto& c : claims) {
      pc.pending.push_back(std::make_shared<const ExtendedResourceClaim>(c));
      for (auto& u : c.units()) {
        units.push_back(std::move(u));
      }
    }
    const NodePlan exact = planNode(pc, "u", "n1", {}, index);
    ASSERT_EQ(exact.fits, bruteForceFits(units, devices))
        << "seed " << seed << ": " << exact.message;
    NodeFitter fitter(pc, "u", index);
    const std::vector<std::string_view> nodes = {"n1"};
    fitter.planAll(nodes, true, [&](size_t, NodePlan& counted) {
      EXPECT_EQ(counted.fits, exact.fits) << "seed " << seed;
      EXPECT_EQ(counted.message, exact.message) << "seed " << seed;
    });
    if (!exact.fits) {
      continue;
    }
    ++fitting;
    // The chosen devices themselves pass the checks the brute force applies.
    std::map<std::string, const ExtendedResource*> byName;
    for (const auto& d : devices) {
      byName[d.meta.name] = &d;
    }
    std::set<std::string> used;
    std::vector<std::pair<const ExtendedResourceClaim*, const ExtendedResource*>> chosen;
    for (const auto& u : units) {
      for (const auto& name : exact.assignment.at(unitKey(u))) {
        const ExtendedResource* d = byName.at(name);
        EXPECT_TRUE(used.insert(name).second) << "seed " << seed << ": " << name << " twice";
        EXPECT_TRUE(suits(*d, u)) << "seed " << seed;
        for (const auto& [other, otherDevice] : chosen) {
          EXPECT_TRUE(sharedConstraintsMet(u, d->properties, *other, otherDevice->properties))
              << "seed " << seed << ": " << name << " and " << otherDevice->meta.name;
        }
        chosen.emplace_back(&u, d);
      }
    }
  }
  EXPECT_GT(fitting, cases / 10);
  EXPECT_LT(fitting, cases * 9 / 10);
}

}  // namespace
}  // namespace ker

// The extender decides a fit two ways: the counted path (free devices grouped by property set,
// used by filter and prioritize) and the exact path (device by device, which the bind uses and
// which chooses the devices). The exact path is the reference. On generated clusters, both must
// give every node the same answer, message and cost, and every assignment the exact
// path makes must satisfy its claims.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/label_selector.h"
#include "model/suitability.h"
#include "scheduler/fit/planner.h"
#include "scheduler_fixtures.h"

namespace ker {
namespace {

using testing::claim;
using testing::device;

struct Generated {
  std::vector<std::string> nodes;
  std::map<std::string, ExtendedResource> devices;
  std::map<std::string, ClaimPtr> claims;  // by key
};

template <class T>
const T& pick(std::mt19937& rng, const std::vector<T>& from) {
  return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
}

bool coin(std::mt19937& rng, double p) {
  return std::bernoulli_distribution(p)(rng);
}

Generated generate(std::mt19937& rng, DeviceIndex& index) {
  const std::vector<std::string> resources = {"nvidia.com/gpu", "example.com/fpga"};
  const std::vector<std::string> types = {"k80", "a100", "t4"};
  const std::vector<std::string> zones = {"a", "b"};
  const std::vector<std::string> memories = {"16Gi", "40Gi", "42949672960", "80Gi", "lots"};
  Generated g;
  const int nodes = std::uniform_int_distribution<int>(1, 12)(rng);
  for (int n = 0; n < nodes; ++n) {
    const std::string node = "n" + std::to_string(n);
    g.nodes.push_back(node);
    const int count = std::uniform_int_distribution<int>(0, 8)(rng);
    for (int i = 0; i < count; ++i) {
      const std::string name = node + "-d" + std::to_string(i);
      std::map<std::string, std::string> props = {{"type", pick(rng, types)}};
      if (coin(rng, 0.5)) {
        props["zone"] = pick(rng, zones);
      }
      if (coin(rng, 0.7)) {
        props["memory"] = pick(rng, memories);
      }
      ExtendedResource d = device(name, node, props, pick(rng, resources));
      if (coin(rng, 0.2)) {  // held by some other claim
        d.phase = DevicePhase::kBound;
        d.claimRef = ClaimRef{"default", "other", "uid-other"};
      }
      d.phaseWritten = true;
      index.upsert(std::make_shared<const ExtendedResource>(d));
      g.devices.emplace(name, std::move(d));
    }
  }
  return g;
}

ClaimPtr generateClaim(std::mt19937& rng, const Generated& g, const std::string& name) {
  const std::vector<std::string> resources = {"nvidia.com/gpu", "example.com/fpga"};
  ExtendedResourceClaim c =
      claim(name, std::uniform_int_distribution<int>(1, 2)(rng), {}, pick(rng, resources));
  switch (std::uniform_int_distribution<int>(0, 5)(rng)) {
    case 0:
      break;  // any device of the resource
    case 1:
      c.metadataRequirements.matchLabels = {
          {"type", pick(rng, std::vector<std::string>{"k80", "t4"})}};
      break;
    case 2:
      c.metadataRequirements.matchExpressions = {{"type", SelectorOperator::kIn, {"k80", "a100"}}};
      break;
    case 3:
      c.metadataRequirements.matchExpressions = {
          {"zone",
           coin(rng, 0.5) ? SelectorOperator::kExists : SelectorOperator::kDoesNotExist,
           {}}};
      break;
    case 4:
      c.metadataRequirements.matchExpressions = {{"type", SelectorOperator::kNotIn, {"k80"}}};
      break;
    default:
      c.metadataRequirements.matchExpressions = {
          {"memory",
           pick(rng, std::vector<SelectorOperator>{SelectorOperator::kGt, SelectorOperator::kGe,
                                                   SelectorOperator::kLt, SelectorOperator::kLe}),
           {pick(rng, std::vector<std::string>{"40Gi", "20Gi", "64Gi"})}}};
      break;
  }
  if (coin(rng, 0.15)) {  // all its devices in one zone
    c.constraints = {{"zone", ""}};
  }
  if (coin(rng, 0.15)) {  // each of its devices of a type of its own
    c.constraints.push_back({"", "type"});
  }
  if (coin(rng, 0.15)) {  // a k80, else two devices of any type with no zone
    ClaimAlternative k80{"k80", 1, {}};
    k80.metadataRequirements.matchLabels = {{"type", "k80"}};
    ClaimAlternative two{"two", 2, {}};
    two.metadataRequirements.matchExpressions = {{"zone", SelectorOperator::kDoesNotExist, {}}};
    c.firstAvailable = {k80, two};
    c.metadataRequirements = {};
    c.metadataRequirements.dialect = SelectorDialect::kProperties;
  }
  if (coin(rng, 0.2) && !g.devices.empty()) {  // only these devices
    std::vector<std::string> allowed;
    for (const auto& [n, d] : g.devices) {
      if (coin(rng, 0.4)) {
        allowed.push_back(n);
      }
    }
    c.extendedResourceNames = allowed;
  }
  if (coin(rng, 0.2)) {  // the above as request "a", beside one device of the other resource
    ClaimRequest a{"a", c.rawResourceName, c.extendedResourceNum, c.metadataRequirements,
                   c.firstAvailable};
    ClaimRequest b{"b", c.rawResourceName == resources[0] ? resources[1] : resources[0], 1, {}, {}};
    b.metadataRequirements.dialect = SelectorDialect::kProperties;
    c.requests = {a, b};
    c.rawResourceName.clear();
    c.extendedResourceNum = 1;
    c.metadataRequirements = b.metadataRequirements;
    c.firstAvailable.clear();
    for (auto& k : c.constraints) {
      // A distinct type may span both requests (their devices then all differ in type).
      if (k.distinctProperty.empty() || coin(rng, 0.5)) {
        k.requests = {"a"};
      }
    }
    if (coin(rng, 0.6)) {  // both requests' devices in one zone
      c.constraints.push_back({"zone", "", {}});
    }
  }
  return std::make_shared<const ExtendedResourceClaim>(c);
}

std::vector<ExtendedResourceClaim> unitsOf(const PodClaims& pc) {
  std::vector<ExtendedResourceClaim> out;
  for (const auto& c : pc.pending) {
    for (auto& unit : c->units()) {
      out.push_back(std::move(unit));
    }
  }
  return out;
}

// Without a topology property, and with one (devices' zone) under either strategy: the counted
// path must cost a node as the exact path's chosen devices do.
class PlannerDifferentialTest : public ::testing::TestWithParam<Scoring> {};

TEST_P(PlannerDifferentialTest, CountedAndExactPathsAgreeOnGeneratedClusters) {
  const Scoring scoring = GetParam();
  int fitting = 0;
  int compared = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    DeviceIndex index;
    Generated g = generate(rng, index);
    Pod pod;
    pod.meta.ns = "default";
    pod.meta.name = "p";
    pod.meta.uid = "uid-p";
    const int claims = std::uniform_int_distribution<int>(1, 2)(rng);
    for (int i = 0; i < claims; ++i) {
      const std::string name = "c" + std::to_string(i);
      g.claims[objectKey("default", name)] = generateClaim(rng, g, name);
      pod.claims.push_back(name);
    }
    const PodClaims pc = resolveClaims(pod, [&](const std::string& key) -> ClaimPtr {
      auto it = g.claims.find(key);
      return it == g.claims.end() ? nullptr : it->second;
    });
    std::vector<std::string_view> nodes(g.nodes.begin(), g.nodes.end());
    // Nodes that have no devices, and repeats, as kube-scheduler's lists can hold.
    nodes.push_back("empty-node");
    nodes.push_back(nodes.front());
    NodeFitter fitter(pc, "uid-p", index, scoring);
    std::vector<NodePlan> counted;
    fitter.planAll(nodes, /*withMessage=*/true,
                   [&](size_t, NodePlan& plan) { counted.push_back(std::move(plan)); });
    ASSERT_EQ(counted.size(), nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      const std::string node(nodes[i]);
      const NodePlan exact = planNode(pc, "uid-p", node, {}, index, scoring);
      ++compared;
      ASSERT_EQ(counted[i].fits, exact.fits) << "seed " << seed << " node " << node;
      EXPECT_EQ(counted[i].message, exact.message) << "seed " << seed << " node " << node;
      EXPECT_EQ(counted[i].cost.leftover, exact.cost.leftover)
          << "seed " << seed << " node " << node;
      EXPECT_EQ(counted[i].cost.alternative, exact.cost.alternative)
          << "seed " << seed << " node " << node;
      EXPECT_EQ(counted[i].alternatives, exact.alternatives) << "seed " << seed << " node " << node;
      EXPECT_EQ(counted[i].cost.fragmentation, exact.cost.fragmentation)
          << "seed " << seed << " node " << node;
      if (!exact.fits) {
        continue;
      }
      ++fitting;
      // The exact path's choice satisfies every claim (each of its requests) with distinct free
      // devices of the node, which meet the constraints spanning its requests.
      std::set<std::string> used;
      std::vector<std::pair<ExtendedResourceClaim, std::string>> chosenBy;  // (unit, device)
      for (const auto& unit : unitsOf(pc)) {
        const std::string key = unitKey(unit);
        // The unit as the alternative it fits as, if it has any.
        ExtendedResourceClaim effective = unit;
        for (const auto& a : unit.firstAvailable) {
          if (a.name == exact.alternatives.at(key)) {
            effective = unit.as(a);
          }
        }
        const auto* c = &effective;
        const auto& chosen = exact.assignment.at(key);
        ASSERT_EQ(static_cast<int64_t>(chosen.size()), c->extendedResourceNum) << "seed " << seed;
        for (const auto& name : chosen) {
          const ExtendedResource& d = g.devices.at(name);
          for (const auto& [other, otherName] : chosenBy) {
            EXPECT_TRUE(
                sharedConstraintsMet(unit, d.properties, other, g.devices.at(otherName).properties))
                << "seed " << seed << ": " << name << " and " << otherName;
          }
          chosenBy.emplace_back(unit, name);
          EXPECT_TRUE(used.insert(name).second) << "seed " << seed << ": " << name << " twice";
          EXPECT_EQ(d.rawResourceName, c->rawResourceName) << "seed " << seed;
          EXPECT_EQ(d.phase, DevicePhase::kAvailable) << "seed " << seed;
          EXPECT_TRUE(matches(c->metadataRequirements, d.properties)) << "seed " << seed;
          EXPECT_EQ(d.nodeAffinity.terms[0].matchFields[0].values[0], node) << "seed " << seed;
          if (c->extendedResourceNames) {
            EXPECT_NE(
                std::find(c->extendedResourceNames->begin(), c->extendedResourceNames->end(), name),
                c->extendedResourceNames->end())
                << "seed " << seed;
          }
        }
      }
    }
  }
  // The generator must produce both answers often enough for the comparison to mean much.
  EXPECT_GT(fitting, compared / 10) << fitting << " of " << compared;
  EXPECT_LT(fitting, compared * 9 / 10) << fitting << " of " << compared;
}

INSTANTIATE_TEST_SUITE_P(Scorings, PlannerDifferentialTest,
                         ::testing::Values(Scoring{}, Scoring{ScoringStrategy::kBinpack, "zone"},
                                           Scoring{ScoringStrategy::kSpread, "zone"}),
                         [](const auto& info) {
                           return info.param.topologyProperty.empty()
                                      ? std::string("NoTopology")
                                      : scoringStrategyName(info.param.strategy) +
                                            std::string("ByZone");
                         });

}  // namespace
}  // namespace ker

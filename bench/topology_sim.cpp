// How many multi-device jobs fit under each way of choosing nodes and devices: a stream of
// 1-, 2-, 4- and 8-GPU jobs arriving and finishing on nodes of 8 GPUs in two NUMA islands,
// decided by the extender's own planner (NodeFitter, rankNodes, planNode) over a DeviceIndex,
// as the filter and bind decide them. 2- and 4-GPU jobs want their GPUs on one NUMA node (a
// matchProperty constraint); an 8-GPU job wants a whole node. A job that fits nowhere when it
// arrives is turned away (no queue), so the policies are compared on the same offered jobs.
//
// Policies:
//   topology   --scoring=binpack --topology-property=numa
//   binpack    --scoring=binpack (the fewest matching devices left; devices in name order)
//   first-fit  the first node in list order that fits, its first devices: DRA's allocator,
//              which scores no devices, on a scheduler that does not look at them either
//
//   topology_sim [--nodes 32] [--ticks 3000] [--load 1.0] [--seeds 5] [--names ordered|shuffled]
//                [--out FILE]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/flags.h"
#include "scheduler/cache/device_index.h"
#include "scheduler/fit/allocator.h"
#include "scheduler/fit/planner.h"

namespace ker::bench {
namespace {

using json = nlohmann::json;

constexpr int kGpusPerNode = 8;
constexpr int kGpusPerIsland = 4;
constexpr const char* kResource = "nvidia.com/gpu";

struct Job {
  int arrives = 0;
  int size = 0;
  int lifetime = 0;
  bool oneIsland = false;  // a 2- or 4-GPU job that wants its GPUs on one NUMA node
};

// The same offered jobs for every policy: Poisson arrivals at `load` times the cluster's
// capacity (devices × ticks), sizes 1/2/4/8 with probabilities .4/.3/.2/.1, lifetimes uniform
// in [20, 80] ticks.
std::vector<Job> jobStream(uint32_t seed, int nodes, int ticks, double load, double oneIsland) {
  std::mt19937 rng(seed);
  const std::vector<int> sizes = {1, 2, 4, 8};
  std::discrete_distribution<int> size({40, 30, 20, 10});
  std::uniform_int_distribution<int> lifetime(20, 80);
  std::uniform_real_distribution<double> coin(0, 1);
  const double meanDemand = (0.4 * 1 + 0.3 * 2 + 0.2 * 4 + 0.1 * 8) * 50.0;
  const double perTick = load * nodes * kGpusPerNode / meanDemand;
  std::poisson_distribution<int> arrivals(perTick);
  std::vector<Job> jobs;
  for (int t = 0; t < ticks; ++t) {
    for (int k = arrivals(rng); k > 0; --k) {
      const int n = sizes[static_cast<size_t>(size(rng))];
      jobs.push_back({t, n, lifetime(rng), (n == 2 || n == 4) && coin(rng) < oneIsland});
    }
  }
  return jobs;
}

std::string nodeName(int n) {
  return "node-" + std::to_string(n);
}

// Which island GPU `gpu` of a node is in. In name order (gpu0-3 on numa 0) taking devices by
// name fills one island before the other, as luck would have it; with `shuffled`, names say
// nothing of islands, as with devices named by UUID (discovered from nvidia-smi or CDI).
bool shuffledNames = false;
int islandOf(int node, int gpu) {
  if (!shuffledNames) {
    return gpu / kGpusPerIsland;
  }
  std::vector<int> order(kGpusPerNode);
  for (int g = 0; g < kGpusPerNode; ++g) {
    order[static_cast<size_t>(g)] = g;
  }
  std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<uint32_t>(node) + 1));
  return order[static_cast<size_t>(gpu)] / kGpusPerIsland;
}

json deviceObject(int node, int gpu, const std::string& phase) {
  json term = {{"matchFields",
                {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {nodeName(node)}}}}}};
  json d = {{"apiVersion", "extendedresource.io/v1alpha1"},
            {"kind", "ExtendedResource"},
            {"metadata", {{"name", nodeName(node) + "-gpu" + std::to_string(gpu)}}},
            {"spec",
             {{"rawResourceName", kResource},
              {"deviceID", "GPU-" + std::to_string(node * kGpusPerNode + gpu)},
              {"properties", {{"numa", std::to_string(islandOf(node, gpu))}}},
              {"nodeAffinity", {{"required", {{"nodeSelectorTerms", {term}}}}}}}}};
  if (phase == "Bound") {
    d["status"] = {{"phase", "Bound"},
                   {"claimRef", {{"namespace", "sim"}, {"name", "job"}, {"uid", "uid-job"}}}};
  }
  return d;
}

std::shared_ptr<const ExtendedResourceClaim> jobClaim(int size, bool oneIsland) {
  json spec = {{"rawResourceName", kResource}, {"extendedResourceNum", size}};
  if (oneIsland) {
    spec["constraints"] = {{{"matchProperty", "numa"}}};
  }
  return std::make_shared<const ExtendedResourceClaim>(ExtendedResourceClaim::fromJson(
      {{"apiVersion", "extendedresource.io/v1alpha1"},
       {"kind", "ExtendedResourceClaim"},
       {"metadata",
        {{"name", "job-" + std::to_string(size) + (oneIsland ? "-numa" : "")},
         {"namespace", "sim"}}},
       {"spec", spec}}));
}

enum class Policy { kTopology, kBinpack, kFirstFit };
const char* policyName(Policy p) {
  switch (p) {
    case Policy::kTopology:
      return "topology";
    case Policy::kBinpack:
      return "binpack";
    case Policy::kFirstFit:
      return "first-fit";
  }
  return "";
}

// A job's kind in the table: its size, and whether it wants one island.
using Kind = std::pair<int, bool>;
const std::vector<Kind> kKinds = {{1, false}, {2, false}, {2, true},
                                  {4, false}, {4, true},  {8, false}};
std::string kindName(const Kind& k) {
  return std::to_string(k.first) + "-GPU" + (k.second ? " one-NUMA" : "");
}

struct Tally {
  std::map<Kind, int> offered;
  std::map<Kind, int> placed;
  // Multi-GPU jobs without a constraint whose GPUs all landed on one island anyway.
  int placedInOneIsland = 0;
  double deviceTicks = 0;  // devices in use, summed over the ticks
};

void setDevice(DeviceIndex& index, const std::string& name, const std::string& phase) {
  const size_t dash = name.rfind("-gpu");
  const int node = std::stoi(name.substr(5, dash - 5));
  const int gpu = std::stoi(name.substr(dash + 4));
  index.upsert(std::make_shared<const ExtendedResource>(
      ExtendedResource::fromJson(deviceObject(node, gpu, phase))));
}

Tally simulate(Policy policy, const std::vector<Job>& jobs, int nodes, int ticks) {
  DeviceIndex index;
  for (int n = 0; n < nodes; ++n) {
    for (int g = 0; g < kGpusPerNode; ++g) {
      setDevice(index, nodeName(n) + "-gpu" + std::to_string(g), "Available");
    }
  }
  std::vector<std::string> names;
  for (int n = 0; n < nodes; ++n) {
    names.push_back(nodeName(n));
  }
  const std::vector<std::string_view> views(names.begin(), names.end());
  const Scoring scoring = policy == Policy::kTopology ? Scoring{ScoringStrategy::kBinpack, "numa"}
                                                      : Scoring{ScoringStrategy::kBinpack, ""};
  std::map<Kind, std::shared_ptr<const ExtendedResourceClaim>> claims;
  for (const Kind& k : kKinds) {
    claims[k] = jobClaim(k.first, k.second);
  }
  std::multimap<int, std::vector<std::string>> ending;  // tick -> devices
  Tally tally;
  size_t next = 0;
  int inUse = 0;
  for (int t = 0; t < ticks; ++t) {
    for (auto it = ending.begin(); it != ending.end() && it->first <= t; it = ending.erase(it)) {
      for (const auto& d : it->second) {
        setDevice(index, d, "Available");
      }
      inUse -= static_cast<int>(it->second.size());
    }
    for (; next < jobs.size() && jobs[next].arrives == t; ++next) {
      const Job& job = jobs[next];
      const Kind kind{job.size, job.oneIsland};
      ++tally.offered[kind];
      PodClaims pc;
      pc.pending.push_back(claims[kind]);
      NodeFitter fitter(pc, "uid-job", index, scoring);
      std::vector<std::optional<NodeCost>> costs(views.size());
      fitter.planAll(views, false, [&](size_t i, NodePlan& plan) {
        if (plan.fits) {
          costs[i] = plan.cost;
        }
      });
      std::optional<size_t> chosen;
      if (policy == Policy::kFirstFit) {
        for (size_t i = 0; i < costs.size() && !chosen; ++i) {
          if (costs[i]) {
            chosen = i;
          }
        }
      } else if (auto order = rankNodes(costs, scoring.strategy); !order.empty()) {
        chosen = order.front();
      }
      if (!chosen) {
        continue;
      }
      const NodePlan plan = planNode(pc, "uid-job", names[*chosen], {}, index, scoring);
      std::vector<std::string> taken;
      for (const auto& [claim, devices] : plan.assignment) {
        taken.insert(taken.end(), devices.begin(), devices.end());
      }
      for (const auto& d : taken) {
        setDevice(index, d, "Bound");
      }
      inUse += static_cast<int>(taken.size());
      ++tally.placed[kind];
      if (!job.oneIsland && job.size > 1 && job.size < kGpusPerNode) {
        std::set<int> islands;
        for (const auto& d : taken) {
          islands.insert(islandOf(*chosen, std::stoi(d.substr(d.rfind("-gpu") + 4))));
        }
        tally.placedInOneIsland += islands.size() == 1 ? 1 : 0;
      }
      ending.emplace(t + job.lifetime, std::move(taken));
    }
    tally.deviceTicks += inUse;
  }
  return tally;
}

}  // namespace
}  // namespace ker::bench

int main(int argc, char** argv) {
  using namespace ker;
  using namespace ker::bench;
  FlagSet flags("topology_sim",
                "How many multi-device jobs fit with topology-aware scoring, today's binpack and "
                "first fit, on nodes of 8 GPUs in two NUMA islands.");
  auto* nodes = flags.addInt("nodes", 32, "nodes of 8 GPUs each");
  auto* ticks = flags.addInt("ticks", 3000, "length of the stream; jobs live 20 to 80 ticks");
  auto* load = flags.addDouble("load", 1.0, "offered devices over the cluster's capacity");
  auto* oneIsland =
      flags.addDouble("one-numa", 0.5, "share of the 2- and 4-GPU jobs that want one NUMA node");
  auto* seeds = flags.addInt("seeds", 5, "job streams, each run under every policy");
  auto* names = flags.addString("names", "ordered",
                                "ordered: gpu0-3 on numa 0, gpu4-7 on numa 1; shuffled: device "
                                "names in no order of their islands (as UUIDs)");
  auto* out = flags.addString("out", "", "also write the table to this file");
  if (auto r = flags.parse(argc, argv); r.status != FlagParseResult::kOk) {
    r.print();
    return r.exitCode();
  }
  if (*names != "ordered" && *names != "shuffled") {
    std::fprintf(stderr, "--names must be ordered or shuffled, got \"%s\"\n", names->c_str());
    return 2;
  }
  shuffledNames = *names == "shuffled";
  const std::vector<Policy> policies = {Policy::kTopology, Policy::kBinpack, Policy::kFirstFit};
  std::map<Policy, Tally> total;
  std::map<Policy, double> busy;
  for (int64_t s = 1; s <= *seeds; ++s) {
    const auto jobs = jobStream(static_cast<uint32_t>(s), static_cast<int>(*nodes),
                                static_cast<int>(*ticks), *load, *oneIsland);
    for (Policy p : policies) {
      const Tally t = simulate(p, jobs, static_cast<int>(*nodes), static_cast<int>(*ticks));
      for (const Kind& k : kKinds) {
        total[p].placed[k] += t.placed.count(k) != 0 ? t.placed.at(k) : 0;
        total[p].offered[k] += t.offered.count(k) != 0 ? t.offered.at(k) : 0;
      }
      total[p].placedInOneIsland += t.placedInOneIsland;
      busy[p] += t.deviceTicks /
                 (static_cast<double>(*nodes) * kGpusPerNode * static_cast<double>(*ticks));
    }
  }
  char line[512];
  std::string md;
  std::snprintf(line, sizeof line,
                "%lld nodes × 8 GPUs (2 NUMA islands of 4, %s names), %lld ticks, offered load "
                "%.2f, %lld seeds; %.0f%% of the 2- and 4-GPU jobs want one NUMA node. Placed "
                "of offered, by job kind:\n\n",
                static_cast<long long>(*nodes), names->c_str(), static_cast<long long>(*ticks),
                *load, static_cast<long long>(*seeds), 100 * *oneIsland);
  md += line;
  md += "| policy";
  for (const Kind& k : kKinds) {
    md += " | " + kindName(k);
  }
  md += " | multi-GPU jobs | unconstrained 2/4-GPU jobs on one NUMA | GPUs busy |\n|---";
  for (size_t i = 0; i < kKinds.size() + 3; ++i) {
    md += "|---";
  }
  md += "|\n";
  for (Policy p : policies) {
    const Tally& t = total[p];
    std::string row = std::string("| ") + policyName(p);
    int multi = 0;
    int multiOffered = 0;
    int loose = 0;
    for (const Kind& k : kKinds) {
      const int n = t.placed.at(k);
      const int o = t.offered.at(k);
      std::snprintf(line, sizeof line, " | %.1f%%", o != 0 ? 100.0 * n / o : 0.0);
      row += line;
      if (k.first > 1) {
        multi += n;
        multiOffered += o;
      }
      if (k.first > 1 && k.first < kGpusPerNode && !k.second) {
        loose += n;
      }
    }
    std::snprintf(line, sizeof line, " | %d of %d (%.1f%%) | %.1f%% | %.1f%% |\n", multi,
                  multiOffered, multiOffered != 0 ? 100.0 * multi / multiOffered : 0.0,
                  loose != 0 ? 100.0 * t.placedInOneIsland / loose : 0.0,
                  100.0 * busy[p] / static_cast<double>(*seeds));
    md += row + line;
  }
  std::fputs(md.c_str(), stdout);
  if (!out->empty()) {
    std::ofstream(*out) << md;
  }
  return 0;
}

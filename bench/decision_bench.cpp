// The extender's request handlers in-process, without HTTP or an API server: what one filter
// or prioritize call costs in decoding, deciding and rendering, with the same cluster shapes
// and request bodies as extender_bench. A quick loop for profiling (perf record) and for
// checking an optimisation before the full `make bench`.
//
// With --preempt (the default), also a filter that plans preemption: every device held by a
// pod of low priority, a pod of high priority arriving; each call plans from scratch (the order
// is refused, so no nomination short-cuts the next call).
//
//   decision_bench [--nodes 5000] [--iterations 200] [--binds-in-flight 8] [--preempt]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/cluster.h"
#include "common/flags.h"
#include "common/metrics.h"
#include "scheduler/bind/binder.h"
#include "scheduler/extender.h"
#include "scheduler/extender_handlers.h"
#include "test/unit/fake_api_client.h"

namespace ker::bench {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Percentiles {
  double p50 = 0;
  double p99 = 0;
};

// This thread's CPU time: unlike wall time, not inflated while other jobs on a shared
// machine have the core.
double threadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

Percentiles percentiles(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) {
    return ms[static_cast<size_t>(q * static_cast<double>(ms.size() - 1))];
  };
  return {at(0.50), at(0.99)};
}

using NodeMap = std::unordered_map<std::string, std::shared_ptr<const Node>>;

// The extender wired as the app wires it, over in-memory claims and nodes.
struct WiredExtender {
  WiredExtender(DeviceIndex& index, const std::map<std::string, ClaimPtr>& claims,
                const NodeMap& nodes, const Scoring& scoring = {})
      : binder(api, index,
               [&nodes](const std::string& node) { return nodes.at(node)->meta.labels; },
               {.scoring = scoring}),
        extender(
            index,
            [&claims](const std::string& key) {
              auto it = claims.find(key);
              return it == claims.end() ? nullptr : it->second;
            },
            [&nodes](const std::string& node) -> std::shared_ptr<const Node> {
              auto it = nodes.find(node);
              return it == nodes.end() ? nullptr : it->second;
            },
            binder, scoring) {}

  testing::FakeApiClient api;
  Binder binder;
  Extender extender;
};

// Every device of every node held by its own pod of priority 10; a pod of priority 1000
// claiming one k80 is filtered against all nodes. What is timed is the whole filter: no node
// fits, so the preemption gathers holders on the first Extender::kMaxPreemptionNodes failed
// nodes and plans each.
int timePreemption(size_t n, const std::vector<std::string>& names, const NodeMap& nodes,
                   int64_t iterations) {
  DeviceIndex index;
  std::map<std::string, ClaimPtr> claims;
  std::map<std::string, PodPtr> pods;
  for (size_t i = 0; i < n; ++i) {
    for (int d = 0; d < kDevicesPerNode; ++d) {
      index.upsert(
          std::make_shared<const ExtendedResource>(ExtendedResource::fromJson(device(i, d))));
      const std::string holder = "h-" + std::to_string(i) + "-" + std::to_string(d);
      json c = claim("bench", holder, 1, "");
      c["metadata"]["uid"] = "uid-c-" + holder;
      c["status"] = {{"phase", "Bound"},
                     {"extendedResourceNames", {deviceName(i, d)}},
                     {"podRef", {{"name", holder}, {"uid", "uid-" + holder}}}};
      auto parsed =
          std::make_shared<const ExtendedResourceClaim>(ExtendedResourceClaim::fromJson(c));
      index.setClaimDevices("bench/" + holder, parsed->rawResourceName, parsed->heldDevices());
      claims["bench/" + holder] = std::move(parsed);
      Pod p;
      p.meta.ns = "bench";
      p.meta.name = holder;
      p.meta.uid = "uid-" + holder;
      p.nodeName = nodeName(i);
      p.priority = 10;
      pods["bench/" + holder] = std::make_shared<const Pod>(std::move(p));
    }
  }
  json want = claim("bench", "one-k80", 1, "k80");
  want["metadata"]["uid"] = "uid-one-k80";
  claims["bench/one-k80"] =
      std::make_shared<const ExtendedResourceClaim>(ExtendedResourceClaim::fromJson(want));

  WiredExtender wired(index, claims, nodes);
  Extender& extender = wired.extender;
  uint64_t orders = 0;
  extender.enablePreemption({
      .pods = [&](const std::string& key) -> PodPtr {
        auto it = pods.find(key);
        return it == pods.end() ? nullptr : it->second;
      },
      .submit =
          [&](const PreemptionOrder&) {
            ++orders;
            return false;
          },
      .lowestPriority = [] { return std::optional<int32_t>(10); },
  });
  metrics::Registry registry;
  ExtenderHandlers handlers(extender, registry);
  json pod = bench::pod("bench", "high", {"one-k80"});
  pod["metadata"]["uid"] = "pod-uid-high";
  pod["spec"]["priority"] = 1000;
  const std::string body =
      "{\"Pod\":" + pod.dump() + ",\"Nodes\":null,\"NodeNames\":" + json(names).dump() + "}";
  std::vector<double> ms;
  std::vector<double> cpuMs;
  for (int64_t k = 0; k < std::max<int64_t>(5, iterations / 10); ++k) {
    const auto t0 = Clock::now();
    const double cpu0 = threadCpuMs();
    HttpResponse r = handlers.filter(body);
    cpuMs.push_back(threadCpuMs() - cpu0);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (r.status != 200) {
      std::fprintf(stderr, "unexpected status %d: %s\n", r.status, r.body.text.c_str());
      return 1;
    }
  }
  if (orders != ms.size()) {
    std::fprintf(stderr, "expected one preemption order per call, got %llu in %zu calls\n",
                 static_cast<unsigned long long>(orders), ms.size());
    return 1;
  }
  const auto p = percentiles(ms);
  const auto cpu = percentiles(cpuMs);
  std::printf("%-10s %-10s %-7d %9.1fK %10.3f %10.3f %10.3f %10.3f\n", "NodeNames", "preempt", 1,
              static_cast<double>(body.size()) / 1024, p.p50, p.p99, cpu.p50, cpu.p99);
  return 0;
}

int run(int argc, char** argv) {
  FlagSet flags("decision_bench", "Times the extender's handlers in-process.");
  auto* nodeCount = flags.addInt("nodes", 5000, "nodes in the cluster (8 devices each)");
  auto* iterations = flags.addInt("iterations", 200, "calls per verb and mode");
  auto* modes = flags.addString("modes", "NodeNames,NodeList", "request modes to measure");
  auto* inFlight = flags.addInt("binds-in-flight", 0,
                                "nodes on which another pod's bind holds a device meanwhile");
  auto* preempt = flags.addBool("preempt", true, "also time a filter that plans preemption");
  auto* topology = flags.addString(
      "topology-property", "", "the extender's --topology-property (the devices have numaNode)");
  if (auto r = flags.parse(argc, argv); r.status != FlagParseResult::kOk) {
    r.print();
    return r.exitCode();
  }
  const auto n = static_cast<size_t>(*nodeCount);

  DeviceIndex index;
  NodeMap nodes;
  std::vector<std::string> names;
  std::vector<json> nodeObjects;
  for (size_t i = 0; i < n; ++i) {
    json node = kubeletNode(i);
    auto parsed = std::make_shared<const Node>(Node::fromJson(node));
    nodes[parsed->meta.name] = parsed;
    names.push_back(parsed->meta.name);
    nodeObjects.push_back(std::move(node));
    for (int d = 0; d < kDevicesPerNode; ++d) {
      index.upsert(
          std::make_shared<const ExtendedResource>(ExtendedResource::fromJson(device(i, d))));
    }
  }
  std::map<std::string, ClaimPtr> claims;
  for (const auto& [name, count, type, constrained] :
       {std::tuple{"one-k80", 1, "k80", false}, std::tuple{"two-any", 2, "", false},
        std::tuple{"two-k80-one-numa", 2, "k80", true},
        std::tuple{"two-any-one-numa", 2, "", true}}) {
    json c = claim("bench", name, count, type);
    if (constrained) {
      c["spec"]["constraints"] = {{{"matchProperty", "numaNode"}}};
    }
    c["metadata"]["uid"] = std::string("uid-") + name;
    claims["bench/" + std::string(name)] =
        std::make_shared<const ExtendedResourceClaim>(ExtendedResourceClaim::fromJson(c));
  }
  // Named requests, a k80 and a p100: on one NUMA node (the rule spanning both), or each on a
  // NUMA node of its own (a distinct rule spanning both, which the allocator searches for).
  for (const auto& [name, rule] : {std::pair{"k80-and-p100-one-numa", "matchProperty"},
                                   std::pair{"k80-and-p100-own-numa", "distinctProperty"}}) {
    json c = claim("bench", name, 1, "k80");
    const json k80 = c["spec"]["metadataRequirements"];
    c["spec"] = {{"requests",
                  {{{"name", "k80"}, {"rawResourceName", kResource}, {"metadataRequirements", k80}},
                   {{"name", "p100"},
                    {"rawResourceName", kResource},
                    {"metadataRequirements", {{"matchLabels", {{"type", "p100"}}}}}}}},
                 {"constraints", {{{rule, "numaNode"}}}}};
    c["metadata"]["uid"] = std::string("uid-") + name;
    claims["bench/" + std::string(name)] =
        std::make_shared<const ExtendedResourceClaim>(ExtendedResourceClaim::fromJson(c));
  }

  WiredExtender wired(index, claims, nodes, Scoring{ScoringStrategy::kBinpack, *topology});
  Extender& extender = wired.extender;
  metrics::Registry registry;
  ExtenderHandlers handlers(extender, registry);

  // Under load some bind nearly always holds devices: their nodes are decided device by
  // device, and every other node's lookup also checks the holds.
  for (size_t i = 0; i < std::min(n, static_cast<size_t>(std::max<int64_t>(*inFlight, 0))); ++i) {
    index.holdForBind({deviceName(i * (n / static_cast<size_t>(*inFlight)), 0)}, "bench-other-pod");
  }
  std::printf("%zu nodes, %zu devices, %zu reserved\n", n, index.size(), index.holdCount());
  // claims: how many the pod names; "c" when each has a NUMA constraint, "r" for the claim of
  // two requests sharing one, "d" for the claim of two requests on NUMA nodes of their own.
  std::printf("%-10s %-10s %-7s %10s %10s %10s %10s %10s\n", "mode", "verb", "claims", "body",
              "p50 ms", "p99 ms", "cpu p50", "cpu p99");
  for (const bool nodeList : {false, true}) {
    if (modes->find(nodeList ? "NodeList" : "NodeNames") == std::string::npos) {
      continue;
    }
    for (const auto& podClaims :
         {std::vector<std::string>{"one-k80"}, std::vector<std::string>{"one-k80", "two-any"},
          std::vector<std::string>{"two-k80-one-numa"},
          std::vector<std::string>{"two-k80-one-numa", "two-any-one-numa"},
          std::vector<std::string>{"k80-and-p100-one-numa"},
          std::vector<std::string>{"k80-and-p100-own-numa"}}) {
      const bool constrained = podClaims[0].ends_with("one-numa");
      const bool requests = podClaims[0].starts_with("k80-and");
      const bool apart = podClaims[0].ends_with("own-numa");
      json pod = bench::pod("bench", "p", podClaims);
      pod["metadata"]["uid"] = "pod-uid";
      std::string body = "{\"Pod\":" + pod.dump();
      if (nodeList) {
        body += ",\"Nodes\":{\"apiVersion\":\"v1\",\"kind\":\"NodeList\",\"items\":[";
        for (size_t i = 0; i < n; ++i) {
          body += (i ? "," : "") + nodeObjects[i].dump();
        }
        body += "]},\"NodeNames\":null}";
      } else {
        body += ",\"Nodes\":null,\"NodeNames\":" + json(names).dump() + "}";
      }
      for (const bool filter : {true, false}) {
        std::vector<double> ms;
        std::vector<double> cpuMs;
        const int64_t calls = nodeList ? std::max<int64_t>(5, *iterations / 20) : *iterations;
        for (int64_t k = 0; k < calls; ++k) {
          const auto t0 = Clock::now();
          const double cpu0 = threadCpuMs();
          HttpResponse r = filter ? handlers.filter(body) : handlers.prioritize(body);
          cpuMs.push_back(threadCpuMs() - cpu0);
          ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
          if (r.status != 200) {
            std::fprintf(stderr, "unexpected status %d: %s\n", r.status, r.body.text.c_str());
            return 1;
          }
        }
        const auto p = percentiles(ms);
        const auto cpu = percentiles(cpuMs);
        const std::string count = std::to_string(podClaims.size()) + (apart         ? "d"
                                                                      : requests    ? "r"
                                                                      : constrained ? "c"
                                                                                    : "");
        std::printf("%-10s %-10s %-7s %9.1fK %10.3f %10.3f %10.3f %10.3f\n",
                    nodeList ? "NodeList" : "NodeNames", filter ? "filter" : "prioritize",
                    count.c_str(), static_cast<double>(body.size()) / 1024, p.p50, p.p99, cpu.p50,
                    cpu.p99);
      }
    }
  }
  if (*preempt) {
    return timePreemption(n, names, nodes, *iterations);
  }
  return 0;
}

}  // namespace
}  // namespace ker::bench

int main(int argc, char** argv) {
  return ker::bench::run(argc, argv);
}

// extender_bench: measures the extender (filter, prioritize, preempt, bind) and the controller
// against a real control plane, next to the floors of the same work: the HTTP transport alone and a
// plain DOM parse. bench/run.sh starts the control plane and runs this; see bench/README.md.
//
// What it does:
// 1. Applies the CRDs and deploy/'s ServiceAccounts and RBAC (`launch.sh apply-deploy-rbac`); the
//    extender and the controller run with tokens of their ServiceAccounts, as in a cluster. The API
//    server's audit policy logs those two users only, so their requests can be counted without
//    slowing anyone else.
// 2. For 100, 1,000 and 5,000 nodes (grown in place): creates the missing Nodes and 8
//    ExtendedResources per node (pinned by `matchFields` `metadata.name`) from 32 concurrent
//    clients and times it. Nodes look like a kubelet's: labels, annotations, capacity and
//    allocatable, conditions, addresses, nodeInfo, 50 images, managedFields (about 8 KB as the API
//    server returns them). Every tenth node holds p100s only, the others four k80s and four p100s.
// 3. Starts the extender, times it to `/readyz`, and sends filter and prioritize requests as kube-
//    scheduler does: `POST` over HTTP/1.1 keep-alive with Go's headers (including `Accept-Encoding:
//    gzip`), bodies as Go's `json.Marshal` writes `ExtenderArgs`, the pod as the scheduler caches
//    it (no managedFields). Two pods: one claim (a k80), and two claims with overlapping selectors
//    (a k80, and two of k80-or-p100); in `NodeNames` mode two more with a constraint on every claim
//    (rows `1c`, `2c`; each node's devices are in two NUMA nodes of two k80s and two p100s): two
//    k80s on one NUMA node, and that beside two of k80-or-p100 on different NUMA nodes. Their
//    filter p99 is judged against the same run's unconstrained one. Both modes: `NodeNames`
//    (`nodeCacheCapable: true`) and `NodeList` (the Node objects as the API server serves them).
//    Every reply is checked once the way kube-scheduler reads it (NodeList items must come back
//    unchanged). Then latency (p50, p99) and requests per second at concurrency 1 and 8, medians of
//    `--repeats` runs; a run at concurrency 1 is at least 20 requests, so a p99 of the tens-of-MB
//    NodeList bodies is not just the largest of a handful. After those, with the `NodeNames` mode,
//    the preempt verb (row mode `MetaVictims, 100 candidates`): `ExtenderPreemptionArgs` as
//    kube-scheduler sends them with `nodeCacheCapable`, each probe pod with the first 100 nodes as
//    candidates (kube-scheduler's dry run offers at least 100, `minCandidateNodesAbsolute`), each
//    with two victims by UID that hold no device (as its victims for CPU would). The candidates'
//    devices are free, so the verb gathers each node's devices and holders and plans it, keeps the
//    nodes with k80s, drops the p100-only ones and nominates one node's devices; it adds no holder,
//    so the planner's search among many holders is not what is timed (`decision_bench` times that
//    for the filter's own preemption).
// 4. Next to each measurement, on the same body: the transport floor (a bare cpp-httplib server
//    with `TCP_NODELAY` that answers `{}`), the stack floor (the extender's own HTTP server stack,
//    `ker::HttpServer`, with a handler that answers `{}`), and a plain `nlohmann::json::parse` of
//    the body (the naive decoder). The table gives the ratios. The extender's own time per call
//    (its request-duration histogram) and its CPU time per call (`/proc/PID/stat`) separate its
//    work from the transport and from other load.
// 5. Memory: the extender's VmRSS after its caches synced, and VmHWM (peak) after the NodeNames
//    runs and after the NodeList runs.
// 6. On the 1,000-node cluster: 1,000 pods (half with one claim of one device, half with two
//    claims holding three devices) bound through `/bind`, at concurrency 1 and 8; API writes per
//    bind from the extender's `extended_resource_scheduler_api_writes_total`, reads and writes from
//    the audit log.
// 7. The controller (`--leader-elect=false`), once its work queue has drained (its first pass
//    gives every new device its status) and no device an earlier run released waits for its own
//    write: those 1,000 bound pods are deleted at once; the time until every claim is `Pending`
//    again and every device free to the next bind (`offerable`: `Available`, or freed by its
//    claim's release; watched by the bench's own informers), the controller's API requests per
//    released pod (audit log), and the CPU time kube-
//    apiserver, etcd, the controller and the bench used meanwhile, with the average number of busy
//    cores (whether the machine was the limit). When the controller binary is missing or never
//    becomes ready, this part is reported as not done.
//
// Steps 6 and 7 run `--repeats` times, each run binding the pods anew and deleting them again: the
//    bind figures are medians over the runs, and the controller's are those of the run with the
//    median release time (all release times are listed). A run that does not finish is reported
//    instead, and ends the repeats. The first run binds devices and claims the controller has not
//    yet given a status (it starts after those binds); the later runs bind ones it has released.
//
// The targets from the issue are judged at the end (PASS/MISS with the margin).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/audit.h"
#include "bench/cluster.h"
#include "bench/http_load.h"
#include "bench/process_usage.h"
#include "bench/report.h"
#include "bench/run_summary.h"
#include "common/api_error.h"
#include "common/flags.h"
#include "common/informer.h"
#include "common/kube_client.h"
#include "common/logging.h"
#include "model/objects.h"
#include "model/suitability.h"
#include "test/support/child_process.h"
#include "test/support/free_port.h"

namespace ker::bench {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using testsupport::ChildProcess;
using testsupport::freePort;

constexpr const char* kProbeNs = "bench";
constexpr const char* kBindNs = "bench-bind";

struct Config {
  std::string adminKubeconfig;
  std::string extenderKubeconfig;
  std::string controllerKubeconfig;
  std::string extenderUser;
  std::string controllerUser;
  std::string auditLog;
  std::string schedulerBinary;
  std::string controllerBinary;
  std::string workDir;
  std::string outDir;
  std::vector<size_t> sizes;
  size_t bindStage = 1000;
  size_t bindPods = 1000;
  int repeats = 3;
  std::chrono::milliseconds duration{1500};
  int workers = 32;
  int apiserverPid = 0;  // 0: unknown, its CPU time is not reported
  int etcdPid = 0;
  bool nodeNamesMode = true;
  bool nodeListMode = true;
};

double seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

void say(const std::string& line) {
  std::cerr << "[bench] " << line << std::endl;
}

std::string fmt(double v, int digits = 2) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// The value of an unlabelled series in Prometheus text exposition; -1 when absent.
double metric(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) == 0) {
      return std::stod(line.substr(name.size() + 1));
    }
  }
  return -1;
}

bool waitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout,
             std::chrono::milliseconds interval = 50ms) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (done()) {
      return true;
    }
    std::this_thread::sleep_for(interval);
  }
  return done();
}

// An extender process serving on loopback, with its health port.
struct Extender {
  std::unique_ptr<ChildProcess> process;
  int port = 0;
  int healthPort = 0;
  double readySeconds = 0;

  std::string metrics() const { return Connection(healthPort, false).get("/metrics").body; }
};

Extender startExtender(const Config& cfg, const std::string& logName) {
  Extender ext;
  ext.port = freePort();
  ext.healthPort = freePort();
  const auto start = Clock::now();
  ext.process = std::make_unique<ChildProcess>(
      cfg.schedulerBinary,
      std::vector<std::string>{"--kubeconfig=" + cfg.extenderKubeconfig, "--bind-address=127.0.0.1",
                               "--port=" + std::to_string(ext.port),
                               "--health-port=" + std::to_string(ext.healthPort),
                               // The bench's control plane has no allocation policy.
                               "--admission-policy="},
      cfg.workDir + "/" + logName);
  ext.process->start();
  const bool ready = waitFor(
      [&] {
        if (!ext.process->running()) {
          return false;
        }
        try {
          return Connection(ext.healthPort, false).get("/readyz").status == 200;
        } catch (const std::exception&) {
          return false;
        }
      },
      300s, 20ms);
  if (!ready) {
    throw std::runtime_error("the extender never became ready:\n" + ext.process->logTail(3000));
  }
  ext.readySeconds = seconds(start);
  return ext;
}

bool exists(ApiClient& api, const Resource& res, const std::string& name) {
  try {
    api.get(res, "", name);
    return true;
  } catch (const ApiError& e) {
    if (e.isNotFound()) {
      return false;
    }
    throw;
  }
}

// The pod as kube-scheduler holds it: its informer drops metadata.managedFields.
json schedulerPod(ApiClient& api, const std::string& ns, const std::string& name) {
  json pod = api.get(resources::kPods, ns, name);
  pod["metadata"].erase("managedFields");
  pod.erase("apiVersion");
  pod.erase("kind");
  return pod;
}

// ExtenderArgs exactly as Go's json.Marshal writes them: every field, unused ones null.
std::string nodeNamesBody(const json& pod, const std::vector<std::string>& names) {
  return "{\"Pod\":" + pod.dump() + ",\"Nodes\":null,\"NodeNames\":" + json(names).dump() + "}";
}

std::string nodeListBody(const json& pod, const std::vector<std::string>& nodes) {
  std::string body = "{\"Pod\":" + pod.dump() + ",\"Nodes\":{\"metadata\":{},\"items\":[";
  for (size_t i = 0; i < nodes.size(); ++i) {
    body += (i == 0 ? "" : ",") + nodes[i];
  }
  return body + "]},\"NodeNames\":null}";
}

// The preempt verb's candidates: kube-scheduler's dry run stops at 10% of the nodes, at least
// 100 (DefaultPreemption's minCandidateNodesPercentage and minCandidateNodesAbsolute).
constexpr size_t kPreemptCandidates = 100;

// ExtenderPreemptionArgs as kube-scheduler sends them with nodeCacheCapable: the first
// candidates, each with the two victims its dry run found for the CPU (pods holding no device).
std::string preemptBody(const json& pod, const std::vector<std::string>& names) {
  json victims = json::object();
  for (size_t i = 0; i < std::min(kPreemptCandidates, names.size()); ++i) {
    victims[names[i]] = {
        {"Pods", {{{"UID", names[i] + "-victim-a"}}, {{"UID", names[i] + "-victim-b"}}}},
        {"NumPDBViolations", 0}};
  }
  return "{\"Pod\":" + pod.dump() +
         ",\"NodeNameToVictims\":null,\"NodeNameToMetaVictims\":" + victims.dump() + "}";
}

struct Probe {
  int claims;
  bool constrained;  // every claim has a constraint over its devices together
  json pod;
};

// Checks one reply the way kube-scheduler would decode it; returns the passing count.
size_t checkReply(const std::string& verb, bool nodeList, const Reply& reply,
                  const std::vector<std::string>& names, const std::vector<std::string>& nodes) {
  if (reply.status != 200) {
    throw std::runtime_error(verb + " answered " + std::to_string(reply.status) + ": " +
                             decodedBody(reply).substr(0, 300));
  }
  json out = json::parse(decodedBody(reply));
  if (verb == "preempt") {
    const std::set<std::string> input(names.begin(), names.end());
    const auto& kept = out["NodeNameToMetaVictims"];
    if (!kept.is_object()) {
      throw std::runtime_error("preempt did not answer NodeNameToMetaVictims");
    }
    for (auto it = kept.begin(); it != kept.end(); ++it) {
      if (!input.count(it.key()) || it.value().value("Pods", json::array()).empty()) {
        throw std::runtime_error("preempt returned a node it was not given, or no victims");
      }
    }
    return kept.size();
  }
  if (verb == "prioritize") {
    if (!out.is_array() || out.size() != names.size()) {
      throw std::runtime_error("prioritize did not score every node");
    }
    for (const auto& e : out) {
      if (!e["Score"].is_number_integer() || e["Score"] < 0 || e["Score"] > 10) {
        throw std::runtime_error("prioritize gave a score outside 0..10: " + e.dump());
      }
    }
    return out.size();
  }
  if (!out.value("Error", "").empty()) {
    throw std::runtime_error("filter failed: " + out["Error"].get<std::string>());
  }
  const std::set<std::string> input(names.begin(), names.end());
  for (const auto& n : out["NodeNames"]) {
    if (!input.count(n.get<std::string>())) {
      throw std::runtime_error("filter returned a node it was not given");
    }
  }
  if (nodeList) {
    // The passing Node objects must come back whole: compare them with what was sent.
    const auto& items = out["Nodes"]["items"];
    if (items.size() != out["NodeNames"].size()) {
      throw std::runtime_error("filter's Nodes.items and NodeNames disagree");
    }
    std::map<std::string, const std::string*> byName;
    for (size_t i = 0; i < names.size(); ++i) {
      byName[names[i]] = &nodes[i];
    }
    for (const auto& item : items) {
      if (item != json::parse(*byName.at(item["metadata"]["name"].get<std::string>()))) {
        throw std::runtime_error("filter changed a Node object it returned");
      }
    }
  }
  return out["NodeNames"].size();
}

// Runs the load `repeats` times and keeps each statistic's median.
ojson repeatedLoad(int port, const std::string& path, const std::string& body, LoadOptions opts,
                   int repeats) {
  std::vector<double> p50, p99, rps;
  size_t requests = 0;
  size_t errors = 0;
  for (int i = 0; i < repeats; ++i) {
    LoadResult r = runLoad(port, path, body, opts);
    p50.push_back(r.p50Ms);
    p99.push_back(r.p99Ms);
    rps.push_back(r.rps);
    requests += r.requests;
    errors += r.errors;
  }
  return {{"runs", repeats},       {"requests", requests}, {"p50_ms", median(p50)},
          {"p99_ms", median(p99)}, {"rps", median(rps)},   {"errors", errors}};
}

struct HandlerTotals {
  double seconds = 0;
  double calls = 0;
  double cpu = 0;
};

HandlerTotals handlerTotals(const Extender& ext, const std::string& verb) {
  const std::string m = ext.metrics();
  const std::string series = "extended_resource_scheduler_request_duration_seconds";
  const std::string label = "{verb=\"" + verb + "\"}";
  return {std::max(metric(m, series + "_sum" + label), 0.0),
          std::max(metric(m, series + "_count" + label), 0.0), cpuSeconds(ext.process->pid())};
}

ojson benchVerbs(const Config& cfg, const Extender& ext, const FloorServer& floor,
                 const FloorServer& stackFloor, const std::vector<Probe>& probes,
                 const std::vector<std::string>& names, const std::vector<std::string>& nodes,
                 bool nodeList, bool preempt = false) {
  ojson rows = ojson::array();
  for (const auto& probe : probes) {
    if (probe.constrained && (nodeList || preempt)) {
      continue;  // constraints cost the matching, which is the same in every mode
    }
    const std::string body = preempt    ? preemptBody(probe.pod, names)
                             : nodeList ? nodeListBody(probe.pod, nodes)
                                        : nodeNamesBody(probe.pod, names);
    const std::vector<std::string> verbs = preempt
                                               ? std::vector<std::string>{"preempt"}
                                               : std::vector<std::string>{"filter", "prioritize"};
    const bool big = body.size() > (4u << 20);
    const double dom = domParseMs(body, big ? 3 : 15);
    for (const std::string& verb : verbs) {
      const std::string path = "/" + verb;
      Reply sample = Connection(ext.port).post(path, body);
      const size_t passing = checkReply(verb, nodeList, sample, names, nodes);
      const std::string decoded = decodedBody(sample);
      const std::string mode =
          preempt ? "MetaVictims, " + std::to_string(std::min(kPreemptCandidates, names.size())) +
                        " candidates"
          : nodeList ? "NodeList"
                     : "NodeNames";
      ojson row = {{"mode", mode},
                   {"verb", verb},
                   {"claims_per_pod", probe.claims},
                   {"constrained", probe.constrained},
                   {"nodes", names.size()},
                   {"passing", passing},
                   {"request_bytes", body.size()},
                   {"reply_bytes", decoded.size()},
                   {"reply_wire_bytes", sample.body.size()},
                   {"reply_gzip", sample.gzipped},
                   {"dom_parse_ms", dom}};
      for (int conc : {1, 8}) {
        LoadOptions opts;
        opts.concurrency = conc;
        opts.duration = cfg.duration;
        opts.warmupPerConnection = big ? 1 : 3;
        // A p99 needs samples: at a few requests a second, a run of the usual length would
        // give a NodeList row's p99 as the largest of five or so.
        opts.minRequests = big && conc > 1 ? static_cast<size_t>(conc) : 20;
        const std::string c = conc == 1 ? "c1" : "c8";
        const auto before = handlerTotals(ext, verb);
        row[c] = repeatedLoad(ext.port, path, body, opts, cfg.repeats);
        const auto after = handlerTotals(ext, verb);
        const double calls = std::max(after.calls - before.calls, 1.0);
        // Server-side cost per call, warm-ups included: the handler's own time from the
        // extender's histogram, and the process's CPU time, which other load on the machine
        // disturbs far less than wall-clock latency.
        row[c]["handler_ms_mean"] = (after.seconds - before.seconds) * 1000 / calls;
        row[c]["extender_cpu_ms_per_call"] = (after.cpu - before.cpu) * 1000 / calls;
        row["floor_" + c] = repeatedLoad(floor.port(), path, body, opts, cfg.repeats);
        row["stack_floor_" + c] = repeatedLoad(stackFloor.port(), path, body, opts, cfg.repeats);
      }
      row["ratio_p99_to_floor"] = row["c1"]["p99_ms"].get<double>() /
                                  std::max(row["floor_c1"]["p99_ms"].get<double>(), 1e-6);
      row["ratio_p50_to_dom_parse"] = row["c1"]["p50_ms"].get<double>() / std::max(dom, 1e-6);
      say(mode + " " + verb + " " + std::to_string(names.size()) + " nodes, " +
          probeLabel(probe.claims, probe.constrained) + " claim(s): p50 " +
          fmt(row["c1"]["p50_ms"].get<double>(), 3) + " ms, p99 " +
          fmt(row["c1"]["p99_ms"].get<double>(), 3) + " ms, handler " +
          fmt(row["c1"]["handler_ms_mean"].get<double>(), 3) + " ms, CPU " +
          fmt(row["c1"]["extender_cpu_ms_per_call"].get<double>(), 3) + " ms/call, " +
          fmt(row["c8"]["rps"].get<double>(), 0) + " req/s at c=8; floor p99 " +
          fmt(row["floor_c1"]["p99_ms"].get<double>(), 3) +
          " ms (extender's stack: " + fmt(row["stack_floor_c1"]["p99_ms"].get<double>(), 3) +
          " ms); DOM parse " + fmt(dom, 3) + " ms");
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

ojson memoryJson(const Memory& m) {
  return {{"rss_mb", m.rss / 1048576.0}, {"peak_mb", m.peak / 1048576.0}};
}

std::string bindBody(const std::string& pod, const std::string& uid, const std::string& node) {
  return json{{"PodName", pod}, {"PodNamespace", kBindNs}, {"PodUID", uid}, {"Node", node}}.dump();
}

struct BindPod {
  std::string name;
  std::string uid;
  std::string node;
  bool twoClaims;
  std::vector<std::string> claims;
  json object;  // as created: the filter that precedes its bind sends it
};

// Creates the bind stage's claims and pods; pod i goes to a node that holds k80s, at most two
// pods per node, so every bind can succeed.
std::vector<BindPod> makeBindPods(const Config& cfg, KubeClient& api, ojson& out) {
  std::vector<BindPod> pods(cfg.bindPods);
  std::vector<size_t> k80Nodes;
  for (size_t i = 0; i < cfg.bindStage; ++i) {
    if (i % 10 != 9) {
      k80Nodes.push_back(i);
    }
  }
  for (size_t i = 0; i < pods.size(); ++i) {
    auto& p = pods[i];
    char buf[32];
    std::snprintf(buf, sizeof buf, "bind-%04zu", i);
    p.name = buf;
    p.node = nodeName(k80Nodes[i % k80Nodes.size()]);
    p.twoClaims = i % 2 == 1;
    p.claims = {p.name + "-a"};
    if (p.twoClaims) {
      p.claims.push_back(p.name + "-b");
    }
  }
  std::vector<std::pair<std::string, json>> claims;
  for (const auto& p : pods) {
    claims.emplace_back(p.claims[0], claim(kBindNs, p.claims[0], 1, "k80"));
    if (p.twoClaims) {
      claims.emplace_back(p.claims[1], claim(kBindNs, p.claims[1], 2, ""));
    }
  }
  auto claimStats = createAll(
      api, resources::kExtendedResourceClaims, kBindNs, 0, claims.size(),
      [&](size_t i) { return claims[i].second; }, cfg.workers);
  std::mutex mu;
  const auto start = Clock::now();
  parallelFor(pods.size(), cfg.workers, [&](size_t i) {
    json created;
    try {
      created = api.create(resources::kPods, kBindNs, pod(kBindNs, pods[i].name, pods[i].claims));
    } catch (const ApiError& e) {
      if (e.httpStatus() != 409) {
        throw;
      }
      created = api.get(resources::kPods, kBindNs, pods[i].name);
    }
    std::lock_guard lock(mu);
    pods[i].uid = created["metadata"]["uid"];
    pods[i].object = std::move(created);
  });
  out["claims_created"] = claims.size();
  out["claims_create_seconds"] = claimStats.seconds;
  out["pods_created"] = pods.size();
  out["pods_create_seconds"] = seconds(start);
  return pods;
}

// CPU seconds each process (those with a pid above 0) has used since the meter was made.
class CpuMeter {
 public:
  explicit CpuMeter(std::vector<std::pair<std::string, int>> processes)
      : processes_(std::move(processes)) {
    for (const auto& [name, pid] : processes_) {
      before_.push_back(pid > 0 ? cpuSeconds(pid) : 0);
    }
  }
  std::vector<std::pair<std::string, double>> used() const {
    std::vector<std::pair<std::string, double>> out;
    for (size_t i = 0; i < processes_.size(); ++i) {
      if (processes_[i].second > 0) {
        out.emplace_back(processes_[i].first, cpuSeconds(processes_[i].second) - before_[i]);
      }
    }
    return out;
  }

 private:
  std::vector<std::pair<std::string, int>> processes_;
  std::vector<double> before_;
};

// ", CPU ms per bind: extender 1.20, kube-apiserver 3.40, ..." for the processes measured.
std::string cpuText(const ojson& cpuPerBind) {
  std::string out;
  for (const auto& [name, ms] : cpuPerBind.items()) {
    out += (out.empty() ? ", CPU ms per bind: " : ", ") + name + " " + fmt(ms.get<double>());
  }
  return out;
}

ojson benchBind(const Config& cfg, std::vector<BindPod>& pods) {
  ojson out = ojson::object();
  out["nodes"] = cfg.bindStage;
  Extender ext = startExtender(cfg, "extender-bind.log");
  out["extender_ready_seconds"] = ext.readySeconds;
  struct Batch {
    bool twoClaims;
    int concurrency;
    size_t count;
  };
  const size_t serial = pods.size() * 15 / 100 / 2;
  const size_t parallel = pods.size() / 2 - serial;
  const Batch batches[] = {
      {false, 1, serial}, {true, 1, serial}, {false, 8, parallel}, {true, 8, parallel}};
  std::vector<const BindPod*> one, two;
  for (const auto& p : pods) {
    (p.twoClaims ? two : one).push_back(&p);
  }
  size_t usedOne = 0;
  size_t usedTwo = 0;
  out["batches"] = ojson::array();
  for (const auto& b : batches) {
    auto& source = b.twoClaims ? two : one;
    auto& used = b.twoClaims ? usedTwo : usedOne;
    std::vector<const BindPod*> batch(source.begin() + static_cast<long>(used),
                                      source.begin() + static_cast<long>(used + b.count));
    used += b.count;
    const double writesBefore =
        metric(ext.metrics(), "extended_resource_scheduler_api_writes_total");
    std::vector<std::vector<double>> latencies(static_cast<size_t>(b.concurrency));
    std::atomic<size_t> next{0};
    std::atomic<size_t> failed{0};
    std::string firstError;
    std::mutex mu;
    // CPU time per bind of the extender and of what takes its writes, to tell the extender's
    // own cost from the API server's and etcd's when a batch is slower.
    const CpuMeter cpu({{"extender", ext.process->pid()},
                        {"kube-apiserver", cfg.apiserverPid},
                        {"etcd", cfg.etcdPid}});
    const auto wallFrom = std::chrono::system_clock::now();
    const auto start = Clock::now();
    std::vector<std::thread> threads;
    for (int t = 0; t < b.concurrency; ++t) {
      threads.emplace_back([&, t] {
        Connection conn(ext.port);
        for (size_t i = next++; i < batch.size(); i = next++) {
          const auto* p = batch[i];
          try {
            // As kube-scheduler does, untimed: the extender binds only where its filter chose.
            conn.post("/filter", nodeNamesBody(p->object, {p->node}));
          } catch (const std::exception&) {
            // the bind's reply says what went wrong
          }
          const auto t0 = Clock::now();
          try {
            Reply r = conn.post("/bind", bindBody(p->name, p->uid, p->node));
            latencies[static_cast<size_t>(t)].push_back(seconds(t0) * 1000);
            std::string error =
                r.status == 200 ? json::parse(decodedBody(r)).value("Error", "") : "HTTP error";
            if (!error.empty()) {
              failed++;
              std::lock_guard lock(mu);
              firstError = firstError.empty() ? error : firstError;
            }
          } catch (const std::exception& e) {
            failed++;
            std::lock_guard lock(mu);
            firstError = firstError.empty() ? e.what() : firstError;
          }
        }
      });
    }
    for (auto& t : threads) {
      t.join();
    }
    const double elapsed = seconds(start);
    const auto wallTo = std::chrono::system_clock::now();
    ojson cpuPerBind = ojson::object();
    for (const auto& [name, used] : cpu.used()) {
      cpuPerBind[name] = used * 1000 / static_cast<double>(std::max<size_t>(batch.size(), 1));
    }
    const double writes =
        metric(ext.metrics(), "extended_resource_scheduler_api_writes_total") - writesBefore;
    std::this_thread::sleep_for(1s);  // the audit backend writes an event after the reply
    const RequestCount audit = countRequests(cfg.auditLog, cfg.extenderUser, wallFrom, wallTo);
    std::vector<double> all;
    for (auto& l : latencies) {
      all.insert(all.end(), l.begin(), l.end());
    }
    const double n = static_cast<double>(batch.size());
    const int devices = b.twoClaims ? 3 : 1;
    ojson kinds = ojson::object();
    for (const auto& [k, v] : audit.byKind) {
      kinds[k] = static_cast<double>(v) / n;
    }
    ojson row = {{"claims_per_pod", b.twoClaims ? 2 : 1},
                 {"devices_per_pod", devices},
                 {"concurrency", b.concurrency},
                 {"binds", batch.size()},
                 {"failed", failed.load()},
                 {"p50_ms", percentile(all, 50)},
                 {"p99_ms", percentile(all, 99)},
                 {"rps", n / elapsed},
                 {"api_writes_per_bind_metric", writes / n},
                 {"api_reads_per_bind_audit", static_cast<double>(audit.reads) / n},
                 {"api_writes_per_bind_audit", static_cast<double>(audit.writes) / n},
                 {"api_requests_per_bind_by_kind", kinds},
                 {"cpu_ms_per_bind", cpuPerBind},
                 {"write_budget_per_bind", devices + 2}};
    if (!firstError.empty()) {
      row["first_error"] = firstError;
    }
    say("bind " + std::to_string(row["claims_per_pod"].get<int>()) + " claim(s), c=" +
        std::to_string(b.concurrency) + ": p50 " + fmt(row["p50_ms"].get<double>()) + " ms, p99 " +
        fmt(row["p99_ms"].get<double>()) + " ms, " + fmt(row["rps"].get<double>(), 1) +
        " binds/s, " + fmt(writes / n) + " writes + " + fmt(audit.reads / n) + " reads per bind, " +
        std::to_string(failed.load()) + " failed" + cpuText(cpuPerBind));
    out["batches"].push_back(std::move(row));
  }
  out["extender_memory"] = memoryJson(memoryOf(ext.process->pid()));
  ext.process->stop();
  return out;
}

ojson benchController(const Config& cfg, KubeClient& api, const std::vector<BindPod>& pods) {
  ojson out = {{"done", false}, {"pods", pods.size()}};
  if (cfg.controllerBinary.empty() || access(cfg.controllerBinary.c_str(), X_OK) != 0) {
    out["not_done"] = "controller binary " + cfg.controllerBinary + " is not built";
    return out;
  }
  Informer<ExtendedResourceClaim> claims(api, resources::kExtendedResourceClaims, {.ns = kBindNs});
  Informer<ExtendedResource> devices(api, resources::kExtendedResources);
  claims.start();
  devices.start();
  if (!claims.waitForSync(120s) || !devices.waitForSync(120s)) {
    out["not_done"] = "the bench's own informers did not sync";
    return out;
  }
  std::set<std::string> held;  // devices allocated to the bind pods' claims
  size_t bound = 0;
  for (const auto& c : claims.list()) {
    if (c->phase == ClaimPhase::kBound) {
      bound++;
      held.insert(c->allocated.begin(), c->allocated.end());
    }
  }
  out["claims_bound"] = bound;
  out["devices_bound"] = held.size();
  // Free to binds (the model's rule), and whether its own status says so yet.
  auto offered = [&](const ExtendedResource& d) {
    return offerable(d,
                     namedAllocation(d, [&](const std::string& key) { return claims.get(key); }));
  };
  auto freedNotWritten = [&] {
    for (const auto& d : devices.list()) {
      if (d->phase == DevicePhase::kBound && offered(*d)) {
        return true;
      }
    }
    return false;
  };
  const int port = freePort();
  ChildProcess controller(
      cfg.controllerBinary,
      {"--kubeconfig=" + cfg.controllerKubeconfig, "--leader-elect=false",
       "--metrics-bind-address=127.0.0.1:" + std::to_string(port), "--admission-policy="},
      cfg.workDir + "/controller.log");
  controller.start();
  const bool ready = waitFor(
      [&] {
        try {
          return controller.running() && Connection(port, false).get("/readyz").status == 200;
        } catch (const std::exception&) {
          return false;
        }
      },
      120s, 50ms);
  if (!ready) {
    out["not_done"] = "the controller did not become ready: " + controller.logTail(600);
    return out;
  }
  // A steady state first: the controller's initial pass (a status for every device created
  // without one: thousands here) must not be counted with the releases, nor slow them.
  int idlePolls = 0;
  const bool settled = waitFor(
      [&] {
        try {
          const double depth = metric(Connection(port, false).get("/metrics").body,
                                      "extended_resource_controller_queue_depth");
          // An earlier run's devices, freed by their claims, are written Available after a
          // delay: those writes belong to no release measured here.
          idlePolls = depth == 0 && !freedNotWritten() ? idlePolls + 1 : 0;
        } catch (const std::exception&) {
          idlePolls = 0;
        }
        return idlePolls >= 5;
      },
      300s, 200ms);
  if (!settled) {
    out["not_done"] = "the controller's work queue never emptied before the deletes";
    return out;
  }
  std::this_thread::sleep_for(1s);
  // CPU time of everything that works on the releases, to tell whether the two cores were
  // the limit: the API server and etcd take every write, the bench deletes and watches.
  const CpuMeter meter({{"kube-apiserver", cfg.apiserverPid},
                        {"etcd", cfg.etcdPid},
                        {"controller", controller.pid()},
                        {"bench", static_cast<int>(getpid())}});
  const auto wallFrom = std::chrono::system_clock::now();
  const auto start = Clock::now();
  parallelFor(pods.size(), cfg.workers, [&](size_t i) {
    try {
      api.remove(resources::kPods, kBindNs, pods[i].name, DeleteOptions{.gracePeriodSeconds = 0});
    } catch (const ApiError& e) {
      if (!e.isNotFound()) {
        throw;
      }
    }
  });
  out["delete_seconds"] = seconds(start);
  auto released = [&] {
    for (const auto& c : claims.list()) {
      if (c->phase == ClaimPhase::kBound) {
        return false;
      }
    }
    for (const auto& name : held) {
      auto d = devices.get(name);
      if (d && !offered(*d)) {
        return false;
      }
    }
    return true;
  };
  const bool done = waitFor(released, 180s, 10ms);
  const double elapsed = seconds(start);
  ojson cpu = ojson::object();
  double cpuTotal = 0;
  for (const auto& [name, used] : meter.used()) {
    cpu[name] = used;
    cpuTotal += used;
  }
  out["cpu_seconds"] = cpu;
  out["cores_busy"] = cpuTotal / std::max(elapsed, 1e-9);
  const auto wallTo = std::chrono::system_clock::now();
  std::this_thread::sleep_for(1s);
  const RequestCount audit = countRequests(cfg.auditLog, cfg.controllerUser, wallFrom, wallTo);
  out["done"] = done;
  out["release_seconds"] = elapsed;
  if (!done) {
    size_t still = 0;
    for (const auto& c : claims.list()) {
      still += c->phase == ClaimPhase::kBound ? 1 : 0;
    }
    out["not_done"] = std::to_string(still) + " claims still Bound after " + fmt(elapsed, 0) + " s";
  }
  const double n = static_cast<double>(pods.size());
  out["api_reads_per_pod"] = static_cast<double>(audit.reads) / n;
  out["api_writes_per_pod"] = static_cast<double>(audit.writes) / n;
  out["api_requests_per_claim"] =
      static_cast<double>(audit.reads + audit.writes) / std::max<double>(bound, 1);
  ojson kinds = ojson::object();
  for (const auto& [k, v] : audit.byKind) {
    kinds[k] = v;
  }
  out["api_requests_by_kind"] = kinds;
  out["controller_memory"] = memoryJson(memoryOf(controller.pid()));
  say("controller: " + std::to_string(pods.size()) + " pods deleted, claims released after " +
      fmt(elapsed) + " s; " + fmt(audit.reads / n) + " reads + " + fmt(audit.writes / n) +
      " writes per pod");
  controller.stop();
  claims.stop();
  devices.stop();
  return out;
}

// The 1-minute load average: how busy the shared machine was besides this run.
double loadAverage() {
  std::ifstream in("/proc/loadavg");
  double load = 0;
  in >> load;
  return load;
}

ojson machine() {
  ojson m = {{"cores", std::thread::hardware_concurrency()}};
  std::ifstream cpu("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpu, line)) {
    if (line.rfind("model name", 0) == 0) {
      m["cpu"] = line.substr(line.find(':') + 2);
      break;
    }
  }
  m["note"] = "etcd, kube-apiserver, the extender and the load generator share these cores";
  m["load_average_at_start"] = loadAverage();
  return m;
}

int run(const Config& cfg) {
  KubeClientOptions clientOpts;
  clientOpts.userAgent = "ker-bench";
  KubeClient api(KubeConfig::fromKubeconfigFile(cfg.adminKubeconfig), clientOpts);
  char now[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  ojson results = {{"generated_at", now},
                   {"machine", machine()},
                   {"devices_per_node", kDevicesPerNode},
                   {"clusters", ojson::array()}};
  for (const std::string ns : {kProbeNs, kBindNs}) {
    createAll(
        api, resources::kNamespaces, "", 0, 1, [&](size_t) { return namespaceObject(ns); }, 1);
  }
  // Probe pods for filter and prioritize: one claim (a k80), and two claims whose selectors
  // overlap (a k80, and two of k80-or-p100), which needs a real matching. Then the same with a
  // constraint on every claim: two k80s on one NUMA node, and that beside two of k80-or-p100
  // on different NUMA nodes.
  auto constrained = [](json c, const char* field) {
    c["spec"]["constraints"] = {{{field, "numaNode"}}};
    return c;
  };
  const std::vector<json> probeClaims = {
      claim(kProbeNs, "probe1-a", 1, "k80"),
      claim(kProbeNs, "probe2-a", 1, "k80"),
      claim(kProbeNs, "probe2-b", 2, ""),
      constrained(claim(kProbeNs, "probe1c-a", 2, "k80"), "matchProperty"),
      constrained(claim(kProbeNs, "probe2c-a", 2, "k80"), "matchProperty"),
      constrained(claim(kProbeNs, "probe2c-b", 2, ""), "distinctProperty")};
  createAll(
      api, resources::kExtendedResourceClaims, kProbeNs, 0, probeClaims.size(),
      [&](size_t i) { return probeClaims[i]; }, 1);
  const std::vector<json> probePods = {pod(kProbeNs, "probe-1", {"probe1-a"}),
                                       pod(kProbeNs, "probe-2", {"probe2-a", "probe2-b"}),
                                       pod(kProbeNs, "probe-1c", {"probe1c-a"}),
                                       pod(kProbeNs, "probe-2c", {"probe2c-a", "probe2c-b"})};
  createAll(
      api, resources::kPods, kProbeNs, 0, probePods.size(), [&](size_t i) { return probePods[i]; },
      1);
  const std::vector<Probe> probes = {{1, false, schedulerPod(api, kProbeNs, "probe-1")},
                                     {2, false, schedulerPod(api, kProbeNs, "probe-2")},
                                     {1, true, schedulerPod(api, kProbeNs, "probe-1c")},
                                     {2, true, schedulerPod(api, kProbeNs, "probe-2c")}};
  FloorServer floor(FloorServer::Stack::kTransport);
  FloorServer stackFloor(FloorServer::Stack::kExtenderStack);
  size_t populated = 0;
  for (size_t size : cfg.sizes) {
    ojson cluster = {{"nodes", size}, {"devices", size * kDevicesPerNode}};
    say("populating " + std::to_string(size) + " nodes, " + std::to_string(size * kDevicesPerNode) +
        " devices");
    // A cluster left by an earlier run against the same control plane is reused as it is.
    if (exists(api, resources::kNodes, nodeName(size - 1)) &&
        exists(api, resources::kExtendedResources, deviceName(size - 1, kDevicesPerNode - 1))) {
      say("reusing the " + std::to_string(size) + " nodes already there");
      populated = size;
      cluster["reused_earlier_population"] = true;
    }
    auto nodeStats =
        createAll(api, resources::kNodes, "", populated, size, kubeletNode, cfg.workers);
    auto deviceStats = createAll(
        api, resources::kExtendedResources, "", populated * kDevicesPerNode, size * kDevicesPerNode,
        [](size_t i) { return device(i / kDevicesPerNode, static_cast<int>(i % kDevicesPerNode)); },
        cfg.workers);
    cluster["population"] = {{"workers", cfg.workers},
                             {"nodes_created", nodeStats.created + nodeStats.existed},
                             {"nodes_seconds", nodeStats.seconds},
                             {"nodes_per_second", nodeStats.perSecond()},
                             {"devices_created", deviceStats.created + deviceStats.existed},
                             {"devices_seconds", deviceStats.seconds},
                             {"devices_per_second", deviceStats.perSecond()}};
    say("created " + std::to_string(size - populated) + " nodes in " + fmt(nodeStats.seconds) +
        " s (" + fmt(nodeStats.perSecond(), 0) + "/s) and " +
        std::to_string((size - populated) * kDevicesPerNode) + " devices in " +
        fmt(deviceStats.seconds) + " s (" + fmt(deviceStats.perSecond(), 0) + "/s)");
    populated = size;

    std::vector<std::string> names;
    std::vector<std::string> nodes;
    double nodeBytes = 0;
    for (auto& item : api.listAll(resources::kNodes, "", {}).items) {
      const std::string name = item["metadata"]["name"];
      if (name.rfind("node-", 0) != 0 || names.size() == size) {
        continue;
      }
      names.push_back(name);
      nodes.push_back(item.dump());
      nodeBytes += static_cast<double>(nodes.back().size());
    }
    cluster["node_object_bytes_avg"] = nodeBytes / static_cast<double>(nodes.size());

    Extender ext = startExtender(cfg, "extender-" + std::to_string(size) + ".log");
    cluster["extender_ready_seconds"] = ext.readySeconds;
    const std::string m = ext.metrics();
    cluster["extender_cached"] = {
        {"devices", metric(m, "extended_resource_scheduler_cached_devices")},
        {"nodes", metric(m, "extended_resource_scheduler_cached_nodes")},
        {"claims", metric(m, "extended_resource_scheduler_cached_claims")}};
    cluster["memory_after_sync"] = memoryJson(memoryOf(ext.process->pid()));
    say("extender ready after " + fmt(ext.readySeconds) + " s, RSS " +
        fmt(memoryOf(ext.process->pid()).rss / 1048576.0, 1) + " MB");
    ojson rows = ojson::array();
    if (cfg.nodeNamesMode) {
      rows = benchVerbs(cfg, ext, floor, stackFloor, probes, names, nodes, false);
      cluster["memory_after_nodenames"] = memoryJson(memoryOf(ext.process->pid()));
    }
    if (cfg.nodeListMode) {
      for (auto& r : benchVerbs(cfg, ext, floor, stackFloor, probes, names, nodes, true)) {
        rows.push_back(std::move(r));
      }
      cluster["memory_after_nodelist"] = memoryJson(memoryOf(ext.process->pid()));
    }
    if (cfg.nodeNamesMode) {
      // Last: the devices each call nominates for the probe pod would put the other verbs'
      // nodes on the filter's slower path for reserved devices.
      for (auto& r : benchVerbs(cfg, ext, floor, stackFloor, probes, names, nodes, false, true)) {
        rows.push_back(std::move(r));
      }
    }
    cluster["verbs"] = std::move(rows);
    ext.process->stop();

    if (size == cfg.bindStage) {
      say("bind stage on " + std::to_string(size) + " nodes: " + std::to_string(cfg.bindPods) +
          " pods");
      // Each run binds the pods anew (the previous run's deletes released their claims) and
      // deletes them again.
      std::vector<ojson> bindRuns;
      std::vector<ojson> controllerRuns;
      for (int run = 1; run <= cfg.repeats; ++run) {
        say("bind and release, run " + std::to_string(run) + " of " + std::to_string(cfg.repeats));
        ojson bind = ojson::object();
        auto pods = makeBindPods(cfg, api, bind);
        ojson b = benchBind(cfg, pods);
        for (auto& [k, v] : b.items()) {
          bind[k] = v;
        }
        bindRuns.push_back(std::move(bind));
        controllerRuns.push_back(benchController(cfg, api, pods));
        if (!controllerRuns.back()["done"].get<bool>()) {
          break;  // its pods may still hold claims, which the next run's binds need
        }
      }
      results["bind"] = medianBind(bindRuns);
      results["controller"] = medianController(controllerRuns);
    }
    results["clusters"].push_back(std::move(cluster));
    writeResults(results, cfg.outDir);  // partial results survive a later failure
  }
  results["machine"]["load_average_at_end"] = loadAverage();
  const std::string md = writeResults(results, cfg.outDir);
  std::cout << md << std::flush;
  return 0;
}

}  // namespace
}  // namespace ker::bench

int main(int argc, char** argv) {
  ker::FlagSet flags("extender_bench",
                     "Benchmarks the extender and the controller against a running control "
                     "plane; bench/run.sh sets every flag.");
  auto* admin = flags.addString("kubeconfig", "", "admin kubeconfig (populates the cluster)");
  auto* extKube = flags.addString("extender-kubeconfig", "", "kubeconfig the extender runs with");
  auto* ctlKube =
      flags.addString("controller-kubeconfig", "", "kubeconfig the controller runs with");
  auto* extUser = flags.addString("extender-user", "", "the extender's user in the audit log");
  auto* ctlUser = flags.addString("controller-user", "", "the controller's user in the audit log");
  auto* audit = flags.addString("audit-log", "", "kube-apiserver audit log");
  auto* scheduler = flags.addString("scheduler-binary", "", "extended-resource-scheduler");
  auto* controller = flags.addString("controller-binary", "", "extended-resource-controller");
  auto* work = flags.addString("work-dir", "/tmp", "folder for the processes' logs");
  auto* out = flags.addString("out-dir", "bench/results", "where latest.json and latest.md go");
  auto* sizes = flags.addString("sizes", "100,1000,5000", "cluster sizes in nodes, ascending");
  auto* bindStage = flags.addInt(
      "bind-stage", 1000,
      "cluster size (one of --sizes) at which binds and releases are measured; 0: none");
  auto* bindPods = flags.addInt("bind-pods", 1000, "pods bound, then deleted for the controller");
  auto* repeats = flags.addInt("repeats", 3, "runs per measurement (medians reported)");
  auto* duration = flags.addDuration("duration", std::chrono::milliseconds(1500),
                                     "length of one measurement run");
  auto* workers = flags.addInt("workers", 32, "concurrent API clients while populating");
  auto* modes = flags.addString("modes", "NodeNames,NodeList", "request modes to measure");
  auto* apiserverPid = flags.addInt(
      "apiserver-pid", 0, "kube-apiserver's pid, for its CPU time during binds and releases");
  auto* etcdPid =
      flags.addInt("etcd-pid", 0, "etcd's pid, for its CPU time during binds and releases");
  if (auto r = flags.parse(argc, argv); r.status != ker::FlagParseResult::kOk) {
    r.print();
    return r.exitCode();
  }
  ker::log::init(ker::log::Format::kText, 0);
  ker::testsupport::stopChildrenOnSignal();
  ker::bench::Config cfg{.adminKubeconfig = *admin,
                         .extenderKubeconfig = *extKube,
                         .controllerKubeconfig = *ctlKube,
                         .extenderUser = *extUser,
                         .controllerUser = *ctlUser,
                         .auditLog = *audit,
                         .schedulerBinary = *scheduler,
                         .controllerBinary = *controller,
                         .workDir = *work,
                         .outDir = *out,
                         .bindStage = static_cast<size_t>(*bindStage),
                         .bindPods = static_cast<size_t>(*bindPods),
                         .repeats = static_cast<int>(*repeats),
                         .duration = *duration,
                         .workers = static_cast<int>(*workers),
                         .apiserverPid = static_cast<int>(*apiserverPid),
                         .etcdPid = static_cast<int>(*etcdPid),
                         .nodeNamesMode = modes->find("NodeNames") != std::string::npos,
                         .nodeListMode = modes->find("NodeList") != std::string::npos};
  std::stringstream list(*sizes);
  std::string item;
  while (std::getline(list, item, ',')) {
    const bool digits = !item.empty() && item.size() <= 6 &&
                        item.find_first_not_of("0123456789") == std::string::npos;
    const size_t n = digits ? std::stoul(item) : 0;
    if (n == 0 || (!cfg.sizes.empty() && n <= cfg.sizes.back())) {
      std::fprintf(stderr, "--sizes: %s is not a number of nodes above the one before it\n",
                   item.c_str());
      return 2;
    }
    cfg.sizes.push_back(n);
  }
  if (cfg.adminKubeconfig.empty() || cfg.schedulerBinary.empty() || cfg.sizes.empty()) {
    std::fprintf(stderr, "--kubeconfig, --scheduler-binary and --sizes are required\n");
    return 2;
  }
  if (*bindStage != 0 &&
      std::find(cfg.sizes.begin(), cfg.sizes.end(), cfg.bindStage) == cfg.sizes.end()) {
    std::fprintf(stderr, "--bind-stage %lld is neither 0 nor one of --sizes\n",
                 static_cast<long long>(*bindStage));
    return 2;
  }
  // Checked before the casts above could wrap them. Each bind batch needs a pod, and at most
  // two pods go to each node that holds k80s (nine in ten).
  const int64_t maxPods = (*bindStage - *bindStage / 10) * 2;
  if (*repeats < 1 || *repeats > 100 || *workers < 1 || *workers > 1024) {
    std::fprintf(stderr, "--repeats must be 1 to 100 and --workers 1 to 1024\n");
    return 2;
  }
  if (*bindStage != 0 && (*bindPods < 14 || *bindPods > maxPods)) {
    std::fprintf(stderr, "--bind-pods must be 14 to %lld for --bind-stage %lld\n",
                 static_cast<long long>(maxPods), static_cast<long long>(*bindStage));
    return 2;
  }
  try {
    return ker::bench::run(cfg);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[bench] failed: %s\n", e.what());
    return 1;
  }
}

// pipeline_bench: the whole scheduling pipeline on a real control plane, pod creation to
// PodScheduled, for this project's scheduler profile, Kubernetes DRA, pods without device
// requests, pods of a ReplicaSet whose claims are made from a template, and pods asking for
// devices in their resources (this project's ExtendedResourceClass, DRA's DeviceClass mapping).
// bench/pipeline.sh starts the processes and calls the four modes of this program:
//   --mode setup   creates the nodes, their devices (ExtendedResources and ResourceSlices),
//                  the DeviceClasses and the ExtendedResourceClass, growing the cluster in place
//   --mode run     one variant once: claims (or a template), then pods (or a ReplicaSet) timed
//                  until every one is scheduled, metrics and CPU before and after, then cleans
//                  up; writes one JSON file
//   --mode write-cost  kube-apiserver's and etcd's CPU per status write of a device, a claim
//                  and a pod, objects of its own written in turn; run while neither the
//                  extender nor the controller is up; writes one JSON file
//   --mode report  medians over the runs' files, the targets, pipeline-latest.{json,md}
// See bench/README.md.
//
// What a run measures:
// `pipeline_bench --mode setup` creates the nodes (kubelet-shaped Node objects, Ready, 110 pods,
// see bench/extender_bench.cpp, step 2), 8 ExtendedResources and one ResourceSlice per node, the
// DeviceClasses and the class, growing the cluster in place; the ExtendedResources carry the
// protection finalizer, as the node agent creates its devices. `--mode run` then, for one variant:
// waits until every device is `Available` and carries the controller's protection finalizer and no
// claim of either kind is left (earlier runs released; a grown cluster's new devices protected);
// creates P claims, waits until the controller has protected each (that write belongs to making the
// claim, which no variant times; `--protection=false` skips both waits for a controller run without
// protection) and then
// `--settle` (2 s) so every informer has them; snapshots metrics and CPU; watches the namespace's
// pods and creates the P pods from `--workers` clients (default 16; pipeline.sh's
// `--creating-clients`); stops when every pod has a node (the Binding writes `spec.nodeName` and
// `PodScheduled=True` together) or after `--timeout`; snapshots again; deletes pods (grace 0),
// claims and the namespace and waits for them to go (the DRA claims' delete-protection finalizer is
// lifted by the bench: kube-controller-manager's resourceclaim controller does it too, but at its
// client's default 20 QPS that takes minutes at 5,000 claims). Reported per run and as medians over
// `--repeats` runs:
//
//   - pods/s: pods scheduled / (last pod seen scheduled − first create sent).
//   - p50 / p99 ms: per pod, create request sent → pod seen with a node (bench clock).
//   - failed binds / pod:
//     `extended_resource_scheduler_decisions_total{verb="bind",result="failed"}` growth (extender);
//     for the others kube-scheduler's `scheduler_schedule_attempts_total{result="error"}` (a failed
//     default bind is an error attempt). Scheduler errors / pod are reported for all.
//   - pods ever unschedulable: pods the watch saw with `PodScheduled=False`, reason
//     `Unschedulable` (tried and parked; `SchedulingGated` does not count).
//   - API requests / pod: growth of kube-apiserver's `apiserver_request_total`, all clients,
//     less the bench's own P pod creations and non-resource requests (the metric scrapes); the run
//     file breaks it down by verb, resource and subresource.
//   - CPU ms / pod: CPU time (`/proc/PID/stat`) of kube-apiserver, etcd, kube-controller-
//     manager, both kube-schedulers, the extender, the controller and the bench during the timed
//     window.
//
// The `templates` variant creates the template instead of P claims, and one ReplicaSet of P
// replicas instead of P pods; the clock starts as the ReplicaSet is created. Its pods have
// generated names, so a pod's creation is the moment the bench's watch first sees it (the API
// server's `creationTimestamp` has a resolution of a second). It reports besides, in a table of its
// own (with the same figures for `classes`, whose clock is the pods' creation as usual):
//
//   - claims generated/s: pods whose record of their generated claim
//     (`extendedresource.io/generated-claims`) the watch has seen / (last such record seen −
//     ReplicaSet created).
//   - pod seen → claim recorded p50 / p99 ms: per pod, until the controller has made its claim
//     and recorded it.
//   - pod seen → PodScheduled p50 / p99 ms: the p50 / p99 of the main table, for these pods.
//
// The ReplicaSet controller creates the pods at kube-controller-manager's client rate (its default
// 20 QPS, burst 30, as `launch.sh` starts it), so pods/s and claims generated/s are bounded by that
// rate, as they would be in a cluster with those defaults; the per-pod latencies are not. API
// requests / pod include kube-controller-manager's pod creations.
//
// kube-apiserver CPU per status write (`pipeline_bench --mode write-cost`, once per size before
// the runs; `--no-write-cost` skips it): what it writes and how is in `bench/write_cost.h`; where
// that CPU goes, `bench/profile-writes.sh` ([`results/apiserver-write-
// profile.md`](results/apiserver-write-profile.md)).
//
// `pipeline.sh` writes `pipeline-latest.json` (the summary, the targets and every run), `pipeline-
// latest.md` and, through `plot.py`, the plots it links (`pipeline-pods-per-second.svg`,
// `pipeline-p99.svg`; `run.sh` draws `extender-p99.svg` the same way); the runs' own files stay in
// the work folder with `KEEP_BENCH_DIR=1`. `--mode report --runs-dir DIR` summarizes any set of
// run files; the targets are judge()'s (bench/pipeline_summary.h). Unlike `extender` and `dra`,
// `classes` and `dra-classes` make their claims inside the timed window (a claim create at
// binding for `classes`, the Binding recording it; a claim create, its status and the pod's status
// at binding for `dra-classes`), so their API requests / pod and CPU include them; their pods may
// take any of a node's 8 devices, not only its 4 k80s.
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/cluster.h"
#include "bench/http_fetch.h"
#include "bench/http_load.h"
#include "bench/pipeline_objects.h"
#include "bench/pipeline_summary.h"
#include "bench/process_usage.h"
#include "bench/prom_text.h"
#include "bench/write_cost.h"
#include "common/api_error.h"
#include "common/flags.h"
#include "common/kube_client.h"
#include "common/logging.h"
#include "model/objects.h"
#include "model/resource_class.h"

namespace ker::bench::pipeline {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Config {
  std::string mode;
  std::string envFile;
  size_t nodes = 0;
  size_t pods = 0;
  std::string variant;
  std::string ns;
  std::string clientQps = "default";
  int repeat = 0;
  std::string schedulerInstance;
  std::string extenderMetrics;
  int extenderPid = 0;
  int controllerPid = 0;
  std::string out;
  std::string runsDir;
  std::string outDir;
  int workers = 16;
  std::chrono::milliseconds timeout{600s};
  std::chrono::milliseconds settle{2s};
  std::chrono::milliseconds quietTimeout{300s};
  bool protection = true;  // the controller puts protection finalizers (its default)
  size_t writes = 1000;    // status writes per kind (write-cost)
  std::vector<writecost::Kind> writeKinds{std::begin(writecost::kKinds),
                                          std::end(writecost::kKinds)};
  std::string writeCostDir;
  std::string note;
};

// KEY=VALUE lines of the launcher's DIR/env.
std::map<std::string, std::string> readEnv(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error("cannot read " + path);
  }
  std::map<std::string, std::string> env;
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) {
      env[line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  return env;
}

std::string envOr(const std::map<std::string, std::string>& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() ? std::string() : it->second;
}

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double loadAverage() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  in >> one;
  return one;
}

std::unique_ptr<KubeClient> client(const std::map<std::string, std::string>& env) {
  KubeClientOptions opts;
  opts.userAgent = "pipeline-bench";
  return std::make_unique<KubeClient>(KubeConfig::fromKubeconfigFile(envOr(env, "KUBECONFIG")),
                                      opts);
}

void createIgnoringExisting(ApiClient& api, const Resource& res, const std::string& ns,
                            const json& obj) {
  try {
    api.create(res, ns, obj);
  } catch (const ApiError& e) {
    if (e.httpStatus() != 409) {
      throw;
    }
  }
}

// ---- setup -------------------------------------------------------------------------------

int setup(const Config& cfg) {
  const auto env = readEnv(cfg.envFile);
  auto api = client(env);
  createIgnoringExisting(*api, resources::kDeviceClasses, "", deviceClass());
  createIgnoringExisting(*api, resources::kDeviceClasses, "", mappedDeviceClass());
  createIgnoringExisting(*api, ker::resources::kExtendedResourceClasses, "",
                         extendedResourceClass());
  const auto t0 = Clock::now();
  // A node is created advertising the class's name (nodes take their status on create); one
  // left by an earlier setup gets it by a status patch, which writes nothing when it is there.
  std::atomic<size_t> nodesCreated{0};
  std::atomic<size_t> nodesPatched{0};
  parallelFor(cfg.nodes, cfg.workers * 2, [&](size_t i) {
    try {
      api->create(ker::resources::kNodes, "", nodeObject(i));
      nodesCreated++;
    } catch (const ApiError& e) {
      if (e.httpStatus() != 409) {
        throw;
      }
      api->patch(ker::resources::kNodes, "", nodeName(i), PatchType::kMerge, classCapacityPatch(),
                 "status");
      nodesPatched++;
    }
  });
  auto ers = createAll(
      *api, ker::resources::kExtendedResources, "", 0, cfg.nodes * kDevicesPerNode,
      [](size_t k) { return extendedResource(k / kDevicesPerNode, static_cast<int>(k % 8)); },
      cfg.workers * 2);
  auto slices = createAll(
      *api, resources::kResourceSlices, "", 0, cfg.nodes, [](size_t i) { return resourceSlice(i); },
      cfg.workers * 2);
  log::info("cluster ready", {{"nodes", cfg.nodes},
                              {"nodes_created", nodesCreated.load()},
                              {"nodes_patched", nodesPatched.load()},
                              {"extendedresources_created", ers.created},
                              {"resourceslices_created", slices.created},
                              {"seconds", since(t0)}});
  return 0;
}

// ---- run ---------------------------------------------------------------------------------

std::string podName(size_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "p-%05zu", i);
  return buf;
}

std::string claimName(size_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "c-%05zu", i);
  return buf;
}

// Index of a pod by its name p-NNNNN; -1 for anything else.
long podIndex(const std::string& name) {
  if (name.size() != 7 || name.rfind("p-", 0) != 0) {
    return -1;
  }
  try {
    return std::stol(name.substr(2));
  } catch (const std::exception&) {
    return -1;
  }
}

bool hasFinalizer(const json& obj, const char* finalizer) {
  const auto meta = obj.find("metadata");
  if (meta == obj.end() || !meta->contains("finalizers") || !(*meta)["finalizers"].is_array()) {
    return false;
  }
  const json& list = (*meta)["finalizers"];
  return std::find(list.begin(), list.end(), finalizer) != list.end();
}

// Calls done() every interval until it holds or the timeout passes; whether it held.
bool pollUntil(std::chrono::milliseconds timeout, std::chrono::milliseconds interval,
               const std::function<bool()>& done) {
  const auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(interval);
  }
  return true;
}

// Waits until no device of this project is held and no claim of either kind is left from an
// earlier run (among them those the controller and kube-scheduler made for pods), so every run
// starts from the same free devices; with `protection`, until every device carries the
// controller's protection finalizer too, so the controller's protecting of the devices a larger
// cluster added is not done, and timed, during a run. False when that did not happen in time.
bool waitQuiet(ApiClient& api, std::chrono::milliseconds timeout, bool protection) {
  size_t held = 0;
  size_t unprotected = 0;
  size_t claims = 0;
  size_t extClaims = 0;
  const bool quiet = pollUntil(timeout, 2s, [&] {
    held = 0;
    unprotected = 0;
    ListOptions opts;
    api.listEach(
        ker::resources::kExtendedResources, "", opts, 5000,
        [&](json& er) {
          const auto* phase = er.contains("status") ? &er["status"] : nullptr;
          if (phase == nullptr || phase->value("phase", std::string()) != "Available") {
            held++;
          }
          if (protection && !hasFinalizer(er, ker::kDeviceProtectionFinalizer)) {
            unprotected++;
          }
        },
        [&] { held = unprotected = 0; });
    claims = api.listAll(resources::kResourceClaims, "", {}).items.size();
    extClaims = api.listAll(ker::resources::kExtendedResourceClaims, "", {}).items.size();
    return held == 0 && unprotected == 0 && claims == 0 && extClaims == 0;
  });
  if (!quiet) {
    log::warn("cluster not quiet before the run", {{"devices_not_available", held},
                                                   {"devices_unprotected", unprotected},
                                                   {"resourceclaims_left", claims},
                                                   {"extendedresourceclaims_left", extClaims}});
  }
  return quiet;
}

// Waits until the controller has put its protection finalizer on every claim of the run, as
// it does for each new claim: that write belongs to making the claim, which is not timed for
// any variant. False when that did not happen in time.
bool waitClaimsProtected(ApiClient& api, const std::string& ns, std::chrono::milliseconds timeout) {
  size_t unprotected = 0;
  const bool done = pollUntil(timeout, 1s, [&] {
    unprotected = 0;
    for (const json& c : api.listAll(ker::resources::kExtendedResourceClaims, ns, {}).items) {
      if (!hasFinalizer(c, ker::kClaimProtectionFinalizer)) {
        unprotected++;
      }
    }
    return unprotected == 0;
  });
  if (!done) {
    log::warn("claims not protected before the run", {{"claims_unprotected", unprotected}});
  }
  return done;
}

struct PodTimes {
  // The pods of a ReplicaSet have generated names: each gets the next slot when first seen,
  // and that moment counts as its creation.
  bool generatedNames = false;
  std::map<std::string, size_t> slots;
  std::vector<Clock::time_point> created;
  std::vector<Clock::time_point> scheduled;
  std::vector<Clock::time_point> recorded;
  std::vector<char> isScheduled;
  std::vector<char> isRecorded;
  std::vector<char> everUnschedulable;
  std::mutex mu;
  size_t count = 0;
  size_t recordedCount = 0;

  explicit PodTimes(size_t pods)
      : created(pods),
        scheduled(pods),
        recorded(pods),
        isScheduled(pods, 0),
        isRecorded(pods, 0),
        everUnschedulable(pods, 0) {}

  // The pod's slot, -1 for a pod not of the run. Called with mu held.
  long slot(const std::string& name, Clock::time_point seen) {
    if (!generatedNames) {
      const long i = podIndex(name);
      return i >= 0 && static_cast<size_t>(i) < scheduled.size() ? i : -1;
    }
    if (auto it = slots.find(name); it != slots.end()) {
      return static_cast<long>(it->second);
    }
    if (slots.size() >= scheduled.size()) {
      return -1;
    }
    const size_t i = slots.size();
    slots[name] = i;
    created[i] = seen;
    return static_cast<long>(i);
  }
};

// Watches the run's pods and notes when each is first seen with a node (the Binding sets
// spec.nodeName and PodScheduled=True in one write), whether it was ever Unschedulable, and
// when the controller's record of its generated claims first appears on it.
void watchPods(KubeClient& api, const std::string& ns, const std::string& rv, PodTimes& times,
               const std::atomic<bool>& stop, Clock::time_point deadline) {
  std::string resourceVersion = rv;
  while (!stop && Clock::now() < deadline) {
    try {
      WatchOptions opts;
      opts.resourceVersion = resourceVersion;
      opts.timeoutSeconds = 600;
      api.watch(
          ker::resources::kPods, ns, opts,
          [&](const WatchEvent& ev) {
            const auto now = Clock::now();
            const json& obj = ev.object;
            if (obj.contains("metadata") && obj["metadata"].contains("resourceVersion")) {
              resourceVersion = obj["metadata"]["resourceVersion"].get<std::string>();
            }
            if (ev.type != WatchEventType::kAdded && ev.type != WatchEventType::kModified) {
              return !stop.load();
            }
            const bool bound = !obj["spec"].value("nodeName", std::string()).empty();
            bool unschedulable = false;
            if (obj.contains("status") && obj["status"].contains("conditions")) {
              for (const auto& c : obj["status"]["conditions"]) {
                // Reason SchedulingGated is a pod waiting for its gate, not one tried and parked.
                if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False" &&
                    c.value("reason", "") == "Unschedulable") {
                  unschedulable = true;
                }
              }
            }
            const bool recorded =
                obj["metadata"].contains("annotations") &&
                obj["metadata"]["annotations"].contains("extendedresource.io/generated-claims");
            std::lock_guard lock(times.mu);
            const long i = times.slot(obj["metadata"].value("name", std::string()), now);
            if (i < 0) {
              return !stop.load();
            }
            if (recorded && !times.isRecorded[i]) {
              times.isRecorded[i] = 1;
              times.recorded[i] = now;
              times.recordedCount++;
            }
            if (unschedulable) {
              times.everUnschedulable[i] = 1;
            }
            if (bound && !times.isScheduled[i]) {
              times.isScheduled[i] = 1;
              times.scheduled[i] = now;
              times.count++;
            }
            return !stop.load();
          },
          &stop);
    } catch (const ApiError& e) {
      if (e.isGone()) {
        log::warn("pod watch expired; scheduled times after this are lost",
                  {{"error", std::string(e.what())}});
        return;
      }
      log::warn("pod watch failed, resuming", {{"error", std::string(e.what())}});
      std::this_thread::sleep_for(200ms);
    } catch (const std::exception& e) {
      log::warn("pod watch failed, resuming", {{"error", std::string(e.what())}});
      std::this_thread::sleep_for(200ms);
    }
  }
}

struct Snapshot {
  std::string apiserver;
  std::string scheduler;
  std::string extender;
  std::map<std::string, double> cpu;
};

struct Endpoints {
  std::string apiserverUrl;
  FetchOptions admin;
  std::string schedulerUrl;
  FetchOptions scheduler;
  std::string extenderUrl;
  std::map<std::string, int> pids;  // process name -> pid, for CPU time
};

Endpoints endpoints(const Config& cfg, const std::map<std::string, std::string>& env) {
  Endpoints e;
  e.apiserverUrl = envOr(env, "APISERVER_URL") + "/metrics";
  e.admin = {envOr(env, "CA_CERT"), envOr(env, "ADMIN_CERT"), envOr(env, "ADMIN_KEY")};
  std::string key = cfg.schedulerInstance;
  std::transform(key.begin(), key.end(), key.begin(), [](char c) {
    return c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  });
  e.schedulerUrl = envOr(env, "SCHEDULER_" + key + "_URL");
  if (e.schedulerUrl.empty()) {
    throw std::runtime_error("no scheduler '" + cfg.schedulerInstance + "' in " + cfg.envFile);
  }
  e.schedulerUrl += "/metrics";
  e.scheduler.caFile = envOr(env, "CA_CERT");
  e.extenderUrl = cfg.extenderMetrics;
  auto pid = [&](const std::string& name, const std::string& k) {
    const std::string v = envOr(env, k);
    if (!v.empty()) {
      e.pids[name] = std::stoi(v);
    }
  };
  pid("kube-apiserver", "APISERVER_PID");
  pid("etcd", "ETCD_PID");
  pid("kube-controller-manager", "CONTROLLER_MANAGER_PID");
  std::stringstream names(envOr(env, "SCHEDULERS"));
  for (std::string n; std::getline(names, n, ',');) {
    std::string k = n;
    std::transform(k.begin(), k.end(), k.begin(), [](char c) {
      return c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    });
    pid("kube-scheduler(" + n + ")", "SCHEDULER_" + k + "_PID");
  }
  if (cfg.extenderPid > 0) {
    e.pids["extender"] = cfg.extenderPid;
  }
  if (cfg.controllerPid > 0) {
    e.pids["controller"] = cfg.controllerPid;
  }
  e.pids["pipeline_bench"] = static_cast<int>(getpid());
  return e;
}

Snapshot snapshot(const Endpoints& e) {
  Snapshot s;
  for (const auto& [name, pid] : e.pids) {
    s.cpu[name] = cpuSeconds(pid);
  }
  s.apiserver = fetchText(e.apiserverUrl, e.admin);
  s.scheduler = fetchText(e.schedulerUrl, e.scheduler);
  if (!e.extenderUrl.empty()) {
    s.extender = fetchText(e.extenderUrl);
  }
  return s;
}

constexpr const char* kReplicaSetName = "trainer";
constexpr const char* kTemplateName = "k80";

// Runs fn, a deletion: an object already gone is as good as deleted.
void ignoreMissing(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const ApiError& e) {
    if (!e.isNotFound()) {
      throw;
    }
  }
}

bool gone(ApiClient& api, const Resource& res, const std::string& ns, const std::string& name) {
  try {
    api.get(res, ns, name);
    return false;
  } catch (const ApiError& e) {
    if (e.isNotFound()) {
      return true;
    }
    throw;
  }
}

// The names of the namespace's claims of `res`: those the controller or kube-scheduler made
// for the run's pods have generated names.
std::vector<std::string> claimNames(ApiClient& api, const Resource& res, const std::string& ns) {
  std::vector<std::string> names;
  for (const json& c : api.listAll(res, ns, {}).items) {
    names.push_back(c["metadata"].value("name", ""));
  }
  return names;
}

// Deletes what the run created, at once (grace period 0: no kubelet will confirm).
void cleanup(ApiClient& api, const Config& cfg, Variant v) {
  DeleteOptions now;
  now.gracePeriodSeconds = 0;
  if (v == Variant::kTemplates) {
    // The ReplicaSet first, so it makes no new pods; its pods' claims go with the pods (the
    // garbage collector) or with the namespace.
    ignoreMissing([&] { api.remove(resources::kReplicaSets, cfg.ns, kReplicaSetName); });
    const auto pods = api.listAll(ker::resources::kPods, cfg.ns, {}).items;
    parallelFor(pods.size(), cfg.workers, [&](size_t i) {
      ignoreMissing([&] {
        api.remove(ker::resources::kPods, cfg.ns, pods[i]["metadata"].value("name", ""), now);
      });
    });
    return;
  }
  parallelFor(cfg.pods, cfg.workers, [&](size_t i) {
    ignoreMissing([&] { api.remove(ker::resources::kPods, cfg.ns, podName(i), now); });
  });
  if (v == Variant::kNoClaims) {
    return;
  }
  const bool dra = usesDraClaims(v);
  const Resource& res = dra ? resources::kResourceClaims : ker::resources::kExtendedResourceClaims;
  // The claims made for the pods (owned by them) would go with the pods through the garbage
  // collector; deleted here like the pre-created ones, so the cluster is quiet sooner.
  std::vector<std::string> names;
  if (claimsMadePerPod(v)) {
    names = claimNames(api, res, cfg.ns);
  } else {
    for (size_t i = 0; i < cfg.pods; ++i) {
      names.push_back(claimName(i));
    }
  }
  parallelFor(names.size(), cfg.workers, [&](size_t i) {
    ignoreMissing([&] { api.remove(res, cfg.ns, names[i]); });
    if (dra) {
      // The scheduler's delete protection; kube-controller-manager's resourceclaim
      // controller lifts it too, but at its client's 20 QPS that takes minutes at 5,000
      // claims. The pods are gone, so nothing uses the claims any more.
      ignoreMissing([&] {
        api.patch(res, cfg.ns, names[i], PatchType::kMerge,
                  {{"metadata", {{"finalizers", nullptr}}}});
      });
    }
  });
}

// The namespace's claims of the variant's kind that hold their devices: an
// ExtendedResourceClaim Bound, a ResourceClaim with an allocation.
size_t allocatedClaims(ApiClient& api, Variant v, const std::string& ns) {
  const bool dra = usesDraClaims(v);
  size_t n = 0;
  for (const json& c :
       api.listAll(dra ? resources::kResourceClaims : ker::resources::kExtendedResourceClaims, ns,
                   {})
           .items) {
    const json status = c.value("status", json::object());
    n += (dra ? status.contains("allocation") : status.value("phase", "") == "Bound") ? 1 : 0;
  }
  return n;
}

int run(const Config& cfg) {
  const Variant variant = parseVariant(cfg.variant);
  const auto env = readEnv(cfg.envFile);
  auto api = client(env);
  auto watchApi = client(env);
  const Endpoints ep = endpoints(cfg, env);

  bool quiet = waitQuiet(*api, cfg.quietTimeout, cfg.protection);
  createIgnoringExisting(*api, ker::resources::kNamespaces, "", namespaceObject(cfg.ns));
  if (variant == Variant::kExtender) {
    createAll(
        *api, ker::resources::kExtendedResourceClaims, cfg.ns, 0, cfg.pods,
        [&](size_t i) { return claim(cfg.ns, claimName(i), 1, "k80"); }, cfg.workers);
    if (cfg.protection) {
      quiet = waitClaimsProtected(*api, cfg.ns, cfg.quietTimeout) && quiet;
    }
  } else if (variant == Variant::kDra) {
    createAll(
        *api, resources::kResourceClaims, cfg.ns, 0, cfg.pods,
        [&](size_t i) { return resourceClaim(cfg.ns, claimName(i)); }, cfg.workers);
  } else if (variant == Variant::kTemplates) {
    api->create(ker::resources::kExtendedResourceClaimTemplates, cfg.ns,
                claimTemplate(cfg.ns, kTemplateName));
  }
  // The class variants create nothing here: their claims are made per pod, after it is
  // created (by the controller, by kube-scheduler), and so are part of what is timed.
  // The schedulers' and the extender's informers see the claims before the first pod.
  std::this_thread::sleep_for(cfg.settle);

  PodTimes times(cfg.pods);
  times.generatedNames = variant == Variant::kTemplates;
  const std::string rv =
      api->list(ker::resources::kPods, cfg.ns, {})["metadata"].value("resourceVersion", "");
  const double loadBefore = loadAverage();
  const Snapshot before = snapshot(ep);
  std::atomic<bool> stop{false};
  const auto deadline = Clock::now() + cfg.timeout;
  std::thread watcher([&] { watchPods(*watchApi, cfg.ns, rv, times, stop, deadline + 30s); });

  log::info("creating pods", {{"variant", cfg.variant}, {"pods", cfg.pods}, {"ns", cfg.ns}});
  const auto start = Clock::now();
  std::string createError;
  try {
    if (variant == Variant::kTemplates) {
      api->create(resources::kReplicaSets, cfg.ns,
                  replicaSet(cfg.ns, kReplicaSetName, cfg.pods, kTemplateName));
    } else {
      parallelFor(cfg.pods, cfg.workers, [&](size_t i) {
        const json p = pod(variant, cfg.ns, podName(i), claimName(i));
        const auto t = Clock::now();
        {
          std::lock_guard lock(times.mu);
          times.created[i] = t;
        }
        api->create(ker::resources::kPods, cfg.ns, p);
      });
    }
  } catch (const std::exception& e) {
    createError = e.what();
    log::error("creating pods failed", {{"error", createError}});
  }
  const double createSeconds = since(start);
  size_t lastCount = 0;
  auto lastProgress = Clock::now();
  while (createError.empty() && Clock::now() < deadline) {
    size_t n = 0;
    {
      std::lock_guard lock(times.mu);
      n = times.count;
    }
    if (n >= cfg.pods) {
      break;
    }
    if (n != lastCount || since(lastProgress) > 10) {
      if (since(lastProgress) > 10) {
        log::info("waiting for pods to be scheduled", {{"scheduled", n}, {"pods", cfg.pods}});
      }
      lastCount = n;
      lastProgress = Clock::now();
    }
    std::this_thread::sleep_for(20ms);
  }
  const Snapshot after = snapshot(ep);
  const double loadAfter = loadAverage();
  stop = true;
  watcher.join();

  std::vector<double> latencies;
  std::vector<double> claimLatencies;
  Clock::time_point last = start;
  Clock::time_point lastRecorded = start;
  size_t scheduled = 0;
  size_t everUnschedulable = 0;
  for (size_t i = 0; i < cfg.pods; ++i) {
    everUnschedulable += times.everUnschedulable[i] ? 1 : 0;
    if (times.isRecorded[i]) {
      claimLatencies.push_back(
          std::chrono::duration<double, std::milli>(times.recorded[i] - times.created[i]).count());
      lastRecorded = std::max(lastRecorded, times.recorded[i]);
    }
    if (times.isScheduled[i]) {
      scheduled++;
      latencies.push_back(
          std::chrono::duration<double, std::milli>(times.scheduled[i] - times.created[i]).count());
      last = std::max(last, times.scheduled[i]);
    }
  }
  const double seconds = std::chrono::duration<double>(last - start).count();
  const double pods = static_cast<double>(std::max<size_t>(cfg.pods, 1));

  ojson out = {{"variant", cfg.variant},
               {"nodes", cfg.nodes},
               {"pods", cfg.pods},
               {"client_qps", cfg.clientQps},
               {"creating_clients", cfg.workers},
               {"repeat", cfg.repeat},
               {"namespace", cfg.ns},
               {"quiet_before", quiet},
               {"scheduled", scheduled},
               {"timed_out", scheduled < cfg.pods},
               {"create_seconds", createSeconds},
               {"seconds", seconds},
               {"pods_per_second", seconds > 0 ? static_cast<double>(scheduled) / seconds : 0},
               {"p50_ms", percentile(latencies, 50)},
               {"p99_ms", percentile(latencies, 99)},
               {"max_ms", percentile(latencies, 100)},
               {"ever_unschedulable", everUnschedulable},
               {"load_average", {{"before", loadBefore}, {"after", loadAfter}}}};
  if (variant == Variant::kTemplates || (claimsMadePerPod(variant) && !usesDraClaims(variant))) {
    // Claims made for their pods (by the controller from templates, by the extender at bind for
    // classes) and recorded on them, from the first pod's creation (the ReplicaSet's).
    const double claimSeconds = std::chrono::duration<double>(lastRecorded - start).count();
    out["claims_generated"] = claimLatencies.size();
    out["claims_per_second"] =
        claimSeconds > 0 ? static_cast<double>(claimLatencies.size()) / claimSeconds : 0;
    out["claim_p50_ms"] = percentile(claimLatencies, 50);
    out["claim_p99_ms"] = percentile(claimLatencies, 99);
  }
  if (variant != Variant::kNoClaims) {
    // After the timed window: how many of the namespace's claims ended allocated, so a run
    // whose pods were placed without their devices shows.
    out["claims_allocated"] = allocatedClaims(*api, variant, cfg.ns);
  }
  if (!createError.empty()) {
    out["error"] = createError;
  }
  // kube-scheduler's attempts of this run, by result.
  const auto attempts = counterGrowth(before.scheduler, after.scheduler,
                                      "scheduler_schedule_attempts_total", {"result"});
  ojson att = ojson::object();
  for (const auto& [k, v] : attempts) {
    att[k] = v;
  }
  out["scheduler_attempts"] = att;
  // Mean time of one scheduling attempt (the serial scheduling cycle, without binding).
  const double attemptSum =
      sumOf(after.scheduler, "scheduler_scheduling_attempt_duration_seconds_sum") -
      sumOf(before.scheduler, "scheduler_scheduling_attempt_duration_seconds_sum");
  const double attemptCount =
      sumOf(after.scheduler, "scheduler_scheduling_attempt_duration_seconds_count") -
      sumOf(before.scheduler, "scheduler_scheduling_attempt_duration_seconds_count");
  out["scheduling_attempt_ms_mean"] = attemptCount > 0 ? attemptSum * 1000 / attemptCount : 0;
  const double errors = attempts.contains("error") ? attempts.at("error") : 0;
  out["scheduler_errors_per_pod"] = errors / pods;
  if (!before.extender.empty()) {
    const std::map<std::string, std::string> failed = {{"verb", "bind"}, {"result", "failed"}};
    const std::map<std::string, std::string> bound = {{"verb", "bind"}, {"result", "bound"}};
    const char* name = "extended_resource_scheduler_decisions_total";
    const double failedBinds =
        sumOf(after.extender, name, failed) - sumOf(before.extender, name, failed);
    out["extender_binds"] =
        sumOf(after.extender, name, bound) - sumOf(before.extender, name, bound);
    out["extender_failed_binds"] = failedBinds;
    out["failed_binds_per_pod"] = failedBinds / pods;
    // The extender's own time per call, by verb.
    const auto sums =
        counterGrowth(before.extender, after.extender,
                      "extended_resource_scheduler_request_duration_seconds_sum", {"verb"});
    const auto counts =
        counterGrowth(before.extender, after.extender,
                      "extended_resource_scheduler_request_duration_seconds_count", {"verb"});
    ojson perCall = ojson::object();
    for (const auto& [verb, n] : counts) {
      perCall[verb] = {{"calls", n},
                       {"ms_mean", sums.contains(verb) ? sums.at(verb) * 1000 / n : 0}};
    }
    out["extender_calls"] = perCall;
  } else {
    // The default binder: a failed bind is a scheduling attempt ending in error.
    out["failed_binds_per_pod"] = errors / pods;
  }
  // Every client's requests, by verb and resource, less the bench's own pod creations (a
  // ReplicaSet's are kube-controller-manager's, part of the pipeline) and the non-resource
  // requests (the metrics scrapes).
  auto requests = counterGrowth(before.apiserver, after.apiserver, "apiserver_request_total",
                                {"verb", "resource", "subresource"});
  double total = 0;
  ojson byKind = ojson::object();
  std::vector<std::pair<double, std::string>> sorted;
  for (auto& [k, v] : requests) {
    double n = v;
    if (k == "POST pods " && variant != Variant::kTemplates) {
      n -= static_cast<double>(cfg.pods);
    }
    const size_t sp = k.find(' ');
    if (sp == std::string::npos || sp + 1 >= k.size() || k[sp + 1] == ' ') {
      continue;  // resource "": non-resource URLs
    }
    if (n > 0) {
      total += n;
      sorted.emplace_back(n, k);
    }
  }
  std::sort(sorted.rbegin(), sorted.rend());
  for (const auto& [n, k] : sorted) {
    byKind[k] = n;
  }
  out["api_requests"] = total;
  out["api_requests_per_pod"] = total / pods;
  out["api_requests_by_kind"] = byKind;
  // The refused ones among them (conflicts above all: a write from a stale cache), by code.
  ojson refused = ojson::object();
  for (const auto& [k, n] :
       counterGrowth(before.apiserver, after.apiserver, "apiserver_request_total",
                     {"verb", "resource", "subresource", "code"})) {
    const size_t codeAt = k.rfind(' ');
    if (codeAt != std::string::npos && k.compare(codeAt + 1, 1, "4") == 0) {
      refused[k] = n;
    }
  }
  out["api_requests_refused_by_kind"] = refused;
  ojson cpu = ojson::object();
  ojson cpuPerPod = ojson::object();
  for (const auto& [proc, s] : after.cpu) {
    const double d = s - before.cpu.at(proc);
    cpu[proc] = d;
    cpuPerPod[proc] = d * 1000 / pods;
  }
  out["cpu_seconds"] = cpu;
  out["cpu_ms_per_pod"] = cpuPerPod;
  if (!cfg.out.empty()) {
    std::ofstream(cfg.out) << out.dump(2) << "\n";
  }
  log::info("run done", {{"variant", cfg.variant},
                         {"nodes", cfg.nodes},
                         {"client_qps", cfg.clientQps},
                         {"scheduled", scheduled},
                         {"pods_per_second", out["pods_per_second"].get<double>()},
                         {"p50_ms", out["p50_ms"].get<double>()},
                         {"p99_ms", out["p99_ms"].get<double>()},
                         {"failed_binds_per_pod", out["failed_binds_per_pod"].get<double>()},
                         {"api_requests_per_pod", out["api_requests_per_pod"].get<double>()}});
  cleanup(*api, cfg, variant);
  try {
    api->remove(ker::resources::kNamespaces, "", cfg.ns);
  } catch (const ApiError& e) {
    log::warn("deleting the namespace failed", {{"error", std::string(e.what())}});
  }
  // The namespace controller's sweep of a deleted namespace would otherwise land in the
  // next run's request counts.
  pollUntil(cfg.quietTimeout, 500ms,
            [&] { return gone(*api, ker::resources::kNamespaces, "", cfg.ns); });
  if (!waitQuiet(*api, cfg.quietTimeout, cfg.protection)) {
    log::warn("devices or claims not released after the run", {{"ns", cfg.ns}});
  }
  return scheduled < cfg.pods ? 3 : 0;
}

// ---- write-cost --------------------------------------------------------------------------

// Deletes what the write-cost stage makes and waits until it is gone, so no later run counts
// it (the device is cluster-scoped: the namespace does not take it along).
void removeWriteCostObjects(ApiClient& api, const writecost::Targets& t,
                            std::chrono::milliseconds timeout) {
  DeleteOptions now;
  now.gracePeriodSeconds = 0;
  auto remove = [&](const Resource& res, const std::string& ns, const std::string& name) {
    ignoreMissing([&] { api.remove(res, ns, name, now); });
  };
  remove(ker::resources::kPods, t.ns, t.pod);
  remove(ker::resources::kExtendedResourceClaims, t.ns, t.claim);
  remove(ker::resources::kExtendedResources, "", t.device);
  remove(ker::resources::kNamespaces, "", t.ns);
  if (!pollUntil(timeout, 500ms, [&] {
        return gone(api, ker::resources::kExtendedResources, "", t.device) &&
               gone(api, ker::resources::kNamespaces, "", t.ns);
      })) {
    throw std::runtime_error("the write-cost objects (device " + t.device + ", namespace " + t.ns +
                             ") were not gone in time");
  }
}

// N sequential status writes of one object, each carrying the previous reply's
// resourceVersion, with kube-apiserver's and etcd's CPU and the wall time around them.
writecost::Measured measureWrites(ApiClient& api, writecost::Kind kind, const writecost::Targets& t,
                                  json current, size_t writes, int apiserverPid, int etcdPid) {
  using writecost::Kind;
  const Resource& res = kind == Kind::kDevice  ? ker::resources::kExtendedResources
                        : kind == Kind::kClaim ? ker::resources::kExtendedResourceClaims
                                               : ker::resources::kPods;
  const std::string ns = kind == Kind::kDevice ? "" : t.ns;
  const std::string name = kind == Kind::kDevice  ? t.device
                           : kind == Kind::kClaim ? t.claim
                                                  : t.pod;
  // A conflict means another client writes the object: a few are retried from a fresh read,
  // more end the stage, since its figures would then include that client's writes.
  constexpr size_t kMaxConflicts = 10;
  writecost::Measured m;
  m.kind = kind;
  const double apiserver0 = cpuSeconds(apiserverPid);
  const double etcd0 = cpuSeconds(etcdPid);
  const auto t0 = Clock::now();
  for (size_t i = 0; i < writes;) {
    const json body = writecost::nextStatus(kind, t, current, i, std::chrono::system_clock::now());
    try {
      current = api.updateStatus(res, ns, body);
    } catch (const ApiError& e) {
      if (!e.isConflict() || ++m.conflicts > kMaxConflicts) {
        throw std::runtime_error(std::string(writecost::kindName(kind)) + " status write " +
                                 std::to_string(i) + " failed (" + std::to_string(m.conflicts) +
                                 " conflicts; is another client writing it, such as the "
                                 "controller?): " +
                                 e.what());
      }
      current = api.get(res, ns, name);
      continue;
    }
    // The last write of each state: the object as the API server returns it.
    if (i + 2 >= writes) {
      m.bytes[writecost::stateOf(kind, i)] = current.dump().size();
    }
    ++i;
    ++m.writes;
  }
  m.wallSeconds = since(t0);
  m.apiserverSeconds = cpuSeconds(apiserverPid) - apiserver0;
  m.etcdSeconds = cpuSeconds(etcdPid) - etcd0;
  return m;
}

// What one status write of a device, a claim and a pod costs kube-apiserver and etcd, measured
// while neither the extender nor the controller runs (pipeline.sh sees to that): the
// controller would undo these writes, and the figures are the writes alone, without the watch
// fan-out to this project's informers.
int writeCost(const Config& cfg) {
  const auto env = readEnv(cfg.envFile);
  auto api = client(env);
  const std::string apiserverPid = envOr(env, "APISERVER_PID");
  const std::string etcdPid = envOr(env, "ETCD_PID");
  if (apiserverPid.empty() || etcdPid.empty()) {
    throw std::runtime_error("no APISERVER_PID or ETCD_PID in " + cfg.envFile);
  }
  writecost::Targets t = writecost::targets(cfg.ns);
  removeWriteCostObjects(*api, t, cfg.quietTimeout);  // an interrupted stage's leftovers
  ojson out = {{"nodes", cfg.nodes},
               {"namespace", cfg.ns},
               {"writes_per_kind", cfg.writes},
               {"load_average", {{"before", loadAverage()}}}};
  std::exception_ptr failed;
  try {
    api->create(ker::resources::kNamespaces, "", namespaceObject(cfg.ns));
    std::map<writecost::Kind, json> created;
    created[writecost::Kind::kDevice] =
        api->create(ker::resources::kExtendedResources, "", writecost::deviceObject(t));
    created[writecost::Kind::kClaim] =
        api->create(ker::resources::kExtendedResourceClaims, cfg.ns, writecost::claimObject(t));
    created[writecost::Kind::kPod] =
        api->create(ker::resources::kPods, cfg.ns, writecost::podObject(t));
    t.claimUid = created[writecost::Kind::kClaim]["metadata"].value("uid", "");
    t.podUid = created[writecost::Kind::kPod]["metadata"].value("uid", "");
    ojson kinds = ojson::array();
    for (const auto kind : cfg.writeKinds) {
      const auto m = measureWrites(*api, kind, t, created[kind], cfg.writes,
                                   std::stoi(apiserverPid), std::stoi(etcdPid));
      kinds.push_back(writecost::toJson(m));
      log::info("write cost measured",
                {{"kind", writecost::kindName(kind)},
                 {"writes", m.writes},
                 {"apiserver_ms_per_write", kinds.back()["apiserver_ms_per_write"].get<double>()},
                 {"etcd_ms_per_write", kinds.back()["etcd_ms_per_write"].get<double>()}});
    }
    out["kinds"] = kinds;
  } catch (...) {
    failed = std::current_exception();
  }
  out["load_average"]["after"] = loadAverage();
  if (failed) {
    try {
      removeWriteCostObjects(*api, t, cfg.quietTimeout);
    } catch (const std::exception& e) {
      log::warn("removing the write-cost objects failed", {{"error", std::string(e.what())}});
    }
    std::rethrow_exception(failed);
  }
  removeWriteCostObjects(*api, t, cfg.quietTimeout);
  if (!cfg.out.empty()) {
    std::ofstream(cfg.out) << out.dump(2) << "\n";
  }
  return 0;
}

// ---- report ------------------------------------------------------------------------------

// The folder's JSON files in name order, which is the order the script wrote them; none
// without a folder.
std::vector<ojson> readJsonFiles(const std::string& dir) {
  std::vector<ojson> out;
  if (dir.empty() || !std::filesystem::is_directory(dir)) {
    return out;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f);
    out.push_back(ojson::parse(in));
  }
  return out;
}

int report(const Config& cfg) {
  const std::vector<ojson> runs = readJsonFiles(cfg.runsDir);
  if (runs.empty()) {
    std::cerr << "no run files in " << cfg.runsDir << "\n";
    return 1;
  }
  const ojson summary = summarize(runs);
  const ojson verdicts = judge(summary);
  ojson meta = ojson::object();
  if (!cfg.note.empty()) {
    meta["note"] = cfg.note;
  }
  const ojson writeCosts = readJsonFiles(cfg.writeCostDir);
  const std::string md = markdown(summary, verdicts, meta) + writeCostMarkdown(writeCosts);
  ojson all = {{"meta", meta},
               {"summary", summary},
               {"targets", verdicts},
               {"runs", runs},
               {"write_cost", writeCosts}};
  std::filesystem::create_directories(cfg.outDir);
  std::ofstream(cfg.outDir + "/pipeline-latest.json") << all.dump(2) << "\n";
  std::ofstream(cfg.outDir + "/pipeline-latest.md") << md;
  std::cout << md;
  return 0;
}

}  // namespace
}  // namespace ker::bench::pipeline

int main(int argc, char** argv) {
  using namespace ker::bench::pipeline;
  ker::FlagSet flags("pipeline_bench",
                     "The whole scheduling pipeline, pod creation to PodScheduled: this "
                     "project's scheduler profile, Kubernetes DRA, pods without device "
                     "requests, a ReplicaSet naming a claim template, and pods asking for "
                     "devices in their resources (an ExtendedResourceClass, DRA's DeviceClass "
                     "mapping) on one control plane. "
                     "bench/pipeline.sh drives it; see bench/README.md.");
  Config cfg;
  auto* mode = flags.addString("mode", "", "setup, run, write-cost or report");
  auto* envFile =
      flags.addString("env-file", "", "the launcher's DIR/env (setup, run, write-cost)");
  auto* nodes =
      flags.addInt("nodes", 0, "cluster size: nodes to create (setup), label (run, write-cost)");
  auto* pods = flags.addInt(
      "pods", 0, "pods of the run, each claiming one k80 (one device of a class's) (run)");
  auto* variant = flags.addString(
      "variant", "",
      "extender, dra, no-claims, templates, classes, classes-routed or dra-classes (run)");
  auto* ns = flags.addString("namespace", "",
                             "the run's namespace, created and deleted (run, write-cost)");
  auto* qps =
      flags.addString("client-qps", "default", "kube-scheduler's client QPS, a label of the run");
  auto* repeat = flags.addInt("repeat", 0, "repeat number, a label of the run");
  auto* sched = flags.addString("scheduler-instance", "",
                                "the launcher's name of the kube-scheduler placing the pods (run)");
  auto* extMetrics = flags.addString(
      "extender-metrics", "",
      "the extender's /metrics URL (run, the variants this project's profile places)");
  auto* extPid = flags.addInt("extender-pid", 0, "the extender's pid, for its CPU time");
  auto* ctlPid = flags.addInt("controller-pid", 0, "the controller's pid, for its CPU time");
  auto* out = flags.addString("out", "", "the run's JSON file (run, write-cost)");
  auto* runsDir = flags.addString("runs-dir", "", "folder of run files (report)");
  auto* outDir = flags.addString("out-dir", "", "where pipeline-latest.{json,md} go (report)");
  auto* note = flags.addString("note", "", "a line for the report's header (report)");
  auto* writes = flags.addInt("writes", 1000,
                              "sequential status writes of each kind: device, claim, pod "
                              "(write-cost)");
  auto* writeKinds = flags.addString(
      "write-kinds", "ExtendedResource,ExtendedResourceClaim,Pod",
      "the kinds whose status writes are measured, in this order whatever the list's (write-cost)");
  auto* writeCostDir = flags.addString("write-cost-dir", "",
                                       "folder of the write-cost stage's files, if any (report)");
  auto* workers = flags.addInt("workers", 16, "concurrent API clients creating objects");
  auto* timeout = flags.addDuration("timeout", std::chrono::minutes(10),
                                    "bound for every pod of a run to be scheduled");
  auto* settle = flags.addDuration("settle", std::chrono::seconds(2),
                                   "pause between creating the claims and the first pod");
  auto* quiet = flags.addDuration("quiet-timeout", std::chrono::minutes(5),
                                  "bound for earlier runs' devices and claims to be released");
  auto* protection = flags.addBool(
      "protection", true,
      "the controller puts protection finalizers on devices and claims (its default): a run "
      "starts once they are on, so it does not time them");
  if (auto r = flags.parse(argc, argv); r.status != ker::FlagParseResult::kOk) {
    r.print();
    return r.exitCode();
  }
  ker::log::init(ker::log::Format::kText, 0);
  cfg.mode = *mode;
  cfg.envFile = *envFile;
  cfg.nodes = static_cast<size_t>(*nodes);
  cfg.pods = static_cast<size_t>(*pods);
  cfg.variant = *variant;
  cfg.ns = *ns;
  cfg.clientQps = *qps;
  cfg.repeat = static_cast<int>(*repeat);
  cfg.schedulerInstance = *sched;
  cfg.extenderMetrics = *extMetrics;
  cfg.extenderPid = static_cast<int>(*extPid);
  cfg.controllerPid = static_cast<int>(*ctlPid);
  cfg.out = *out;
  cfg.runsDir = *runsDir;
  cfg.outDir = *outDir;
  cfg.note = *note;
  cfg.workers = static_cast<int>(std::max<int64_t>(*workers, 1));
  cfg.timeout = *timeout;
  cfg.settle = *settle;
  cfg.quietTimeout = *quiet;
  cfg.protection = *protection;
  cfg.writes = static_cast<size_t>(std::max<int64_t>(*writes, 0));
  cfg.writeCostDir = *writeCostDir;
  try {
    cfg.writeKinds = writecost::parseKinds(*writeKinds);
  } catch (const std::invalid_argument& e) {
    std::cerr << "--write-kinds: " << e.what() << "\n";
    return 2;
  }
  try {
    if (cfg.mode == "setup" && !cfg.envFile.empty() && cfg.nodes > 0) {
      return setup(cfg);
    }
    if (cfg.mode == "run" && !cfg.envFile.empty() && cfg.pods > 0 && !cfg.variant.empty() &&
        !cfg.ns.empty() && !cfg.schedulerInstance.empty()) {
      return run(cfg);
    }
    if (cfg.mode == "write-cost" && !cfg.envFile.empty() && !cfg.ns.empty() && cfg.writes > 0) {
      return writeCost(cfg);
    }
    if (cfg.mode == "report" && !cfg.runsDir.empty() && !cfg.outDir.empty()) {
      return report(cfg);
    }
  } catch (const std::exception& e) {
    ker::log::error("pipeline_bench failed",
                    {{"mode", cfg.mode}, {"error", std::string(e.what())}});
    return 1;
  }
  std::cerr << "missing flags for --mode '" << cfg.mode << "' (try --help)\n";
  return 2;
}

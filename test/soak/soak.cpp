// The chaos soak: two extender replicas (each behind its own kube-scheduler, both serving the
// same profile, so they race for every pod) and two leader-elected controller replicas run
// against a real control plane while pods with claims (their own, made from a template, or
// shared) come and go (one in eight of a high PriorityClass, which preempts the low ones for
// devices) and faults are injected in turn. At checkpoints and at the end it lets the cluster
// settle and checks that the invariant checker finds nothing, that every Pending pod has no free
// matching device (nor a shared claim already holding one), and that no claim is held by a pod
// that is gone. test/soak/run.sh prepares the control plane and runs it.
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/api_error.h"
#include "common/flags.h"
#include "common/informer.h"
#include "common/kube_client.h"
#include "common/logging.h"
#include "common/signals.h"
#include "model/objects.h"
#include "model/suitability.h"
#include "test/integration/priority_classes.h"
#include "test/soak/tcp_proxy.h"
#include "test/support/child_process.h"
#include "test/support/free_port.h"

namespace ker::soak {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
using namespace std::chrono_literals;
using testsupport::ChildProcess;
using testsupport::freePort;

constexpr const char* kNamespace = "soak";
constexpr const char* kResource = "soak.example.com/gpu";
constexpr const char* kProfile = "extended-resource-scheduler";
constexpr const char* kFailpointEnv = "KER_FAILPOINT_STALE_DEVICE_WRITES";
constexpr int kFailpointWrites = 20;
// Longer than kube-scheduler's extender httpTimeout (5s): the paused extender's verbs time out
// and it resumes binds kube-scheduler has given up on, with a cache that missed 8s of events.
constexpr auto kPauseLength = 8s;
// The extenders and controllers die with the soak, even a SIGKILLed one; the soak starts them
// from its main thread, which the parent-death signal is tied to.
constexpr testsupport::ChildProcessOptions kComponent{.dieWithParent = true};

std::atomic<int> gSignal{0};
const Clock::time_point gStart = Clock::now();

bool interrupted() {
  return gSignal.load() != 0;
}

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string fixed(double v, int decimals = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

void say(const std::string& msg) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  std::printf("[soak +%6.1fs] %s\n", secondsSince(gStart), msg.c_str());
  std::fflush(stdout);
}

// Sleeps up to d; false when the soak was interrupted meanwhile.
bool sleepFor(Clock::duration d) {
  const auto until = Clock::now() + d;
  while (!interrupted()) {
    const auto now = Clock::now();
    if (now >= until) {
      return true;
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(until - now, 100ms));
  }
  return false;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// KEY=VALUE lines of the control plane's env file (see test/controlplane/launch.sh).
std::map<std::string, std::string> readEnvFile(const std::string& path) {
  std::map<std::string, std::string> out;
  std::istringstream in(readFile(path));
  std::string line;
  while (std::getline(in, line)) {
    if (auto eq = line.find('='); eq != std::string::npos) {
      out[line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  return out;
}

std::optional<std::string> scrape(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  client.set_read_timeout(2);
  auto res = client.Get("/metrics");
  if (!res || res->status != 200) {
    return std::nullopt;
  }
  return res->body;
}

bool ready(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(1);
  client.set_read_timeout(2);
  auto res = client.Get("/readyz");
  return res && res->status == 200;
}

// Counter series of one run of a component (a restart starts them from zero), keyed as
// written in Prometheus text: name{labels}, or the name alone.
using Series = std::map<std::string, double>;

const std::vector<std::string> kExtenderCounters = {
    "extended_resource_scheduler_allocation_conflicts_total",
    "extended_resource_scheduler_bind_undos_total",
    "extended_resource_scheduler_preemptions_total"};
const std::vector<std::string> kControllerCounters = {
    "extended_resource_controller_releases_total", "extended_resource_controller_repairs_total",
    "extended_resource_controller_pod_nudges_total"};

Series seriesOf(const std::string& text, const std::vector<std::string>& families) {
  Series out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    for (const auto& f : families) {
      if (line.size() > f.size() && line.compare(0, f.size(), f) == 0 &&
          (line[f.size()] == ' ' || line[f.size()] == '{')) {
        const auto space = line.rfind(' ');
        out[line.substr(0, space)] = std::stod(line.substr(space + 1));
      }
    }
  }
  return out;
}

// Runs a command to completion with its output appended to logFile; returns its exit code
// (-1 when it could not run or ended by a signal).
int runCommand(const std::vector<std::string>& argv, const std::string& logFile) {
  ChildProcess command(argv[0], {argv.begin() + 1, argv.end()}, logFile);
  try {
    command.start();
  } catch (const std::runtime_error&) {
    return -1;
  }
  command.wait();
  const int status = *command.lastStatus();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// "exit 1", "signal 9 (Killed)", from a wait status.
std::string describeStatus(int status) {
  if (WIFEXITED(status)) {
    return "exit " + std::to_string(WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    return "signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  }
  return "status " + std::to_string(status);
}

// The value of an unlabelled series in Prometheus text; -1 when absent.
double metricValue(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 &&
        line[name.size()] == ' ') {
      return std::stod(line.substr(name.size() + 1));
    }
  }
  return -1;
}

// ---- the objects the soak creates ---------------------------------------------------------

std::string nodeName(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "soak-node-%03d", i);
  return buf;
}

std::string rackOf(int node) {
  return "rack-" + std::to_string(node / 10);
}

json nodeObject(const std::string& name, const std::string& rack) {
  const json resources = {{"cpu", "16"}, {"memory", "64Gi"}, {"pods", "110"}};
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}, {"rack", rack}}}}},
      {"status",
       {{"capacity", resources},
        {"allocatable", resources},
        {"conditions", {{{"type", "Ready"}, {"status", "True"}, {"reason", "KubeletReady"}}}}}}};
}

// Two k80s for every p100. Devices are spread evenly over the nodes; every fourth is
// reachable from a whole rack by node label, the others from their node by name, so both
// kinds of affinity are exercised.
std::string deviceType(int d) {
  return d % 3 == 2 ? "p100" : "k80";
}

json deviceObject(int d, int devices, int nodes) {
  const int node = static_cast<int>(static_cast<int64_t>(d) * nodes / devices);
  json term =
      d % 4 == 3
          ? json{{"matchExpressions",
                  {{{"key", "rack"}, {"operator", "In"}, {"values", {rackOf(node)}}}}}}
          : json{{"matchFields",
                  {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {nodeName(node)}}}}}};
  char name[32];
  std::snprintf(name, sizeof name, "soak-dev-%03d", d);
  return {{"apiVersion", kApiVersion},
          {"kind", "ExtendedResource"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"rawResourceName", kResource},
            {"deviceID", "GPU-" + std::to_string(d)},
            {"properties", {{"type", deviceType(d)}}},
            {"nodeAffinity", {{"required", {{"nodeSelectorTerms", {term}}}}}}}}};
}

json claimSpec(const std::string& type) {
  return {{"rawResourceName", kResource},
          {"extendedResourceNum", 1},
          {"metadataRequirements", {{"matchLabels", {{"type", type}}}}}};
}

json claimObject(const std::string& name, const std::string& type, bool shareable = false) {
  json spec = claimSpec(type);
  if (shareable) {
    spec["shareable"] = true;
  }
  return {{"apiVersion", kApiVersion},
          {"kind", "ExtendedResourceClaim"},
          {"metadata", {{"name", name}, {"namespace", kNamespace}}},
          {"spec", std::move(spec)}};
}

// Besides plain pods (a claim of their own, named like the pod), some pods name a claim
// template (the controller makes their claim; they wait until then) and a few name one of the
// shareable claims, which several of them hold at once on its node. The kind is a label on the
// pod, so the churn and the checks tell them apart.
enum class PodKind { kPlain, kTemplate, kShared };
constexpr const char* kKindLabel = "soak-kind";
constexpr const char* kTemplateEntry = "gpu";
constexpr int kSharedClaims = 2;  // of type k80

const char* kindName(PodKind k) {
  switch (k) {
    case PodKind::kPlain:
      return "plain";
    case PodKind::kTemplate:
      return "template";
    case PodKind::kShared:
      return "shared";
  }
  return "plain";
}

PodKind kindOf(const ObjectMeta& meta) {
  const auto it = meta.labels.find(kKindLabel);
  if (it == meta.labels.end()) {
    return PodKind::kPlain;
  }
  return it->second == "template" ? PodKind::kTemplate
         : it->second == "shared" ? PodKind::kShared
                                  : PodKind::kPlain;
}

std::string templateName(const std::string& type) {
  return "soak-" + type;
}
std::string sharedClaimName(int i) {
  return "shared-" + std::to_string(i);
}

json templateObject(const std::string& type) {
  return {{"apiVersion", kApiVersion},
          {"kind", "ExtendedResourceClaimTemplate"},
          {"metadata", {{"name", templateName(type)}, {"namespace", kNamespace}}},
          {"spec", {{"spec", claimSpec(type)}}}};
}

// `claim` is the claim the pod names, or the template for kind kTemplate.
json podObject(const std::string& name, const std::string& priorityClass, PodKind kind,
               const std::string& claim) {
  const json annotations =
      kind == PodKind::kTemplate
          ? json{{kClaimTemplatesAnnotation, std::string(kTemplateEntry) + "=" + claim}}
          : json{{kClaimsAnnotation, claim}};
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", kNamespace},
            {"labels", {{kKindLabel, kindName(kind)}}},
            {"annotations", annotations}}},
          {"spec",
           {{"schedulerName", kProfile},
            {"priorityClassName", priorityClass},
            {"terminationGracePeriodSeconds", 0},
            {"containers",
             {{{"name", "app"},
               {"image", "registry.k8s.io/pause:3.10"},
               {"resources", {{"requests", {{"cpu", "10m"}}}}}}}}}}};
}

struct Allocated {
  std::string claim;
  std::string device;
};

// The claims and device names in an allocation annotation's value; nullopt when it is not one.
std::optional<std::vector<Allocated>> allocatedDevices(const std::string& annotation) {
  const json allocation = json::parse(annotation, nullptr, false);
  if (!allocation.is_object()) {
    return std::nullopt;
  }
  std::vector<Allocated> out;
  for (const auto& [claim, devices] : allocation.items()) {
    if (!devices.is_array()) {
      return std::nullopt;
    }
    for (const auto& d : devices) {
      if (!d.is_object() || !d.contains("name") || !d["name"].is_string()) {
        return std::nullopt;
      }
      out.push_back({claim, d["name"]});
    }
  }
  return out;
}

// ---- configuration ------------------------------------------------------------------------

struct Options {
  std::string controlplaneDir;
  std::string launcher;
  std::string buildDir;
  std::string workDir;
  double seconds = 300;
  int nodes = 300;
  int devices = 150;
  int pods = 0;  // 0: 1.5 x devices
  double deleteRate = 3;
  double createRate = 20;
  double faultInterval = 0;  // 0: seconds / (fault kinds + 1), within 10..30 s
  int checkpointEvery = 3;
  std::chrono::milliseconds orphanGrace = 10s;
  std::chrono::milliseconds settleTimeout = 120s;
  uint64_t seed = 0;
};

enum class Fault {
  kExtenderKillMidBind,
  kControllerLeaderKill,
  kApiserverRestart,
  kWatchCut,
  kConflictInjection,
  kExtenderPause,
};
constexpr Fault kFaultOrder[] = {Fault::kExtenderKillMidBind, Fault::kControllerLeaderKill,
                                 Fault::kApiserverRestart,    Fault::kWatchCut,
                                 Fault::kConflictInjection,   Fault::kExtenderPause};

const char* faultName(Fault f) {
  switch (f) {
    case Fault::kExtenderKillMidBind:
      return "extender-kill-mid-bind";
    case Fault::kControllerLeaderKill:
      return "controller-leader-kill";
    case Fault::kApiserverRestart:
      return "apiserver-restart";
    case Fault::kWatchCut:
      return "watch-cut";
    case Fault::kConflictInjection:
      return "conflict-injection";
    case Fault::kExtenderPause:
      return "extender-pause";
  }
  return "?";
}

// A state the soak cannot get past (a component that does not come back): the run ends there
// and fails.
struct Stuck : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Extender {
  std::string name;
  int port = 0;
  int healthPort = 0;
  std::unique_ptr<ChildProcess> proc;
  bool wanted = false;    // supervision restarts it when it is not running
  Series counted;         // of the current run, as last scraped
  std::string scheduler;  // the kube-scheduler instance calling it
};

struct Controller {
  std::string name;
  int metricsPort = 0;
  std::unique_ptr<ChildProcess> proc;
  bool wanted = false;
  Series counted;
  Clock::time_point lastStart;
};

// What a settled cluster is checked for; every entry is a violation once settling is over.
struct Verdict {
  std::vector<std::string> problems;
  size_t bound = 0;
  size_t pending = 0;
  size_t mostSharedHolders = 0;  // on one shared claim
  std::map<std::string, int> freeByType;
};

class Soak {
 public:
  explicit Soak(Options o);
  int run();

 private:
  // setup
  void createObjects();
  void startExtender(Extender& e, const std::map<std::string, std::string>& env = {});
  void stopExtender(Extender& e, bool hard);
  void startController(Controller& c);
  void startScheduler(const Extender& e);
  std::string replicaKubeconfig(const std::string& serviceAccount, const std::string& name);
  // churn
  void creatorLoop(uint64_t seed);
  void deleterLoop(uint64_t seed);
  void monitorLoop();
  void createPod(std::mt19937_64& rng);
  std::vector<std::string> deletePod(const Pod& pod, bool withClaim);
  std::vector<std::string> deleteBoundPods(size_t n);
  std::string awaitReleases(const std::vector<std::string>& devices, Clock::time_point since);
  std::string probeNodeCaches(Clock::time_point since);
  void noteApiError(const std::exception& e);
  void note(const std::string& line);
  void deviceChanged(const ExtendedResource& d);
  void pauseChurn();
  void resumeChurn();
  double churnSeconds() const;
  // faults
  void inject(Fault f, size_t round);
  int leaderIndex();
  void scrapeCounters();
  void endRun(Series& counted);
  // checks
  Verdict evaluate();
  void checkpoint(bool final);
  void collectReleasedClaims();
  void supervise();
  // `key` identifies the problem across samples (default: the text), so it is reported once.
  void violation(const std::string& text, const std::string& key = {});
  void reportReleases(std::ostream& r) const;
  int report();

  Options o_;
  std::map<std::string, std::string> env_;
  std::unique_ptr<KubeClient> api_;    // churn
  std::unique_ptr<KubeClient> check_;  // checks and the safety monitor
  std::unique_ptr<TcpProxy> proxy_;
  std::unique_ptr<Informer<Pod>> pods_;
  std::unique_ptr<Informer<ExtendedResource>> devices_;
  Extender extenders_[2];
  Controller controllers_[2];
  std::string launchLog_;

  std::atomic<bool> stopChurn_{false};
  std::atomic<bool> churnPaused_{false};
  std::atomic<int> inFlight_{0};
  std::atomic<uint64_t> nextPod_{0};
  Clock::time_point churnStart_;
  Clock::duration pausedFor_{};
  Clock::time_point pausedAt_;

  std::atomic<uint64_t> podsCreated_{0};
  std::atomic<uint64_t> podsDeleted_{0};
  std::atomic<uint64_t> boundDeleted_{0};
  std::atomic<uint64_t> claimsDeletedWithPod_{0};
  std::atomic<uint64_t> claimsCollected_{0};
  std::atomic<uint64_t> generatedCollected_{0};  // of claimsCollected_
  std::atomic<uint64_t> templatePodsCreated_{0};
  std::atomic<uint64_t> sharedPodsCreated_{0};
  std::atomic<uint64_t> safetySamples_{0};
  Series totals_;  // counters of the component runs that ended
  Clock::time_point lastScrape_;

  mutable std::mutex mu_;
  std::set<std::string> scheduledUids_;
  std::set<std::string> sharedClaims_;  // names; fixed before the churn starts
  // Most pods are of the low class; a few of the high one preempt them for devices when none
  // is free, so victims' devices and nominations are part of the churn the invariants check.
  // Names; fixed before the churn starts.
  std::string lowPriorityClass_;
  std::string highPriorityClass_;
  std::set<std::string> scheduledTemplateUids_;
  std::set<std::string> scheduledSharedUids_;  // holders that joined a shared claim
  size_t mostSharedHolders_ = 0;               // seen on one shared claim at a checkpoint
  std::map<std::string, uint64_t> apiErrors_;
  std::set<std::string> violationKeys_;
  std::vector<std::string> violations_;
  std::map<Fault, std::vector<std::string>> faults_;
  std::vector<std::string> checkpoints_;
  std::map<std::string, uint64_t> exits_;
  std::vector<std::string> findings_;  // notable but not violations of the contract
  std::string stuck_;
  std::ofstream churnLog_;
  // Devices held by pods the churn deleted, until the devices informer shows them released.
  struct Held {
    std::string pod;
    std::string claim;
    Clock::time_point since;
    double at;  // soak time of the deletion
  };
  std::map<std::string, Held> awaitingRelease_;
  struct Release {
    double seconds;
    double at;
    std::string device;
    std::string pod;
  };
  std::vector<Release> releases_;
  std::vector<std::pair<double, Fault>> faultTimes_;  // soak time it began, kind
};

Soak::Soak(Options o) : o_(std::move(o)) {
  env_ = readEnvFile(o_.controlplaneDir + "/env");
  launchLog_ = o_.workDir + "/launch.log";
  churnLog_.open(o_.workDir + "/churn.log");
  KubeClientOptions opts;
  opts.requestTimeout = 15s;
  opts.userAgent = "ker-soak";
  api_ = std::make_unique<KubeClient>(KubeConfig::fromKubeconfigFile(env_.at("KUBECONFIG")), opts);
  check_ =
      std::make_unique<KubeClient>(KubeConfig::fromKubeconfigFile(env_.at("KUBECONFIG")), opts);
  if (o_.pods == 0) {
    o_.pods = o_.devices * 3 / 2;
  }
  if (o_.faultInterval <= 0) {
    o_.faultInterval = std::clamp(o_.seconds / (std::size(kFaultOrder) + 1), 10.0, 30.0);
  }
  const char* letters[] = {"a", "b"};
  for (int i = 0; i < 2; ++i) {
    Extender& e = extenders_[i];
    e.name = std::string("extender-") + letters[i];
    e.scheduler = std::string("soak-") + letters[i];
    e.port = freePort();
    e.healthPort = freePort();
    controllers_[i].name = "controller-" + std::to_string(i + 1);
    controllers_[i].metricsPort = freePort();
  }
}

void Soak::violation(const std::string& text, const std::string& key) {
  std::lock_guard lock(mu_);
  if (violationKeys_.insert(key.empty() ? text : key).second) {
    violations_.push_back(text);
    say("VIOLATION: " + text);
  }
}

void Soak::noteApiError(const std::exception& e) {
  const auto* api = dynamic_cast<const ApiError*>(&e);
  std::lock_guard lock(mu_);
  ++apiErrors_[api != nullptr ? toString(api->kind()) : "other"];
}

// One line per churn action, with the soak time, for reading alongside the components' logs.
void Soak::note(const std::string& line) {
  std::lock_guard lock(mu_);
  churnLog_ << fixed(secondsSince(gStart), 3) << " " << line << "\n";
}

void Soak::deviceChanged(const ExtendedResource& d) {
  std::lock_guard lock(mu_);
  auto it = awaitingRelease_.find(d.meta.name);
  if (it == awaitingRelease_.end() ||
      (d.phase == DevicePhase::kBound && d.claimRef && d.claimRef->ns == kNamespace &&
       d.claimRef->name == it->second.claim)) {
    return;
  }
  releases_.push_back({secondsSince(it->second.since), it->second.at, d.meta.name, it->second.pod});
  awaitingRelease_.erase(it);
}

// ---- setup --------------------------------------------------------------------------------

void Soak::createObjects() {
  try {
    api_->create(
        resources::kNamespaces, "",
        {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kNamespace}}}});
  } catch (const ApiError& e) {
    if (!e.isAlreadyExists()) {
      throw;
    }
  }
  // A few writers at once: a few hundred sequential creates would dominate a short run.
  auto parallel = [](int count, const std::function<void(int)>& fn) {
    std::atomic<int> next{0};
    std::exception_ptr failure;
    std::mutex failureMu;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int i = next++; i < count; i = next++) {
          try {
            fn(i);
          } catch (...) {
            std::lock_guard lock(failureMu);
            failure = std::current_exception();
          }
        }
      });
    }
    for (auto& t : threads) {
      t.join();
    }
    if (failure) {
      std::rethrow_exception(failure);
    }
  };
  // Never removed: the control plane is thrown away after the soak.
  itest::PriorityClasses priorityClasses(*api_);
  lowPriorityClass_ = priorityClasses.create(10);
  highPriorityClass_ = priorityClasses.create(1000);
  auto createOnce = [&](const Resource& r, const json& obj) {
    try {
      api_->create(r, kNamespace, obj);
    } catch (const ApiError& e) {
      if (!e.isAlreadyExists()) {
        throw;
      }
    }
  };
  for (const char* type : {"k80", "p100"}) {
    createOnce(resources::kExtendedResourceClaimTemplates, templateObject(type));
  }
  for (int i = 0; i < kSharedClaims; ++i) {
    createOnce(resources::kExtendedResourceClaims, claimObject(sharedClaimName(i), "k80", true));
    sharedClaims_.insert(sharedClaimName(i));
  }
  parallel(o_.nodes,
           [&](int i) { api_->create(resources::kNodes, "", nodeObject(nodeName(i), rackOf(i))); });
  parallel(o_.devices, [&](int d) {
    api_->create(resources::kExtendedResources, "", deviceObject(d, o_.devices, o_.nodes));
  });
}

// A kubeconfig for one replica: a token of its own (the audit log tells replicas apart by the
// token's credential ID) and the proxy as the server.
std::string Soak::replicaKubeconfig(const std::string& serviceAccount, const std::string& name) {
  const std::string file = o_.workDir + "/" + name + "-sa.kubeconfig";
  if (runCommand(
          {o_.launcher, "sa-kubeconfig", o_.controlplaneDir, "kube-system", serviceAccount, file},
          launchLog_) != 0) {
    throw std::runtime_error("no token for serviceaccount kube-system/" + serviceAccount);
  }
  std::string text = readFile(file);
  const std::string from = env_.at("APISERVER_URL");
  const std::string to = "https://127.0.0.1:" + std::to_string(proxy_->port());
  auto pos = text.find(from);
  if (pos == std::string::npos) {
    throw std::runtime_error(file + " does not name " + from);
  }
  text.replace(pos, from.size(), to);
  const std::string out = o_.workDir + "/" + name + ".kubeconfig";
  std::ofstream(out) << text;
  return out;
}

void Soak::startExtender(Extender& e, const std::map<std::string, std::string>& env) {
  if (!e.proc) {
    e.proc = std::make_unique<ChildProcess>(
        o_.buildDir + "/scheduler/extended-resource-scheduler",
        // --v=4 logs why each bind attempt was retried: the story of a race, when one goes wrong.
        std::vector<std::string>{
            "--kubeconfig=" + replicaKubeconfig("extended-resource-scheduler-extender", e.name),
            "--bind-address=127.0.0.1", "--port=" + std::to_string(e.port),
            "--health-bind-address=127.0.0.1", "--health-port=" + std::to_string(e.healthPort),
            // The soak's control plane has no allocation policy.
            "--admission-policy=", "--v=4"},
        o_.workDir + "/" + e.name + ".log", kComponent);
  }
  // A port still held by the killed run, or an informer that cannot sync while the API server
  // restarts, fails an attempt; a few attempts ride that out.
  for (int attempt = 1; attempt <= 3 && !interrupted(); ++attempt) {
    e.proc->start(env);
    const auto deadline = Clock::now() + 60s;
    while (Clock::now() < deadline && e.proc->running() && !ready(e.healthPort)) {
      sleepFor(100ms);
    }
    if (e.proc->running() && ready(e.healthPort)) {
      e.wanted = true;
      return;
    }
    say(e.name + " not ready (attempt " + std::to_string(attempt) + "); log tail:\n" +
        e.proc->logTail(1500));
    e.proc->kill();
    sleepFor(1s);
  }
  throw Stuck(e.name + " did not become ready in 3 attempts");
}

// Counters are scraped every couple of seconds and before a component is stopped on purpose,
// so a run that ends by a kill or a crash loses at most the last seconds of its counts.
void Soak::scrapeCounters() {
  for (auto& e : extenders_) {
    if (auto text = e.wanted ? scrape(e.healthPort) : std::nullopt) {
      e.counted = seriesOf(*text, kExtenderCounters);
    }
  }
  for (auto& c : controllers_) {
    if (auto text = c.wanted ? scrape(c.metricsPort) : std::nullopt) {
      c.counted = seriesOf(*text, kControllerCounters);
    }
  }
  lastScrape_ = Clock::now();
}

void Soak::endRun(Series& counted) {
  for (const auto& [k, v] : counted) {
    totals_[k] += v;
  }
  counted.clear();
}

void Soak::stopExtender(Extender& e, bool hard) {
  if (hard) {
    e.proc->kill();
  } else {
    scrapeCounters();
    e.proc->stop();
  }
  e.wanted = false;
  endRun(e.counted);
}

void Soak::startController(Controller& c) {
  if (!c.proc) {
    c.proc = std::make_unique<ChildProcess>(
        o_.buildDir + "/controller/extended-resource-controller",
        std::vector<std::string>{
            "--kubeconfig=" + replicaKubeconfig("extended-resource-controller", c.name),
            "--metrics-bind-address=127.0.0.1:" + std::to_string(c.metricsPort),
            "--orphan-grace-period=" + formatDuration(o_.orphanGrace),
            // Short lease timings make a hand-over take seconds, so several fit in a run.
            "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s",
            "--leader-elect-retry-period=500ms", "--admission-policy=", "--v=2"},
        o_.workDir + "/" + c.name + ".log", kComponent);
  }
  c.proc->start();
  c.wanted = true;
  c.lastStart = Clock::now();
}

void Soak::startScheduler(const Extender& e) {
  const int rc = runCommand(
      {o_.launcher, "start-scheduler", o_.controlplaneDir, "--name", e.scheduler,
       "--scheduler-name", kProfile, "--extender-url", "http://127.0.0.1:" + std::to_string(e.port),
       "--node-cache-capable", "true", "--timeout", "120"},
      launchLog_);
  if (rc != 0) {
    throw Stuck("kube-scheduler " + e.scheduler + " did not start (see " + launchLog_ + ")");
  }
  env_ = readEnvFile(o_.controlplaneDir + "/env");
}

// ---- churn --------------------------------------------------------------------------------

double Soak::churnSeconds() const {
  auto paused = pausedFor_;
  if (churnPaused_) {
    paused += Clock::now() - pausedAt_;
  }
  return std::chrono::duration<double>(Clock::now() - churnStart_ - paused).count();
}

void Soak::pauseChurn() {
  pausedAt_ = Clock::now();
  churnPaused_ = true;
  while (inFlight_.load() > 0) {
    std::this_thread::sleep_for(20ms);
  }
}

void Soak::resumeChurn() {
  pausedFor_ += Clock::now() - pausedAt_;
  churnPaused_ = false;
}

// Most pods have a claim of their own, named like them, for one device of a random type; one
// in five names a template instead, one in ten one of the shared claims (a k80).
void Soak::createPod(std::mt19937_64& rng) {
  const std::string name = "p-" + std::to_string(++nextPod_);
  std::string type = std::uniform_int_distribution<int>(0, 2)(rng) == 2 ? "p100" : "k80";
  const bool high = std::uniform_int_distribution<int>(0, 7)(rng) == 0;
  const int mix = std::uniform_int_distribution<int>(0, 9)(rng);
  const PodKind kind = mix < 2 ? PodKind::kTemplate : mix == 2 ? PodKind::kShared : PodKind::kPlain;
  std::string claim = name;
  if (kind == PodKind::kTemplate) {
    claim = templateName(type);
  } else if (kind == PodKind::kShared) {
    type = "k80";
    claim = sharedClaimName(std::uniform_int_distribution<int>(0, kSharedClaims - 1)(rng));
  }
  try {
    if (kind == PodKind::kPlain) {
      api_->create(resources::kExtendedResourceClaims, kNamespace, claimObject(name, type));
    }
    api_->create(resources::kPods, kNamespace,
                 podObject(name, high ? highPriorityClass_ : lowPriorityClass_, kind, claim));
    ++podsCreated_;
    if (kind == PodKind::kTemplate) {
      ++templatePodsCreated_;
    } else if (kind == PodKind::kShared) {
      ++sharedPodsCreated_;
    }
    note("create " + name + " " + type + " " + kindName(kind) + " " + claim +
         (high ? " high" : ""));
  } catch (const std::exception& e) {
    note("create " + name + " failed: " + e.what());
    // A claim left without its pod is collected at the next checkpoint.
    noteApiError(e);
    sleepFor(500ms);
  }
}

// The devices a bound pod holds start waiting for their release before the delete is sent:
// the controller may free them before the delete call even returns. Returns them once the pod
// is deleted. A shared claim's devices stay while other holders remain, so they are not
// awaited; only a plain pod's claim is deleted with it (generated ones go at checkpoints).
std::vector<std::string> Soak::deletePod(const Pod& pod, bool withClaim) {
  const PodKind kind = kindOf(pod.meta);
  withClaim = withClaim && kind == PodKind::kPlain;
  std::vector<std::string> held;
  if (auto a = pod.meta.annotations.find(kAllocationAnnotation);
      a != pod.meta.annotations.end() && !pod.nodeName.empty() && kind != PodKind::kShared) {
    std::lock_guard lock(mu_);
    for (const auto& [claim, device] :
         allocatedDevices(a->second).value_or(std::vector<Allocated>{})) {
      held.push_back(device);
      awaitingRelease_[device] = {pod.meta.name, claim, Clock::now(), secondsSince(gStart)};
    }
  }
  bool deleted = false;
  try {
    api_->remove(resources::kPods, kNamespace, pod.meta.name,
                 DeleteOptions{.preconditionUid = pod.meta.uid, .gracePeriodSeconds = 0});
    deleted = true;
    ++podsDeleted_;
    if (!pod.nodeName.empty()) {
      ++boundDeleted_;
    }
    if (withClaim) {
      api_->remove(resources::kExtendedResourceClaims, kNamespace, pod.meta.name);
      ++claimsDeletedWithPod_;
    }
  } catch (const ApiError& e) {
    if (!e.isNotFound()) {
      noteApiError(e);
      sleepFor(500ms);
    }
  } catch (const std::exception& e) {
    noteApiError(e);
  }
  note("delete " + pod.meta.name + " uid " + pod.meta.uid +
       (pod.nodeName.empty() ? " pending" : " on " + pod.nodeName) +
       (held.empty() ? "" : " holding " + held.front()) +
       (deleted ? (withClaim ? ", claim deleted too" : ", claim kept") : ": failed"));
  if (!deleted) {
    std::lock_guard lock(mu_);
    for (const auto& d : held) {
      awaitingRelease_.erase(d);
    }
    held.clear();
  }
  return held;
}

// Each action is paced from its start, so the API calls' own time counts toward the pace.
void Soak::creatorLoop(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto pace = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(1.0 / o_.createRate));
  while (!stopChurn_ && !interrupted()) {
    const auto started = Clock::now();
    ++inFlight_;
    if (churnPaused_ || pods_->size() >= static_cast<size_t>(o_.pods)) {
      --inFlight_;
      sleepFor(100ms);
      continue;
    }
    createPod(rng);
    --inFlight_;
    sleepFor(started + pace - Clock::now());
  }
}

// Deletes pods at the configured rate, mostly bound ones so devices keep changing hands. A
// third of the claims go with their pod (the controller frees their devices); the others stay,
// so checkpoints can see they were released.
void Soak::deleterLoop(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto pace = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(1.0 / o_.deleteRate));
  auto last = Clock::now();
  while (!stopChurn_ && !interrupted()) {
    sleepFor(last + pace - Clock::now());
    last = Clock::now();
    ++inFlight_;
    if (churnPaused_ || stopChurn_) {
      --inFlight_;
      continue;
    }
    std::vector<Informer<Pod>::Ptr> all, bound;
    for (const auto& p : pods_->list()) {
      if (!p->meta.deleting) {
        all.push_back(p);
        if (!p->nodeName.empty()) {
          bound.push_back(p);
        }
      }
    }
    const bool pickBound = !bound.empty() && std::uniform_int_distribution<int>(0, 4)(rng) != 0;
    const auto& from = pickBound ? bound : all;
    if (!from.empty()) {
      const auto& victim = from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
      deletePod(*victim, std::uniform_int_distribution<int>(0, 2)(rng) == 0);
    }
    --inFlight_;
  }
}

// Frees devices now, so binds are in flight a moment later: deletes up to n bound pods.
std::vector<std::string> Soak::deleteBoundPods(size_t n) {
  std::vector<std::string> devices;
  size_t done = 0;
  for (const auto& p : pods_->list()) {
    if (done == n) {
      break;
    }
    if (!p->nodeName.empty() && !p->meta.deleting && kindOf(p->meta) != PodKind::kShared) {
      auto held = deletePod(*p, false);
      devices.insert(devices.end(), held.begin(), held.end());
      ++done;
    }
  }
  return devices;
}

// Waits until the devices are released, up to 30s after `since`, when their pods were deleted;
// says how long that took. A probe of how fast the controller acts right after a fault.
std::string Soak::awaitReleases(const std::vector<std::string>& devices, Clock::time_point since) {
  size_t left = devices.size();
  while (left > 0 && secondsSince(since) < 30 && sleepFor(20ms)) {
    std::lock_guard lock(mu_);
    left = static_cast<size_t>(std::count_if(devices.begin(), devices.end(), [&](const auto& d) {
      return awaitingRelease_.count(d) > 0;
    }));
  }
  const std::string n = std::to_string(devices.size());
  return left == 0 ? "the " + n + " devices of pods deleted right after were released within " +
                         fixed(secondsSince(since), 2) + "s"
                   : std::to_string(left) + " of the " + n +
                         " devices of pods deleted right after were not released within 30s";
}

// The safety property that must hold at every instant, not only when the cluster is quiet: no
// device is handed to two live pods. Each sample is one consistent list, so two pods in it
// naming the same device in their allocation annotations did hold it at the same time.
void Soak::monitorLoop() {
  while (!stopChurn_ && !interrupted()) {
    try {
      const auto list = check_->listAll(resources::kPods, kNamespace, {});
      struct Holder {
        std::string pod;
        std::string claim;
      };
      std::map<std::string, Holder> holder;  // device -> the first pod seen naming it
      for (const auto& item : list.items) {
        const std::string name = item["metadata"]["name"];
        if (item["spec"].value("nodeName", "").empty()) {
          continue;
        }
        const json annotations = item["metadata"].value("annotations", json::object());
        if (!annotations.contains(kAllocationAnnotation)) {
          violation("pod " + name + " is bound without an allocation annotation");
          continue;
        }
        const auto devices =
            allocatedDevices(annotations[kAllocationAnnotation].get<std::string>());
        if (!devices) {
          violation("pod " + name + " has a garbled allocation annotation");
          continue;
        }
        for (const auto& [claim, device] : *devices) {
          auto [it, fresh] = holder.emplace(device, Holder{name, claim});
          // The holders of one shared claim all name its devices.
          const bool sameSharedClaim = it->second.claim == claim && sharedClaims_.count(claim);
          if (!fresh && !sameSharedClaim) {
            violation("device " + device + " is allocated to live pods " + it->second.pod +
                          " and " + name + " at once (first seen in the list at resourceVersion " +
                          list.resourceVersion + ")",
                      "shared " + device + " " + it->second.pod + " " + name);
          }
        }
      }
      ++safetySamples_;
    } catch (const std::exception&) {
      // The API server may be restarting; the next sample will tell.
    }
    sleepFor(2s);
  }
}

// How long each extender's node cache takes to show a node created right after `since`: the
// time its watch takes to come back after a cut. Nothing else creates nodes, so the count is
// exact; the probe node is deleted afterwards.
std::string Soak::probeNodeCaches(Clock::time_point since) {
  const std::string name = "soak-probe-" + std::to_string(faultTimes_.size());
  try {
    api_->create(resources::kNodes, "", nodeObject(name, "probe"));
  } catch (const std::exception& e) {
    return std::string("no probe node: ") + e.what();
  }
  double seen[2] = {-1, -1};
  while (secondsSince(since) < 60 && (seen[0] < 0 || seen[1] < 0) && sleepFor(50ms)) {
    for (int i = 0; i < 2; ++i) {
      auto text = seen[i] < 0 ? scrape(extenders_[i].healthPort) : std::nullopt;
      if (text && metricValue(*text, "extended_resource_scheduler_cached_nodes") > o_.nodes) {
        seen[i] = secondsSince(since);
      }
    }
  }
  try {
    api_->remove(resources::kNodes, "", name);
  } catch (const std::exception& e) {
    noteApiError(e);
  }
  std::string out = "a node created right after showed in the node cache of";
  for (int i = 0; i < 2; ++i) {
    out += std::string(i == 0 ? " " : ", ") + extenders_[i].name +
           (seen[i] < 0 ? " not within 60s" : " after " + fixed(seen[i], 2) + "s");
    if (seen[i] < 0 || seen[i] > 5) {
      std::lock_guard lock(mu_);
      findings_.push_back(extenders_[i].name + "'s watches took " +
                          (seen[i] < 0 ? "over 60s" : fixed(seen[i], 1) + "s") +
                          " to resume after a cut (node cache probe)");
    }
  }
  return out;
}

// ---- faults -------------------------------------------------------------------------------

// Index of the controller whose metrics say it leads; -1 when none does.
int Soak::leaderIndex() {
  for (int i = 0; i < 2; ++i) {
    if (auto text = scrape(controllers_[i].metricsPort);
        text && metricValue(*text, "extended_resource_controller_leader") == 1) {
      return i;
    }
  }
  return -1;
}

void Soak::inject(Fault f, size_t round) {
  // Each kind of fault takes the two extenders in turn.
  Extender& ext = extenders_[faults_[f].size() % 2];
  std::string detail;
  const auto t0 = Clock::now();
  say("fault " + std::to_string(round + 1) + ": " + faultName(f));
  note(std::string("fault ") + faultName(f));
  {
    std::lock_guard lock(mu_);
    faultTimes_.emplace_back(secondsSince(gStart), f);
  }
  switch (f) {
    case Fault::kExtenderKillMidBind: {
      // Devices freed now are re-allocated within a second or so; the kill lands while the
      // extender holds reservations, i.e. between its first write and its last.
      deleteBoundPods(6);
      double reserved = 0;
      const auto deadline = Clock::now() + 15s;
      while (Clock::now() < deadline && !interrupted()) {
        if (auto text = scrape(ext.healthPort)) {
          ext.counted = seriesOf(*text, kExtenderCounters);
          reserved = metricValue(*text, "extended_resource_scheduler_reserved_devices");
          if (reserved > 0) {
            break;
          }
        }
        std::this_thread::sleep_for(5ms);
      }
      stopExtender(ext, true);
      const auto killed = Clock::now();
      startExtender(ext);
      detail = ext.name + " SIGKILLed " +
               (reserved > 0 ? "mid-bind (" + fixed(reserved, 0) + " devices reserved)"
                             : std::string("with no bind seen in flight within 15s")) +
               ", ready again after " + fixed(secondsSince(killed)) + "s";
      break;
    }
    case Fault::kControllerLeaderKill: {
      int leader = -1;
      const auto deadline = Clock::now() + 30s;
      while ((leader = leaderIndex()) < 0 && Clock::now() < deadline && sleepFor(200ms)) {
        supervise();
      }
      if (leader < 0) {
        violation("no controller replica leads (30s before the leader-kill fault)");
        detail = "no leader to kill";
        break;
      }
      Controller& dead = controllers_[leader];
      scrapeCounters();
      dead.wanted = false;
      dead.proc->kill();
      endRun(dead.counted);
      const auto killed = Clock::now();
      const auto devices = deleteBoundPods(3);
      bool tookOver = false;
      while (secondsSince(killed) < 30 && sleepFor(100ms)) {
        if (leaderIndex() == 1 - leader) {
          tookOver = true;
          break;
        }
      }
      const double took = secondsSince(killed);
      const std::string released = awaitReleases(devices, killed);
      startController(dead);
      if (!tookOver) {
        violation("controller " + controllers_[1 - leader].name +
                  " did not take over within 30s of the leader's SIGKILL");
      }
      detail = dead.name + " (leader) SIGKILLed; " + controllers_[1 - leader].name +
               (tookOver ? " leads after " + fixed(took) + "s" : " never took over") + "; " +
               released;
      break;
    }
    case Fault::kApiserverRestart: {
      const int rc = runCommand(
          {o_.launcher, "restart-apiserver", o_.controlplaneDir, "--timeout", "120"}, launchLog_);
      if (rc != 0) {
        throw Stuck("kube-apiserver did not come back (see " + launchLog_ + ")");
      }
      detail = "kube-apiserver down and back in " + fixed(secondsSince(t0)) + "s";
      break;
    }
    case Fault::kWatchCut: {
      const uint64_t before = proxy_->accepted();
      const size_t cut = proxy_->cutAll();
      const auto cutAt = Clock::now();
      const std::string released = awaitReleases(deleteBoundPods(3), cutAt);
      const std::string caches = probeNodeCaches(cutAt);
      detail = std::to_string(cut) + " connections of the extenders and controllers cut, " +
               std::to_string(proxy_->accepted() - before) + " new ones since; " + released + "; " +
               caches;
      break;
    }
    case Fault::kConflictInjection: {
      stopExtender(ext, false);
      startExtender(ext, {{kFailpointEnv, std::to_string(kFailpointWrites)}});
      deleteBoundPods(6);
      detail =
          ext.name + " restarted with " + kFailpointEnv + "=" + std::to_string(kFailpointWrites);
      break;
    }
    case Fault::kExtenderPause: {
      deleteBoundPods(6);
      std::this_thread::sleep_for(300ms);
      ext.proc->signal(SIGSTOP);
      sleepFor(kPauseLength);
      ext.proc->signal(SIGCONT);
      detail = ext.name + " SIGSTOPped for " +
               fixed(std::chrono::duration<double>(kPauseLength).count(), 0) + "s";
      break;
    }
  }
  say("  " + detail);
  std::lock_guard lock(mu_);
  faults_[f].push_back(detail);
}

// ---- supervision and checks ---------------------------------------------------------------

// Restarts what died on its own, as a Deployment would, and says why it died. A controller
// that lost its lease (the API server was away longer than the renew deadline) exits 1 by
// design; any other exit of a component is a finding, a crash by signal a violation.
void Soak::supervise() {
  for (auto& e : extenders_) {
    if (e.wanted && !e.proc->running()) {
      const int status = e.proc->lastStatus().value_or(0);
      const std::string what = e.name + " exited on its own: " + describeStatus(status);
      if (WIFSIGNALED(status)) {
        violation(what);
      } else {
        std::lock_guard lock(mu_);
        findings_.push_back(what);
      }
      {
        std::lock_guard lock(mu_);
        ++exits_[e.name + " " + describeStatus(status)];
      }
      endRun(e.counted);
      startExtender(e);
    }
  }
  for (auto& c : controllers_) {
    if (c.wanted && !c.proc->running()) {
      if (secondsSince(c.lastStart) < 1) {
        continue;  // no restart loop faster than a second
      }
      const int status = c.proc->lastStatus().value_or(0);
      const bool lostLease = WIFEXITED(status) && WEXITSTATUS(status) == 1 &&
                             c.proc->logTail(3000).find("leadershipLost=true") != std::string::npos;
      const std::string why = lostLease ? "exit 1 (lost its lease)" : describeStatus(status);
      {
        std::lock_guard lock(mu_);
        ++exits_[c.name + " " + why];
        if (!lostLease && !WIFSIGNALED(status)) {
          findings_.push_back(c.name + " exited: " + why + "; last log lines:\n" +
                              c.proc->logTail(600));
        }
      }
      if (WIFSIGNALED(status)) {
        violation(c.name + " crashed: " + why);
      }
      endRun(c.counted);
      startController(c);
    }
  }
  for (const auto& e : extenders_) {
    std::string key = "SCHEDULER_" + e.scheduler;
    std::transform(key.begin(), key.end(), key.begin(),
                   [](char ch) { return ch == '-' ? '_' : static_cast<char>(std::toupper(ch)); });
    auto it = env_.find(key + "_PID");
    if (it != env_.end() && ::kill(std::stoi(it->second), 0) != 0) {
      {
        std::lock_guard lock(mu_);
        findings_.push_back("kube-scheduler " + e.scheduler + " exited; restarted");
      }
      runCommand({o_.launcher, "stop-scheduler", o_.controlplaneDir, "--name", e.scheduler},
                 launchLog_);
      startScheduler(e);
    }
  }
}

Verdict Soak::evaluate() {
  Verdict v;
  const std::string out = o_.workDir + "/checker.out";
  std::remove(out.c_str());
  const int rc = runCommand(
      {o_.buildDir + "/tools/ker-check-invariants", "--kubeconfig", env_.at("KUBECONFIG")}, out);
  std::istringstream checker(readFile(out));
  for (std::string line; std::getline(checker, line);) {
    if (line.rfind("VIOLATION: ", 0) == 0) {
      v.problems.push_back("invariant: " + line.substr(11));
    }
  }
  if (rc != 0 && v.problems.empty()) {
    v.problems.push_back("ker-check-invariants failed (exit " + std::to_string(rc) +
                         "): " + readFile(out));
  }
  try {
    std::map<std::string, ExtendedResourceClaim> claims;  // by namespace/name
    for (const auto& item :
         check_->listAll(resources::kExtendedResourceClaims, kNamespace, {}).items) {
      auto c = ExtendedResourceClaim::fromJson(item);
      claims.emplace(objectKey(c.meta.ns, c.meta.name), std::move(c));
    }
    // Available, or freed by its claim's release and not written Available yet.
    std::map<std::string, std::vector<std::string>> freeDevices;  // type -> names
    for (const auto& item : check_->listAll(resources::kExtendedResources, "", {}).items) {
      const auto d = ExtendedResource::fromJson(item);
      const auto named =
          namedAllocation(d, [&](const std::string& key) -> const ExtendedResourceClaim* {
            auto c = claims.find(key);
            return c == claims.end() ? nullptr : &c->second;
          });
      if ((d.phase == DevicePhase::kAvailable && !d.claimRef) ||
          (named && freedByClaim(d, *named))) {
        freeDevices[d.properties.count("type") ? d.properties.at("type") : ""].push_back(
            d.meta.name);
      }
    }
    for (const auto& [type, names] : freeDevices) {
      v.freeByType[type] = static_cast<int>(names.size());
    }
    const auto pods = check_->listAll(resources::kPods, kNamespace, {}).items;
    std::set<std::string> liveUids;
    for (const auto& item : pods) {
      liveUids.insert(item["metadata"].value("uid", ""));
    }
    for (const auto& [key, c] : claims) {
      if (c.phase != ClaimPhase::kBound) {
        continue;
      }
      const auto holders = c.holders();
      if (c.shareable) {
        v.mostSharedHolders = std::max(v.mostSharedHolders, holders.size());
      }
      for (const auto& h : holders) {
        if (!liveUids.count(h.uid)) {
          v.problems.push_back("claim " + key + " is still Bound to deleted pod " + h.name +
                               " (uid " + h.uid + "): not released");
        }
      }
    }
    for (const auto& item : pods) {
      const Pod p = Pod::fromJson(item);
      if (!p.nodeName.empty()) {
        ++v.bound;
        continue;
      }
      ++v.pending;
      if (!p.awaitingTemplates.empty()) {
        v.problems.push_back("pod " + p.meta.name +
                             " is Pending and its claim from template entry " +
                             p.awaitingTemplates.front() + " was not made");
        continue;
      }
      auto c =
          p.claims.empty() ? claims.end() : claims.find(objectKey(p.meta.ns, p.claims.front()));
      if (c == claims.end()) {
        v.problems.push_back("pod " + p.meta.name + " is Pending and its claim is gone");
        continue;
      }
      if (c->second.phase == ClaimPhase::kBound && c->second.shareable) {
        // A shared claim that holds its devices takes every pod naming it, on its node.
        v.problems.push_back("pod " + p.meta.name + " is Pending although its shared claim " +
                             c->first + " is Bound on node " + c->second.nodeName + " with " +
                             std::to_string(c->second.holders().size()) + " holders");
        continue;
      }
      const auto& want = c->second.metadataRequirements.matchLabels;
      const std::string type = want.count("type") ? want.at("type") : "";
      const auto& free = freeDevices[type];
      std::string reason;
      std::string message;
      for (const auto& cond : item.value("/status/conditions"_json_pointer, json::array())) {
        if (cond.value("type", "") == "PodScheduled") {
          reason = cond.value("reason", "");
          message = cond.value("message", "");
        }
      }
      const std::string said =
          reason.empty() ? "no PodScheduled condition" : reason + ": " + message.substr(0, 300);
      if (!free.empty()) {
        v.problems.push_back("pod " + p.meta.name + " (" + type + ") is Pending although " +
                             std::to_string(free.size()) + " " + type + " devices are free (" +
                             free.front() + ", ...); " + said);
      } else if (reason != "Unschedulable" ||
                 message.find("claim " + c->first + ": 0 of 1 free") == std::string::npos) {
        // It has to wait, and kube-scheduler must say why: the extender's no-free-device reason.
        v.problems.push_back("pod " + p.meta.name + " (" + type +
                             ") is Pending without the no-free-device reason; " + said);
      }
    }
  } catch (const std::exception& e) {
    v.problems.push_back(std::string("cannot list the cluster: ") + e.what());
  }
  return v;
}

// Claims whose pod is gone and which were released are of no further use; collecting them
// keeps the object count flat over a long run. That includes the claims made from templates:
// the soak's control plane runs no kube-controller-manager, so no garbage collector deletes
// them with their pod (their ownerReference); the soak does, once they are released. The
// shared claims stay for the whole run.
void Soak::collectReleasedClaims() {
  try {
    std::set<std::string> named;  // claims live pods name (or will: plain ones share its name)
    std::set<std::string> liveUids;
    for (const auto& item : check_->listAll(resources::kPods, kNamespace, {}).items) {
      const Pod p = Pod::fromJson(item);
      named.insert(p.meta.name);
      named.insert(p.claims.begin(), p.claims.end());
      liveUids.insert(p.meta.uid);
    }
    for (const auto& item :
         check_->listAll(resources::kExtendedResourceClaims, kNamespace, {}).items) {
      const auto c = ExtendedResourceClaim::fromJson(item);
      const auto owner = c.meta.labels.find(kPodUidLabel);
      const bool generated = owner != c.meta.labels.end();
      // A claim made but not yet recorded is known by its pod's UID label.
      if (named.count(c.meta.name) || (generated && liveUids.count(owner->second)) ||
          sharedClaims_.count(c.meta.name) || c.phase == ClaimPhase::kBound) {
        continue;
      }
      check_->remove(resources::kExtendedResourceClaims, kNamespace, c.meta.name);
      ++claimsCollected_;
      if (generated) {
        ++generatedCollected_;
      }
    }
  } catch (const std::exception& e) {
    noteApiError(e);
  }
}

// Stops the churn, lets the cluster settle and checks it. Transient states of binds and
// releases in flight are expected while settling; what is still wrong when the settle time is
// up is a violation (or the system is stuck, which is as bad).
void Soak::checkpoint(bool final) {
  const size_t n = checkpoints_.size() + 1;
  const double at = churnSeconds();
  say("checkpoint " + std::to_string(n) + (final ? " (final)" : "") + " at churn t=" + fixed(at) +
      "s: settling");
  if (!final) {
    pauseChurn();
  }
  const auto t0 = Clock::now();
  if (final) {
    // Half-written binds left by killed extenders are repaired only after the grace period.
    const auto graceEnd = t0 + o_.orphanGrace + 2s;
    while (Clock::now() < graceEnd && sleepFor(500ms)) {
      supervise();
    }
  }
  Verdict v;
  const auto deadline = t0 + o_.settleTimeout;
  while (true) {
    supervise();
    v = evaluate();
    if (v.problems.empty() || Clock::now() >= deadline || !sleepFor(2s)) {
      break;
    }
  }
  const double settled = secondsSince(t0);
  std::string line = "#" + std::to_string(n) + (final ? " final" : "") +
                     " at churn t=" + fixed(at) + "s: " + std::to_string(v.bound) +
                     " pods bound, " + std::to_string(v.pending) + " Pending, free devices k80 " +
                     std::to_string(v.freeByType["k80"]) + " p100 " +
                     std::to_string(v.freeByType["p100"]) + "; ";
  if (v.problems.empty()) {
    line += "clean after " + fixed(settled) + "s";
  } else {
    line += std::to_string(v.problems.size()) + " problems after " + fixed(settled) +
            "s (settle limit reached)";
    std::ofstream dump(o_.workDir + "/checkpoint-" + std::to_string(n) + ".txt");
    for (const auto& p : v.problems) {
      violation(p);
      dump << p << "\n";
    }
    for (auto& e : extenders_) {
      dump << "\n==== " << e.name << " log tail\n" << e.proc->logTail(4000);
    }
    for (auto& c : controllers_) {
      dump << "\n==== " << c.name << " log tail\n" << c.proc->logTail(4000);
    }
  }
  say("checkpoint " + line);
  checkpoints_.push_back(line);
  mostSharedHolders_ = std::max(mostSharedHolders_, v.mostSharedHolders);
  collectReleasedClaims();
  if (!final) {
    resumeChurn();
  }
}

// How long devices stayed Bound after the pod holding them was deleted, and what happened just
// before the slowest releases.
void Soak::reportReleases(std::ostream& r) const {
  std::vector<Release> sorted = releases_;
  std::sort(sorted.begin(), sorted.end(),
            [](const Release& a, const Release& b) { return a.seconds < b.seconds; });
  r << "device release after its pod's deletion: " << sorted.size() << " seen";
  if (sorted.empty()) {
    r << "\n";
    return;
  }
  auto pct = [&](double p) {
    return fixed(sorted[static_cast<size_t>(p * static_cast<double>(sorted.size() - 1))].seconds,
                 2);
  };
  r << "; p50 " << pct(0.5) << "s, p90 " << pct(0.9) << "s, p99 " << pct(0.99) << "s, max "
    << pct(1) << "s; " << awaitingRelease_.size() << " never seen released\n";
  for (size_t i = 0; i < std::min<size_t>(5, sorted.size()); ++i) {
    const Release& s = sorted[sorted.size() - 1 - i];
    std::string after = "no fault before";
    for (const auto& [t, f] : faultTimes_) {
      if (t <= s.at) {
        after = fixed(s.at - t) + "s after " + faultName(f) + " began";
      }
    }
    r << "  " << fixed(s.seconds, 2) << "s: " << s.device << " of pod " << s.pod << " deleted at +"
      << fixed(s.at) << "s, " << after << "\n";
  }
}

int Soak::report() {
  std::ostringstream r;
  r << "==== soak report ====\n";
  r << "size: " << o_.nodes << " nodes, " << o_.devices << " devices, " << o_.pods
    << " pods wanted at once; churn " << fixed(o_.seconds, 0) << "s (deletes " << o_.deleteRate
    << "/s), a fault every " << fixed(o_.faultInterval) << "s; wall time "
    << fixed(secondsSince(gStart)) << "s\n";
  std::lock_guard lock(mu_);
  r << "pods: created " << podsCreated_ << ", scheduled " << scheduledUids_.size() << ", deleted "
    << podsDeleted_ << " (" << boundDeleted_ << " of them bound)\n";
  r << "claims: deleted with their pod " << claimsDeletedWithPod_ << ", collected after release "
    << claimsCollected_ << " (" << generatedCollected_ << " of them made from templates)\n";
  r << "template pods: created " << templatePodsCreated_ << ", bound "
    << scheduledTemplateUids_.size() << "\n";
  r << "shared claims (" << sharedClaims_.size() << "): pods created " << sharedPodsCreated_
    << ", holders joined " << scheduledSharedUids_.size()
    << ", most holders of one claim at a checkpoint " << mostSharedHolders_ << "\n";
  size_t faultCount = 0;
  for (const auto& [f, details] : faults_) {
    faultCount += details.size();
  }
  r << "faults: " << faultCount << "\n";
  for (Fault f : kFaultOrder) {
    const auto it = faults_.find(f);
    r << "  " << faultName(f) << ": " << (it == faults_.end() ? 0 : it->second.size()) << "\n";
    if (it != faults_.end()) {
      for (const auto& d : it->second) {
        r << "    - " << d << "\n";
      }
    }
  }
  r << "counters, summed over every run of the extenders and controllers:\n";
  for (const auto& [series, value] : totals_) {
    r << "  " << series << " " << fixed(value, 0) << "\n";
  }
  r << "component exits:";
  if (exits_.empty()) {
    r << " none";
  }
  r << "\n";
  for (const auto& [what, count] : exits_) {
    r << "  " << what << ": " << count << "\n";
  }
  r << "API errors met by the churn:";
  if (apiErrors_.empty()) {
    r << " none";
  }
  for (const auto& [kind, count] : apiErrors_) {
    r << " " << kind << " " << count;
  }
  r << "\n";
  r << "safety samples (no device held by two live pods): " << safetySamples_ << "\n";
  reportReleases(r);
  r << "checkpoints: " << checkpoints_.size() << "\n";
  for (const auto& c : checkpoints_) {
    r << "  " << c << "\n";
  }
  for (const auto& f : findings_) {
    r << "finding: " << f << "\n";
  }
  if (!stuck_.empty()) {
    r << "STUCK: " << stuck_ << "\n";
  }
  r << "violations: " << violations_.size() << "\n";
  for (const auto& v : violations_) {
    r << "  " << v << "\n";
  }
  const bool ok = violations_.empty() && stuck_.empty() && !interrupted();
  r << "result: " << (ok ? "PASS" : interrupted() ? "INTERRUPTED" : "FAIL") << "\n";
  std::ofstream(o_.workDir + "/report.txt") << r.str();
  std::printf("%s", r.str().c_str());
  std::fflush(stdout);
  return ok ? 0 : 1;
}

int Soak::run() {
  std::vector<std::thread> threads;
  auto stopEverything = [&] {
    stopChurn_ = true;
    for (auto& t : threads) {
      t.join();
    }
    threads.clear();
    if (pods_) {
      pods_->stop();
    }
    if (devices_) {
      devices_->stop();
    }
    scrapeCounters();
    for (auto& c : controllers_) {
      c.wanted = false;
      if (c.proc) {
        c.proc->stop();
      }
      endRun(c.counted);
    }
    for (auto& e : extenders_) {
      if (e.proc && e.wanted) {
        stopExtender(e, false);
      }
    }
  };
  try {
    say("creating " + std::to_string(o_.nodes) + " nodes and " + std::to_string(o_.devices) +
        " devices");
    createObjects();
    proxy_ = std::make_unique<TcpProxy>(std::stoi(env_.at("APISERVER_PORT")));
    for (auto& e : extenders_) {
      startExtender(e);
      startScheduler(e);
      say(e.name + " on :" + std::to_string(e.port) + " behind kube-scheduler " + e.scheduler);
    }
    for (auto& c : controllers_) {
      startController(c);
    }
    const auto leaderDeadline = Clock::now() + 60s;
    while (leaderIndex() < 0) {
      if (Clock::now() > leaderDeadline || !sleepFor(200ms)) {
        throw Stuck("no controller replica became leader within 60s");
      }
      supervise();
    }
    pods_ = std::make_unique<Informer<Pod>>(*check_, resources::kPods,
                                            InformerOptions{.name = "soak-pods", .ns = kNamespace});
    auto noteScheduled = [this](const Informer<Pod>::Ptr& p) {
      if (!p->nodeName.empty()) {
        std::lock_guard lock(mu_);
        scheduledUids_.insert(p->meta.uid);
        const PodKind kind = kindOf(p->meta);
        if (kind == PodKind::kTemplate) {
          scheduledTemplateUids_.insert(p->meta.uid);
        } else if (kind == PodKind::kShared) {
          scheduledSharedUids_.insert(p->meta.uid);
        }
      }
    };
    pods_->addHandlers(
        {.onAdd = noteScheduled,
         .onUpdate = [noteScheduled](const auto&, const auto& p) { noteScheduled(p); }});
    devices_ = std::make_unique<Informer<ExtendedResource>>(
        *check_, resources::kExtendedResources, InformerOptions{.name = "soak-devices"});
    devices_->addHandlers({.onUpdate = [this](const auto&, const auto& d) { deviceChanged(*d); }});
    pods_->start();
    devices_->start();
    if (!pods_->waitForSync(60s) || !devices_->waitForSync(60s)) {
      throw Stuck("the soak's informers did not sync");
    }

    say("churn for " + fixed(o_.seconds, 0) + "s, a fault every " + fixed(o_.faultInterval) +
        "s, a checkpoint every " + std::to_string(o_.checkpointEvery) + " faults");
    churnStart_ = Clock::now();
    threads.emplace_back([this] { creatorLoop(o_.seed * 3 + 1); });
    threads.emplace_back([this] { deleterLoop(o_.seed * 3 + 2); });
    threads.emplace_back([this] { monitorLoop(); });
    size_t faultsDone = 0;
    while (!interrupted() && churnSeconds() < o_.seconds) {
      supervise();
      if (secondsSince(lastScrape_) >= 2) {
        scrapeCounters();
      }
      if (churnSeconds() >= static_cast<double>(faultsDone + 1) * o_.faultInterval) {
        inject(kFaultOrder[faultsDone % std::size(kFaultOrder)], faultsDone);
        ++faultsDone;
        if (faultsDone % static_cast<size_t>(o_.checkpointEvery) == 0 &&
            o_.seconds - churnSeconds() >= 1.5 * o_.faultInterval) {
          checkpoint(false);
        }
      }
      sleepFor(200ms);
    }
    stopChurn_ = true;
    for (auto& t : threads) {
      t.join();
    }
    threads.clear();
    if (!interrupted()) {
      say("churn over; final checkpoint");
      checkpoint(true);
      if (leaderIndex() < 0) {
        violation("no controller replica leads at the end");
      }
    }
  } catch (const std::exception& e) {
    // Stuck, or the setup failed: either way the run ends here, and fails.
    say(std::string("STUCK: ") + e.what());
    std::lock_guard lock(mu_);
    stuck_ = e.what();
  }
  stopEverything();
  proxy_.reset();
  return report();
}

}  // namespace
}  // namespace ker::soak

int main(int argc, char** argv) {
  ker::blockTerminationSignals();
  ker::ignoreBrokenPipes();
  ker::FlagSet flags("soak",
                     "Chaos soak of the extender and the controller against a real control plane "
                     "(run by test/soak/run.sh).");
  ker::soak::Options o;
  auto* controlplane = flags.addString("controlplane-dir", "", "launch.sh's folder (its env file)");
  auto* launcher = flags.addString("launcher", "", "test/controlplane/launch.sh");
  auto* buildDir = flags.addString("build-dir", "", "build folder holding the binaries");
  auto* workDir = flags.addString("work-dir", "", "folder for logs, kubeconfigs and the report");
  auto* seconds = flags.addDouble("seconds", o.seconds, "how long pods churn and faults happen");
  auto* nodes = flags.addInt("nodes", o.nodes, "nodes to create");
  auto* devices = flags.addInt("devices", o.devices, "devices to create, spread over the nodes");
  auto* pods = flags.addInt("pods", 0, "pods wanted at once (0: 1.5 x devices)");
  auto* deleteRate = flags.addDouble("delete-rate", o.deleteRate, "pod deletions per second");
  auto* createRate = flags.addDouble("create-rate", o.createRate, "most pod creations per second");
  auto* faultInterval = flags.addDouble(
      "fault-interval", 0, "seconds of churn between faults (0: seconds / 7, within 10..30)");
  auto* checkpointEvery =
      flags.addInt("checkpoint-every", o.checkpointEvery, "a checkpoint after this many faults");
  auto* grace =
      flags.addDuration("orphan-grace-period", o.orphanGrace, "the controllers' orphan grace");
  auto* settle = flags.addDuration("settle-timeout", o.settleTimeout,
                                   "how long a checkpoint waits for the cluster to settle");
  auto* seed = flags.addInt("seed", 0, "random seed (0: random)");
  if (auto r = flags.parse(argc, argv); r.status != ker::FlagParseResult::kOk) {
    r.print();
    return r.exitCode();
  }
  for (const auto* required : {controlplane, launcher, buildDir, workDir}) {
    if (required->empty()) {
      std::fprintf(stderr,
                   "--controlplane-dir, --launcher, --build-dir and --work-dir are required\n");
      return 2;
    }
  }
  if (*seconds <= 0 || *nodes < 1 || *devices < 1 || *deleteRate <= 0 || *createRate <= 0 ||
      *checkpointEvery < 1) {
    std::fprintf(stderr, "sizes and rates must be positive\n");
    return 2;
  }
  o.controlplaneDir = *controlplane;
  o.launcher = *launcher;
  o.buildDir = *buildDir;
  o.workDir = *workDir;
  o.seconds = *seconds;
  o.nodes = static_cast<int>(*nodes);
  o.devices = static_cast<int>(*devices);
  o.pods = static_cast<int>(*pods);
  o.deleteRate = *deleteRate;
  o.createRate = *createRate;
  o.faultInterval = *faultInterval;
  o.checkpointEvery = static_cast<int>(*checkpointEvery);
  o.orphanGrace = *grace;
  o.settleTimeout = *settle;
  o.seed = *seed != 0 ? static_cast<uint64_t>(*seed) : std::random_device{}();
  std::printf("seed %llu\n", static_cast<unsigned long long>(o.seed));

  // The client library's own warnings (watches failing while the API server restarts) go to a
  // file, so the soak's output stays readable.
  static std::ofstream clientLog(o.workDir + "/soak-client.log");
  ker::log::init(ker::log::Format::kText, 0, &clientLog);
  std::thread([] { ker::soak::gSignal = ker::waitForTerminationSignal(); }).detach();
  try {
    ker::soak::Soak soak(o);
    const int rc = soak.run();
    return ker::soak::gSignal != 0 ? 128 + ker::soak::gSignal : rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "soak: %s\n", e.what());
    return 2;
  }
}

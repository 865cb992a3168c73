// The real-node chaos soak: pods with claims of every kind churn over two real nodes (and
// higher-priority pods preempt them for their devices) while faults are injected in turn (agents
// killed, stalled and cut off from kube-apiserver, containerd killed, kubelets restarted, the
// leaders killed, kube-apiserver restarted, a node drained, a device unhealthy, a node file
// entry gone), each alone and then in pairs at once. Every container records from
// inside what it was given; the checker then proves the promise per container. KER_SOAK_SECONDS
// sets the churn time (default: one round of the faults, a few minutes); KER_SOAK_REPORT names a
// Markdown file for the report (test/soak/run.sh --real-node writes test/soak/realnode-report.md
// that way).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>

#include "common/api_error.h"
#include "e2e_fixture.h"
#include "model/objects.h"
#include "test/integration/priority_classes.h"
#include "test/support/container_records.h"

namespace ker::e2e {
namespace {

using Clock = std::chrono::steady_clock;

struct FaultResult {
  std::string fault, node;
  double recoverySeconds = -1;  // -1: not back within the bound
  std::string violations;       // ker-check-invariants after the recovery
};

class RealNodeSoakTest : public E2eTest {
 protected:
  static constexpr int kDevicesPerNode = 3;
  static constexpr const char* kAgent = "extended-resource-node-agent";

  void SetUp() override {
    E2eTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    ASSERT_GE(nodes().size(), 2u) << "test/run-e2e.sh starts two nodes for the soak";
    records_ = "/run/ker-soak-" + ns_;
    std::filesystem::create_directories(records_);
    ::chmod(records_.c_str(), 0777);
    const char* seconds = std::getenv("KER_SOAK_SECONDS");
    seconds_ = seconds != nullptr ? std::atoi(seconds) : 0;
    priorityClasses_.emplace(*api_);
    urgentClass_ = priorityClasses_->create(1000);
  }

  void TearDown() override {
    E2eTest::TearDown();
    if (priorityClasses_) {
      priorityClasses_->removeAll();
    }
    std::error_code ec;
    std::filesystem::remove_all(records_, ec);
  }

  // The container every soak pod runs: it records its pod, node, devices and allocation, then a
  // beat a second until it is stopped (a stop line on SIGTERM) or, with LIFETIME beats, exits.
  std::string script() const {
    return "up() { read u _ < /proc/uptime; echo $u; }; f=/record/$POD_UID.$(up); "
           "{ echo \"pod $POD_NAME\"; echo \"uid $POD_UID\"; echo \"node $NODE_NAME\"; "
           "echo \"shared $SHARED\"; echo \"ids $" +
           deviceEnvName() +
           "\"; echo \"devs $(ls /dev | grep ^ker- | tr '\\n' ' ')\"; "
           "echo \"alloc $ALLOCATION\"; echo \"start $(up)\"; } > $f.tmp && mv $f.tmp $f; "
           "trap 'echo \"stop $(up)\" >> $f; exit 0' TERM; n=0; "
           "while [ \"$LIFETIME\" = 0 ] || [ $n -lt \"$LIFETIME\" ]; do "
           "echo \"beat $(up)\" >> $f; n=$((n+1)); sleep 1 & wait $!; done; "
           "echo \"stop $(up)\" >> $f";
  }

  json soakPodSpec(const std::vector<std::string>& claims, bool shared, int lifetime) const {
    json pod = busyboxPod("x", claims, script(), 1, lifetime == 0 ? "Always" : "Never");
    json& c = pod["spec"]["containers"][0];
    auto field = [](const char* name, const char* path) {
      return json{{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", path}}}}}};
    };
    c["env"].push_back(field("POD_NAME", "metadata.name"));
    c["env"].push_back(field("POD_UID", "metadata.uid"));
    c["env"].push_back(field("NODE_NAME", "spec.nodeName"));
    c["env"].push_back({{"name", "SHARED"}, {"value", shared ? "true" : "false"}});
    c["env"].push_back({{"name", "LIFETIME"}, {"value", std::to_string(lifetime)}});
    c["volumeMounts"] = json::array({{{"name", "record"}, {"mountPath", "/record"}}});
    pod["spec"]["volumes"] = json::array(
        {{{"name", "record"}, {"hostPath", {{"path", records_}, {"type", "Directory"}}}}});
    pod["spec"]["tolerations"] = json::array({extraNodeToleration()});
    pod["metadata"]["labels"] = {{"soak", "true"}};
    return pod;
  }

  void createSoloPod() {
    const std::string n = std::to_string(++serial_);
    createClaim("c" + n);
    json pod = soakPodSpec({"c" + n}, false, 0);
    pod["metadata"]["name"] = "solo-" + n;
    createPod(pod);
  }

  // A pod of a higher priority with a claim of its own, for a while: with every device held it
  // gets one by preemption, its victim's container stopped before its own starts.
  void createUrgentPod() {
    const std::string n = std::to_string(++serial_);
    createClaim("u" + n);
    json pod = soakPodSpec({"u" + n}, false, 20);
    pod["metadata"]["name"] = "urgent-" + n;
    pod["spec"]["priorityClassName"] = urgentClass_;
    ASSERT_TRUE(itest::createPodOnceAdmitted(*api_, ns_, pod, 30s, 200ms))
        << "PriorityClass " << urgentClass_ << " never admitted";
  }

  void createSharedPod() {
    json pod = soakPodSpec({"shared"}, true, 0);
    pod["metadata"]["name"] = "shared-" + std::to_string(++serial_);
    createPod(pod);
  }

  // A Deployment whose pods each get a claim from template "t", and a Job whose pods do.
  void createWorkloads() {
    api_->create(resources::kExtendedResourceClaimTemplates, ns_,
                 {{"apiVersion", kApiVersion},
                  {"kind", "ExtendedResourceClaimTemplate"},
                  {"metadata", {{"name", "t"}, {"namespace", ns_}}},
                  {"spec",
                   {{"spec",
                     {{"rawResourceName", resource_},
                      {"metadataRequirements", {{"matchLabels", {{"type", "k80"}}}}}}}}}});
    auto templated = [&](int lifetime) {
      json pod = soakPodSpec({}, false, lifetime);
      pod["metadata"].erase("name");
      pod["metadata"].erase("namespace");
      pod["metadata"]["annotations"] = {{kClaimTemplatesAnnotation, "gpu=t"}};
      return json{{"metadata", pod["metadata"]}, {"spec", pod["spec"]}};
    };
    json deployment = {{"apiVersion", "apps/v1"},
                       {"kind", "Deployment"},
                       {"metadata", {{"name", "web"}, {"namespace", ns_}}},
                       {"spec",
                        {{"replicas", 2},
                         {"selector", {{"matchLabels", {{"soak", "true"}, {"app", "web"}}}}},
                         {"template", templated(0)}}}};
    deployment["spec"]["template"]["metadata"]["labels"]["app"] = "web";
    ASSERT_EQ(apply(deployment), 0);
    json job = {{"apiVersion", "batch/v1"},
                {"kind", "Job"},
                {"metadata", {{"name", "batch"}, {"namespace", ns_}}},
                {"spec",
                 {{"completions", 1000},
                  {"parallelism", 1},
                  {"backoffLimit", 1000},
                  {"template", templated(8)}}}};
    job["spec"]["template"]["metadata"]["labels"]["app"] = "batch";
    ASSERT_EQ(apply(job), 0);
  }

  int apply(const json& object) {
    const std::string file = records_ + "/.object.json";
    std::ofstream(file) << object.dump();
    std::string out;
    const int rc = env_->kubectl("create -f " + file, &out);
    if (rc != 0) {
      ADD_FAILURE() << out;
    }
    std::filesystem::remove(file);
    return rc;
  }

  std::vector<json> soakPods() {
    json list = kubectlJson("get pods -n " + ns_ + " -l soak=true");
    return list.is_discarded() ? std::vector<json>{} : list["items"].get<std::vector<json>>();
  }

  // The pod, then its own claim (gone already, or refused: the churn goes on regardless).
  void deletePodAndClaim(const std::string& pod, const std::string& claim) {
    deletePod(pod);
    try {
      api_->remove(resources::kExtendedResourceClaims, ns_, claim);
    } catch (const ApiError&) {
    }
  }

  // One step of churn: a solo pod and its claim go and come, a web pod is deleted (its
  // ReplicaSet makes another), a shared pod joins or leaves, and now and then an urgent pod
  // preempts one (it goes with its claim once it has finished).
  void churn() {
    std::vector<std::string> solos, webs, shareds, urgents;
    for (const auto& p : soakPods()) {
      if (p.contains("/metadata/deletionTimestamp"_json_pointer)) {
        continue;
      }
      const std::string name = p["metadata"]["name"];
      const std::string phase = p.value("/status/phase"_json_pointer, std::string());
      if (name.starts_with("urgent-")) {
        if (phase == "Succeeded" || phase == "Failed") {
          deletePodAndClaim(name, "u" + name.substr(std::string_view("urgent-").size()));
        } else {
          urgents.push_back(name);
        }
      } else if (name.starts_with("solo-")) {
        solos.push_back(name);
      } else if (name.starts_with("shared-")) {
        shareds.push_back(name);
      } else if (name.starts_with("web-")) {
        webs.push_back(name);
      }
    }
    std::uniform_int_distribution<int> coin(0, 2);
    auto pick = [&](const std::vector<std::string>& from) {
      return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng_)];
    };
    if (solos.size() < 4) {
      createSoloPod();
    } else if (coin(rng_) == 0) {
      const std::string pod = pick(solos);
      deletePodAndClaim(pod, "c" + pod.substr(std::string_view("solo-").size()));
    }
    if (!webs.empty() && coin(rng_) == 0) {
      deletePod(pick(webs));
    }
    if (shareds.size() < 2) {
      createSharedPod();
    } else if (coin(rng_) == 0) {
      deletePod(pick(shareds));
    }
    if (urgents.empty() && coin(rng_) == 0) {
      createUrgentPod();
    }
  }

  // Devices healthy and in service, the components ready, every scheduled pod running.
  std::string notYetRecovered() {
    for (const auto& d : devices_) {
      json dev;
      try {
        dev = getDevice(d);
      } catch (const ApiError&) {
        return "device " + d + " is gone";
      }
      const std::string phase = dev.value("/status/phase"_json_pointer, std::string());
      if (phase != "Available" && phase != "Bound") {
        return "device " + d + " is " + phase;
      }
      bool healthy = false;
      for (const auto& c : dev.value("/status/conditions"_json_pointer, json::array())) {
        healthy |= c.value("type", "") == "Healthy" && c.value("status", "") == "True";
      }
      if (!healthy) {
        return "device " + d + " is not Healthy";
      }
    }
    for (const auto& n : nodes()) {
      const auto agents = componentPods(kAgent, n);
      if (agents.size() != 1 ||
          !agents[0].value("/status/containerStatuses/0/ready"_json_pointer, false)) {
        return "the node agent on " + n + " is not ready";
      }
    }
    for (const char* d : {"extended-resource-scheduler", "extended-resource-controller"}) {
      if (!deploymentReady(d)) {
        return std::string(d) + " is not ready";
      }
    }
    for (const auto& p : soakPods()) {
      const std::string phase = p.value("/status/phase"_json_pointer, std::string());
      if (!p.contains("/metadata/deletionTimestamp"_json_pointer) &&
          !p.value("/spec/nodeName"_json_pointer, std::string()).empty() && phase != "Running" &&
          phase != "Succeeded" && phase != "Failed") {
        return "pod " + p["metadata"]["name"].get<std::string>() + " is " + phase;
      }
    }
    return "";
  }

  // Injects one fault on `node` and undoes it; throws nothing, records what failed.
  void inject(const std::string& fault, const std::string& node) {
    const std::string nodeArg = node == this->node() ? "" : "--node-name " + node;
    if (fault == "agent-killed") {
      // A container whose creation the killed agent was answering is let through: the runtime
      // skips a plugin whose connection closes mid-request, and its validator still counts the
      // plugin as present. The new agent stops it when it starts. The outage ends once the
      // fault has recovered (the new agent ready).
      addOutage({node, uptime(), 0});
      for (const auto& p : componentPods(kAgent, node)) {
        api_->remove(resources::kPods, "kube-system", p["metadata"]["name"],
                     DeleteOptions{.gracePeriodSeconds = 0});
      }
    } else if (fault == "agent-stalled") {
      const auto agents = componentPods(kAgent, node);
      ASSERT_EQ(agents.size(), 1u);
      const auto pids = processesOf(containerIdOf(agents[0]));
      ASSERT_EQ(pids.size(), 1u);
      testsupport::AgentOutage outage{node, uptime(), 0};
      ::kill(pids[0], SIGSTOP);
      // A container created meanwhile (if it lands here) meets the stalled agent.
      createSoloPod();
      std::this_thread::sleep_for(10s);
      ::kill(pids[0], SIGCONT);
      outage.to = uptime();
      addOutage(outage);
    } else if (fault == "agent-cut-off") {
      // Its network to the control plane failing: nothing it is asked meanwhile may be let
      // through for want of an answer in time, so no outage is recorded.
      const auto agents = componentPods(kAgent, node);
      ASSERT_EQ(agents.size(), 1u);
      ApiServerCutOff cut(*env_, agents[0].value("/status/podIP"_json_pointer, std::string()));
      ASSERT_TRUE(cut.active()) << "could not drop the agent's packets to kube-apiserver";
      createSoloPod();
      std::this_thread::sleep_for(15s);
    } else if (fault == "containerd-killed") {
      ASSERT_EQ(env_->launch("restart-containerd", nodeArg), 0);
    } else if (fault == "kubelet-restarted") {
      ASSERT_EQ(env_->launch("restart-kubelet", nodeArg), 0);
    } else if (fault == "apiserver-restarted") {
      ASSERT_EQ(env_->launch("restart-apiserver"), 0);
    } else if (fault == "extender-leader-killed" || fault == "controller-leader-killed") {
      const std::string component = fault == "extender-leader-killed"
                                        ? "extended-resource-scheduler"
                                        : "extended-resource-controller";
      const std::string holder = api_->get(resources::kLeases, "kube-system", component)
                                     .value("/spec/holderIdentity"_json_pointer, std::string());
      for (const auto& p : componentPods(component)) {
        const std::string name = p["metadata"]["name"];
        if (holder.starts_with(name)) {
          api_->remove(resources::kPods, "kube-system", name,
                       DeleteOptions{.gracePeriodSeconds = 0});
        }
      }
    } else if (fault == "node-drained") {
      std::string out;
      ASSERT_EQ(env_->kubectl("cordon " + node, &out), 0) << out;
      env_->kubectl("delete pods -n " + ns_ + " -l soak=true --wait=false --field-selector " +
                        "spec.nodeName=" + node,
                    &out);
      eventually(
          [&] {
            json left =
                kubectlJson("get pods -n " + ns_ + " --field-selector spec.nodeName=" + node);
            return !left.is_discarded() && left["items"].empty();
          },
          60s);
      ASSERT_EQ(env_->kubectl("uncordon " + node, &out), 0) << out;
    } else if (fault == "device-unhealthy") {
      const std::string device = deviceOn(node);
      const std::string path = hostDeviceNode(device);
      ::unlink(path.c_str());
      eventually([&] { return !notYetRecovered().empty(); }, 15s);
      ASSERT_EQ(::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << path;
      ::chmod(path.c_str(), 0666);
    } else if (fault == "node-file-entry-removed") {
      const std::string device = deviceOn(node);
      const json entry = takeNodeFileEntry(device, node == this->node() ? "" : node);
      std::this_thread::sleep_for(5s);
      editNodeFile([&](json& devices) { devices.push_back(entry); },
                   node == this->node() ? "" : node);
    }
  }

  // The host's uptime: the clock the containers' records use.
  void addOutage(const testsupport::AgentOutage& outage) {
    std::lock_guard lock(outagesMu_);
    outages_.push_back(outage);
  }
  // Ends the outages still open (the killed agents') now that their fault recovered or its
  // wait gave up.
  void closeOutages() {
    std::lock_guard lock(outagesMu_);
    for (auto& o : outages_) {
      if (o.to == 0) {
        o.to = uptime();
      }
    }
  }

  static double uptime() {
    double seconds = 0;
    std::ifstream("/proc/uptime") >> seconds;
    return seconds;
  }

  std::string deviceOn(const std::string& node) {
    std::lock_guard lock(rngMu_);
    const auto& list = node == this->node() ? firstNodeDevices_ : secondNodeDevices_;
    return list[std::uniform_int_distribution<size_t>(0, list.size() - 1)(rng_)];
  }

  std::string records_;
  int seconds_ = 0;
  std::atomic<int> serial_{0};  // faults of a pair run on two threads
  std::mutex rngMu_;
  std::mt19937 rng_{20261130};
  std::vector<std::string> firstNodeDevices_, secondNodeDevices_;
  std::mutex outagesMu_;  // the faults of a pair record outages on two threads
  std::vector<testsupport::AgentOutage> outages_;  // stalls and kills; to == 0: still open
  std::optional<itest::PriorityClasses> priorityClasses_;
  std::string urgentClass_;  // the urgent pods' PriorityClass
};

TEST_F(RealNodeSoakTest, EveryContainerGetsExactlyItsDevicesThroughChurnAndFaults) {
  const std::string second = nodes()[1];
  for (int i = 0; i < kDevicesPerNode; ++i) {
    firstNodeDevices_.push_back(uniqueName("a"));
    createDevice(firstNodeDevices_.back());
    secondNodeDevices_.push_back(uniqueName("b"));
    createDevice(secondNodeDevices_.back(), "k80", second);
  }
  json shared = itest::claimObject(ns_, "shared", resource_, 1, {{"type", "k80"}});
  shared["spec"]["shareable"] = true;
  api_->create(resources::kExtendedResourceClaims, ns_, shared);
  ASSERT_NO_FATAL_FAILURE(createWorkloads());

  const std::vector<std::string> faults = {"agent-killed",
                                           "agent-stalled",
                                           "agent-cut-off",
                                           "containerd-killed",
                                           "kubelet-restarted",
                                           "extender-leader-killed",
                                           "controller-leader-killed",
                                           "apiserver-restarted",
                                           "node-drained",
                                           "device-unhealthy",
                                           "node-file-entry-removed"};
  // Two faults at once, the first on one node and the second on the other (the nodes swap each
  // round). No pair repeats a fault, or pairs two the launcher runs (it serialises its commands
  // on the cluster's folder); the API server's restart is paired with a fault that needs no API.
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"kubelet-restarted", "agent-stalled"},
      {"apiserver-restarted", "node-file-entry-removed"},
      {"containerd-killed", "extender-leader-killed"},
      {"node-drained", "device-unhealthy"},
      {"agent-killed", "controller-leader-killed"}};
  const size_t round = faults.size() + pairs.size();
  std::vector<FaultResult> results;
  const auto start = Clock::now();
  const auto churnFor = std::chrono::seconds(seconds_);
  size_t next = 0;
  // Churn between faults; at least one round of every fault alone (and of every pair), on
  // alternating nodes.
  while (next < round || Clock::now() - start < churnFor) {
    for (int i = 0; i < 5; ++i) {
      churn();
      std::this_thread::sleep_for(1s);
    }
    FaultResult r;
    const size_t at = next % round;
    const bool firstNode = (next / round + next) % 2 == 0;
    r.node = firstNode ? node() : second;
    ++next;
    if (at < faults.size()) {
      r.fault = faults[at];
      inject(r.fault, r.node);
    } else {
      const auto& [a, b] = pairs[at - faults.size()];
      const std::string other = firstNode ? second : node();
      r.fault = a + " + " + b;
      r.node += " + " + other;
      std::thread alongside([&, b, other] {
        try {
          inject(b, other);
        } catch (const std::exception& e) {
          ADD_FAILURE() << b << " on " << other << " alongside " << a << ": " << e.what();
        }
      });
      std::exception_ptr failed;  // joined before it is thrown on
      try {
        inject(a, firstNode ? node() : second);
      } catch (...) {
        failed = std::current_exception();
      }
      alongside.join();
      if (failed) {
        std::rethrow_exception(failed);
      }
    }
    const auto injected = Clock::now();
    std::string why;
    const bool recovered =
        eventually([&] { return (why = notYetRecovered()).empty(); }, 120s, 500ms);
    closeOutages();
    if (recovered) {
      r.recoverySeconds = std::chrono::duration<double>(Clock::now() - injected).count();
      // The Job's pods keep finishing meanwhile: a claim held by a pod that finished a moment
      // ago is released within a second. Only what lasts 15 s is a violation.
      eventually([&] { return (r.violations = env_->invariantViolations()).empty(); }, 15s, 1s);
    } else {
      r.violations = "not recovered in 120 s: " + why;
    }
    std::cerr << "[soak] " << r.fault << " on " << r.node << ": "
              << (r.recoverySeconds >= 0 ? std::to_string(r.recoverySeconds) + " s" : "-")
              << (r.violations.empty() ? "" : "; " + r.violations) << "\n";
    results.push_back(r);
  }

  // Everything goes; no device stays allocated to a pod that is gone for more than 60 s.
  std::string out;
  env_->kubectl("delete deployment,job -n " + ns_ + " --all --wait=false", &out);
  env_->kubectl("delete pods -n " + ns_ + " --all --wait=false", &out);
  EXPECT_TRUE(eventually([&] { return soakPods().empty(); }, 120s)) << "soak pods left";
  const auto podsGone = Clock::now();
  std::string held;
  EXPECT_TRUE(eventually(
      [&] {
        held.clear();
        for (const auto& d : devices_) {
          const std::string phase = getDevice(d).value("/status/phase"_json_pointer, std::string());
          if (phase != "Available") {
            held += d + " is " + phase + "; ";
          }
        }
        return held.empty();
      },
      60s))
      << "60 s after the last pod was gone: " << held;
  const double releasedAfter = std::chrono::duration<double>(Clock::now() - podsGone).count();

  // The records: each container saw exactly its allocation, never nothing, and no two pods'
  // containers held one device at overlapping times unless both joined the shareable claim.
  std::vector<testsupport::ContainerRecord> records;
  std::map<std::string, int> perNode;
  for (const auto& entry : std::filesystem::directory_iterator(records_)) {
    if (entry.path().extension() == ".tmp") {
      continue;
    }
    std::ifstream in(entry.path());
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    records.push_back(testsupport::parseContainerRecord(entry.path().filename(), text));
    ++perNode[records.back().node];
  }
  std::set<std::string> preempted;
  const json events = kubectlJson("get events -n " + ns_);
  for (const auto& e : events.is_object() ? events.value("items", json::array()) : json::array()) {
    if (e.value("reason", "") == "Preempted") {
      preempted.insert(e.value("/involvedObject/name"_json_pointer, std::string()));
    }
  }
  const auto urgentContainers = std::count_if(
      records.begin(), records.end(),
      [](const testsupport::ContainerRecord& r) { return r.pod.starts_with("urgent-"); });
  int letThrough = 0;
  const std::vector<std::string> violations =
      testsupport::promiseViolations(records, outages_, &letThrough);

  std::ostringstream report;
  report << "# Real-node soak\n\n"
         << "Two real nodes, " << kDevicesPerNode << " devices each; "
         << std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - start).count()
         << " s of churn and faults; " << records.size() << " containers recorded (";
  for (auto it = perNode.begin(); it != perNode.end(); ++it) {
    report << (it == perNode.begin() ? "" : ", ") << it->first << ": " << it->second;
  }
  report << ").\n\nRecovered after: seconds from the end of the fault (the stall lifted, the "
            "daemon back, the entry restored) until every device is Healthy and in service, the "
            "components are ready and every scheduled soak pod runs.\n\n| fault | node | recovered "
            "after (s) | invariants |\n|---|---|---|---|\n";
  for (const auto& r : results) {
    report << "| " << r.fault << " | " << r.node << " | "
           << (r.recoverySeconds >= 0 ? std::to_string(r.recoverySeconds).substr(0, 5) : "-")
           << " | " << (r.violations.empty() ? "clean" : r.violations) << " |\n";
  }
  report << "\nPods preempted for an urgent pod: " << preempted.size()
         << "; urgent pods' containers recorded: " << urgentContainers << ".\n";
  report << "\nContainers the runtime let through without devices while their node's agent was "
            "stalled or killed mid-answer, stopped within "
         << testsupport::kLetThroughBoundSeconds << " s of it answering again: " << letThrough
         << ".\n";
  report << "\nDevices all Available " << std::to_string(releasedAfter).substr(0, 5)
         << " s after the last pod was gone.\n\nViolations: " << violations.size() << "\n";
  for (const auto& v : violations) {
    report << "- " << v << "\n";
  }
  std::cerr << report.str();
  if (const char* file = std::getenv("KER_SOAK_REPORT")) {
    std::ofstream(file) << report.str();
  }

  EXPECT_GT(records.size(), 10u) << "too few containers recorded to judge";
  EXPECT_TRUE(violations.empty()) << testing::PrintToString(violations);
  for (const auto& r : results) {
    EXPECT_GE(r.recoverySeconds, 0) << r.fault << " on " << r.node << ": " << r.violations;
    EXPECT_EQ(r.violations, "") << r.fault << " on " << r.node;
  }
}

}  // namespace
}  // namespace ker::e2e

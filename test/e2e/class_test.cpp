// ExtendedResourceClass on the real node: a pod whose containers ask the usual way
// (`resources.limits: {<class's name>: N}`) and name no scheduler is routed to the extended-
// resource scheduler by deploy/class-routing-policy.yaml, gets a claim made from the class, and
// the node agent gives the container that asked its device and its siblings none. The agent keeps
// the node's capacity for the class's name true to the healthy devices, through a kubelet
// restart and a re-registration of the Node, and takes the name of a class deleted while it was
// away off the node when it comes back; a pod placed by another scheduler never starts; a
// ResourceQuota on the name counts the pods' requests; a Deployment's pods each get a device of
// their own and leave no claims; a second class for a served name is refused; a class for pods
// only refuses claims and templates of its devices.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/api_error.h"
#include "common/kube_config.h"
#include "common/resource.h"
#include "e2e_fixture.h"
#include "model/objects.h"
#include "model/resource_class.h"

namespace ker::e2e {
namespace {

const Resource kDeployments{"apps", "v1", "deployments", true};
const Resource kDaemonSets{"apps", "v1", "daemonsets", true};
const Resource kQuotas{"", "v1", "resourcequotas", true};

constexpr const char* kProfile = "extended-resource-scheduler";

// Seconds since `t0`, for the measured lines.
double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class ClassTest : public E2eTest {
 protected:
  void SetUp() override {
    E2eTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) {
      return;
    }
    // Unique to the test: the node's capacity and the routing policy see this name only here.
    gpu_ = uniqueName("cls") + ".example.com/gpu";
    className_ = uniqueName("class");
    api_->create(resources::kExtendedResourceClasses, "",
                 itest::k80ClassObject(className_, gpu_, resource_));
    classCreated_ = true;
    // The routing policy reads the names classes serve from the Namespace annotation the
    // controller keeps, through the API server's informer: until both have this class, a pod
    // asking for its name stays with the default scheduler.
    std::string seen;
    ASSERT_TRUE(eventually([&] { return (seen = routedSchedulerName()) == kProfile; }, 30s, 500ms))
        << "a pod asking for " << gpu_ << " is not routed to " << kProfile << ": " << seen;
  }

  void TearDown() override {
    E2eTest::TearDown();
    if (!classCreated_) {
      return;
    }
    try {
      api_->remove(resources::kExtendedResourceClasses, "", className_);
    } catch (const ApiError&) {
    }
    // The agent takes the name it advertised off the node once no class serves it.
    const bool gone = eventually(
        [&] {
          const auto [capacity, allocatable] = nodeShows();
          return !capacity && !allocatable;
        },
        30s, 200ms);
    EXPECT_TRUE(gone) << "the node still shows " << gpu_ << " after its class was deleted";
    if (!gone) {  // Leave the node as other tests expect it.
      json nulls = {{gpu_, nullptr}};
      api_->patch(resources::kNodes, "", node(), PatchType::kMerge,
                  {{"status", {{"capacity", nulls}, {"allocatable", nulls}}}}, "status");
    }
  }

  // The node's status.capacity and status.allocatable for the class's name (nullopt: absent).
  static std::optional<int64_t> quantity(const json& list, const std::string& name) {
    if (!list.is_object() || !list.contains(name) || !list[name].is_string()) {
      return std::nullopt;
    }
    return std::stoll(list[name].get<std::string>());
  }
  std::pair<std::optional<int64_t>, std::optional<int64_t>> nodeShows(const json& n) const {
    return {quantity(n.value("/status/capacity"_json_pointer, json()), gpu_),
            quantity(n.value("/status/allocatable"_json_pointer, json()), gpu_)};
  }
  std::pair<std::optional<int64_t>, std::optional<int64_t>> nodeShows() {
    return nodeShows(api_->get(resources::kNodes, "", node()));
  }
  static std::string show(const std::pair<std::optional<int64_t>, std::optional<int64_t>>& p) {
    auto one = [](const std::optional<int64_t>& q) { return q ? std::to_string(*q) : "absent"; };
    return "capacity " + one(p.first) + ", allocatable " + one(p.second);
  }
  // Waits until the node's capacity and allocatable both show `count` of the class's name.
  ::testing::AssertionResult awaitCapacity(int64_t count, std::chrono::milliseconds bound = 30s) {
    std::pair<std::optional<int64_t>, std::optional<int64_t>> seen;
    if (eventually(
            [&] {
              seen = nodeShows();
              return seen.first == count && seen.second == count;
            },
            bound, 200ms)) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << "the node shows " << show(seen) << " of " << gpu_
                                         << " after " << bound.count() << " ms, not " << count;
  }

  // A device of this test's resource of this type, published and Available.
  std::string device(const std::string& type) {
    const std::string name = uniqueName(type);
    addDeviceToNodeFile(name, type);
    EXPECT_TRUE(awaitPublished(name));
    return name;
  }

  // Prints what the container got: the IDs in the device variable and the device nodes.
  std::string reportScript() const {
    const std::string env = deviceEnvName();
    return "echo \"ids=$" + env +
           "\"; for f in /dev/ker-*; do [ -e \"$f\" ] && echo \"node=$f\"; done; echo reported; "
           "exec sleep 3600";
  }
  json container(const std::string& name, int gpus) const {
    json c = {{"name", name},
              {"image", kTestImage},
              {"imagePullPolicy", "Never"},
              {"command", {"/bin/sh", "-c", reportScript()}},
              {"resources", {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}}}}};
    if (gpus > 0) {
      c["resources"]["limits"] = {{gpu_, std::to_string(gpus)}};
    }
    return c;
  }
  // A pod whose container "cuda" asks for `gpus` of the class's name and whose container "web"
  // asks for none; no schedulerName unless one is given.
  json podAsking(const std::string& name, int gpus, const std::string& schedulerName = "") const {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", ns_}}},
                {"spec",
                 {{"terminationGracePeriodSeconds", 1},
                  {"containers", json::array({container("cuda", gpus), container("web", 0)})}}}};
    if (!schedulerName.empty()) {
      pod["spec"]["schedulerName"] = schedulerName;
    }
    return pod;
  }

  // The schedulerName the API server's admission gives a pod asking for the class's name
  // (a server-side dry run: nothing is created).
  std::string routedSchedulerName() {
    const std::string file = "/tmp/" + uniqueName("ker-e2e-probe") + ".json";
    std::ofstream(file) << podAsking("probe", 1).dump();
    json pod = kubectlJson("create --dry-run=server -f " + file);
    std::remove(file.c_str());
    return pod.is_discarded() ? "(dry run failed)"
                              : pod.value("/spec/schedulerName"_json_pointer, std::string());
  }

  std::string containerLogs(const std::string& pod, const std::string& container) {
    std::string out;
    if (env_->kubectl("logs -n " + ns_ + " " + pod + " -c " + container, &out) != 0) {
      return "";
    }
    return out;
  }
  // The container's report once it printed it in full.
  std::string report(const std::string& pod, const std::string& container) {
    std::string out;
    EXPECT_TRUE(eventually(
        [&] { return (out = containerLogs(pod, container)).find("reported") != std::string::npos; },
        30s))
        << pod << "/" << container << ": " << out;
    return out;
  }

  // The claim the pod's generated-claims record names for the class's name; null when none.
  json recordedClaim(const json& pod) {
    const Pod p = Pod::fromJson(pod);
    auto it = p.resourceClaims.find(gpu_);
    if (it == p.resourceClaims.end()) {
      return nullptr;
    }
    return getClaim(it->second);
  }

  // Creates a pod whose container asks for one device, waits until it runs, and returns its
  // claim's name and the device the claim is Bound to (both "" after a failure).
  std::pair<std::string, std::string> runPodAskingOne(const std::string& name) {
    api_->create(resources::kPods, ns_, podAsking(name, 1));
    if (!eventually([&] { return podRunning(name); }, 180s)) {
      ADD_FAILURE() << name << " does not run: " << podPhase(name);
      return {};
    }
    const json claim = recordedClaim(*getPod(name));
    const json devices = claim.is_null()
                             ? json()
                             : claim.value("/status/extendedResourceNames"_json_pointer, json());
    if (!devices.is_array() || devices.size() != 1) {
      ADD_FAILURE() << name << "'s claim holds not one device: " << claim.dump();
      return {};
    }
    return {claim["metadata"]["name"], devices[0]};
  }

  std::vector<json> podsLabelled(const std::string& selector) {
    return api_->list(resources::kPods, ns_, ListOptions{.labelSelector = selector})["items"]
        .get<std::vector<json>>();
  }

  // The value of the node agent's refusals counter for this reason (0 while it has none).
  double refusals(const std::string& reason) {
    const std::string page = scrapeMetrics("extended-resource-node-agent", 8082);
    const std::string series = "extended_resource_agent_refusals_total{reason=\"" + reason + "\"} ";
    std::istringstream lines(page);
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with(series)) {
        return std::stod(line.substr(series.size()));
      }
    }
    return page.empty() ? -1 : 0;
  }

  std::string gpu_;
  std::string className_;
  bool classCreated_ = false;
};

TEST_F(ClassTest, TheContainerThatAskedGetsItsDeviceAndItsSiblingNone) {
  const std::string k80 = device("k80");
  const std::string p100 = device("p100");  // of the resource, but not of the class
  ASSERT_TRUE(awaitCapacity(1)) << "the class selects the k80 only";

  const json created = api_->create(resources::kPods, ns_, podAsking("train", 1));
  EXPECT_EQ(created.value("/spec/schedulerName"_json_pointer, std::string()), kProfile)
      << "the routing policy did not route a pod that names no scheduler";
  ASSERT_TRUE(eventually([&] { return podRunning("train"); }, 120s))
      << "phase " << podPhase("train") << "; FailedScheduling: "
      << testing::PrintToString(eventMessages("train", "FailedScheduling"))
      << "; Failed: " << testing::PrintToString(eventMessages("train", "Failed"));

  const std::string cuda = report("train", "cuda");
  EXPECT_NE(cuda.find("ids=" + k80 + "-id\n"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("node=" + containerDeviceNode(k80) + "\n"), std::string::npos) << cuda;
  EXPECT_EQ(cuda.find(p100), std::string::npos) << cuda;
  const std::string web = report("train", "web");
  EXPECT_NE(web.find("ids=\n"), std::string::npos) << "web asked for nothing:\n" << web;
  EXPECT_EQ(web.find("node="), std::string::npos) << "web asked for nothing:\n" << web;

  // `kubectl get erc`: one claim, the one the pod's record names, Bound to it.
  const json pod = *getPod("train");
  const json claims = kubectlJson("get erc -n " + ns_);
  ASSERT_FALSE(claims.is_discarded());
  ASSERT_EQ(claims["items"].size(), 1u) << claims.dump();
  const json claim = claims["items"][0];
  const json recorded = recordedClaim(pod);
  ASSERT_FALSE(recorded.is_null()) << pod["metadata"].dump();
  EXPECT_EQ(claim["metadata"]["name"], recorded["metadata"]["name"]);
  EXPECT_EQ(claim.value("/status/phase"_json_pointer, std::string()), "Bound") << claim.dump();
  EXPECT_EQ(claim.value("/status/podRef/uid"_json_pointer, std::string()),
            pod["metadata"]["uid"].get<std::string>());
  EXPECT_EQ(claim.value("/status/extendedResourceNames"_json_pointer, json()), json::array({k80}));
  const auto parsed = ExtendedResourceClaim::fromJson(claim);
  EXPECT_EQ(parsed.meta.controllerUid(), pod["metadata"]["uid"].get<std::string>())
      << "the claim is not owned by its pod: " << claim["metadata"].dump();
  EXPECT_EQ(parsed.containers, (std::vector<ContainerShare>{{"cuda", 1, ContainerKind::kApp}}))
      << claim["spec"].dump();
  EXPECT_EQ(claim["metadata"]["labels"].value(kClassLabel, ""), className_);
}

TEST_F(ClassTest, TheCapacityFollowsDeviceHealthAndOutlivesAKubeletRestart) {
  const std::string a = device("k80");
  device("k80");
  device("p100");
  ASSERT_TRUE(awaitCapacity(2)) << "two healthy k80s (the p100 is not the class's)";

  // Unhealthy: its device node is gone (the agent's health check finds it missing).
  ASSERT_EQ(::unlink(hostDeviceNode(a).c_str()), 0);
  EXPECT_TRUE(awaitCapacity(1)) << "after " << a << "'s device node vanished";
  ASSERT_EQ(::mknod(hostDeviceNode(a).c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  ASSERT_TRUE(awaitCapacity(2)) << "after " << a << "'s device node came back";

  // Every value the node shows for the name across the restart, from a watch (no write is
  // missed between polls), with who wrote the node last.
  const json before = api_->get(resources::kNodes, "", node());
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<std::string> seen;
  std::atomic<int> updates{0};
  const auto t0 = std::chrono::steady_clock::now();
  std::thread watcher([&] {
    KubeClient client(KubeConfig::fromKubeconfigFile(env_->kubeconfig()));
    std::string rv = before["metadata"]["resourceVersion"];
    auto last = nodeShows(before);
    while (!stop) {
      try {
        client.watch(
            resources::kNodes, "",
            WatchOptions{.resourceVersion = rv,
                         .fieldSelector = "metadata.name=" + node(),
                         .timeoutSeconds = 60},
            [&](const WatchEvent& e) {
              if (e.type == WatchEventType::kError) {
                return false;
              }
              rv = e.object["metadata"].value("resourceVersion", rv);
              ++updates;
              const auto now = nodeShows(e.object);
              if (now != last) {
                std::string manager;
                std::string time;
                for (const auto& f : e.object["metadata"].value("managedFields", json::array())) {
                  if (f.value("time", "") >= time) {
                    time = f.value("time", "");
                    manager = f.value("manager", "");
                  }
                }
                std::ostringstream line;
                line.precision(2);
                line << std::fixed << "+" << secondsSince(t0) << " s: " << show(now)
                     << " (last written by " << manager << ")";
                std::lock_guard lock(mu);
                seen.push_back(line.str());
                last = now;
              }
              return !stop;
            },
            &stop);
      } catch (const std::exception& e) {
        std::lock_guard lock(mu);
        seen.push_back(std::string("(watch: ") + e.what() + ")");
        std::this_thread::sleep_for(200ms);
      }
    }
  });
  struct Join {
    std::atomic<bool>& stop;
    std::thread& t;
    ~Join() {
      stop = true;
      t.join();
    }
  } join{stop, watcher};

  // The kubelet's log from its restart on: what it did when it registered again.
  const std::string kubeletLog = env_->value("KUBELET_LOG");
  const auto logStart = [&] {
    std::ifstream in(kubeletLog, std::ios::ate);
    return static_cast<std::streamoff>(in.tellg());
  }();
  auto logSinceRestart = [&] {
    std::ifstream in(kubeletLog);
    in.seekg(logStart);
    return std::string{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  };
  ASSERT_EQ(env_->launch("restart-kubelet"), 0);
  const double restarted = secondsSince(t0);
  std::string log;
  ASSERT_TRUE(eventually(
      [&] {
        log = logSinceRestart();
        return log.find("Node was previously registered") != std::string::npos;
      },
      60s, 200ms))
      << "the restarted kubelet did not register its node within 60 s:\n"
      << log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
  const double registered = secondsSince(t0);

  // Within 30 s of registering (the agent's node watch and one write), and it stays so across
  // the kubelet's status updates (every 4 s on this node).
  EXPECT_TRUE(awaitCapacity(2, 30s)) << "after the kubelet restarted";
  const double restored = secondsSince(t0);
  std::pair<std::optional<int64_t>, std::optional<int64_t>> later;
  EXPECT_FALSE(eventually(
      [&] {
        later = nodeShows();
        return later.first != 2 || later.second != 2;
      },
      10s, 200ms))
      << "the node went back to " << show(later);

  stop = true;
  std::vector<std::string> changes;
  {
    std::lock_guard lock(mu);
    changes = seen;
  }
  std::cout << "[measured] kubelet restarted (healthy) at +" << restarted
            << " s, registered its node at +" << registered << " s; capacity of " << gpu_
            << " right again at +" << restored << " s; " << updates
            << " writes of the node seen by a watch, " << changes.size() << " of them changing "
            << gpu_ << ":\n";
  for (const auto& c : changes) {
    std::cout << "[measured]   " << c << "\n";
  }
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("Zero out resource capacity") != std::string::npos &&
        line.find(gpu_) != std::string::npos) {
      std::cout << "[measured] kubelet: " << line << "\n";
    }
  }
  std::cout << std::flush;

  // What a kubelet registering a node it finds without its device-plugin checkpoint does
  // (reconcileExtendedResource: every extended resource to 0): the agent writes it back.
  json zero = {{gpu_, "0"}};
  api_->patch(resources::kNodes, "", node(), PatchType::kMerge,
              {{"status", {{"capacity", zero}, {"allocatable", zero}}}}, "status");
  EXPECT_TRUE(awaitCapacity(2, 30s)) << "after the node's capacity was zeroed";
}

// The Node object deleted and registered again by its kubelet (v1.37.1 registers only when it
// starts, so the kubelet is restarted) while a pod holds a device: the new Node (another UID)
// has no extended resources until the node agent writes the class's count on it; the holder
// keeps its device and its claim, and the next pod gets the other device.
TEST_F(ClassTest, ANodeRegisteredAgainGetsItsCapacityBackAndNoDeviceIsGivenTwice) {
  device("k80");
  device("k80");
  ASSERT_TRUE(awaitCapacity(2));
  const auto [heldClaim, heldDevice] = runPodAskingOne("holder");
  ASSERT_FALSE(heldDevice.empty());
  const std::string oldUid = api_->get(resources::kNodes, "", node())["metadata"]["uid"];

  const auto t0 = std::chrono::steady_clock::now();
  api_->remove(resources::kNodes, "", node());
  ASSERT_TRUE(eventually(
      [&] {
        try {
          return api_->get(resources::kNodes, "", node())["metadata"]["uid"] != oldUid;
        } catch (const ApiError& e) {
          return e.isNotFound();
        }
      },
      30s, 200ms))
      << "the Node was not deleted";
  ASSERT_EQ(env_->launch("restart-kubelet"), 0);
  const double registered = secondsSince(t0);
  ASSERT_NE(api_->get(resources::kNodes, "", node())["metadata"]["uid"], oldUid)
      << "the kubelet did not register a new Node";
  EXPECT_TRUE(awaitCapacity(2, 120s)) << "on the Node registered again";
  const double restored = secondsSince(t0);
  std::cout << "[measured] Node deleted at +0 s, registered again (Ready) at +" << registered
            << " s, capacity of " << gpu_ << " right again at +" << restored << " s" << std::endl;

  const auto [afterClaim, afterDevice] = runPodAskingOne("after");
  ASSERT_FALSE(afterDevice.empty());
  EXPECT_NE(afterDevice, heldDevice) << "a device given twice";
  EXPECT_TRUE(podRunning("holder")) << podPhase("holder");
  const json heldNow = getClaim(heldClaim);
  EXPECT_EQ(heldNow.value("/status/phase"_json_pointer, std::string()), "Bound") << heldNow.dump();
  EXPECT_EQ(heldNow.value("/status/extendedResourceNames"_json_pointer, json()),
            json::array({heldDevice}));
  const std::string holderReport = report("holder", "cuda");
  EXPECT_NE(holderReport.find("ids=" + heldDevice + "-id\n"), std::string::npos) << holderReport;
}

// The class deleted while no node agent runs on the node (its DaemonSet kept off it by a node
// selector no node matches): the name stays on the node's capacity, as nobody takes it off;
// the agent that comes back removes it from capacity and allocatable, from the names it
// recorded on the node before it went away.
TEST_F(ClassTest, AClassDeletedWhileTheAgentWasAwayLeavesTheNodeWhenItComesBack) {
  device("k80");
  ASSERT_TRUE(awaitCapacity(1));

  const std::string agent = "extended-resource-node-agent";
  auto agentPods = [&] {
    return kubectlJson("get pods -n kube-system -l app.kubernetes.io/name=" + agent);
  };
  auto selectNodes = [&](json selector) {
    api_->patch(kDaemonSets, "kube-system", agent, PatchType::kMerge,
                {{"spec", {{"template", {{"spec", {{"nodeSelector", std::move(selector)}}}}}}}});
  };
  // One agent on each node.
  const size_t everyNode = nodes().size();
  auto agentReady = [&] {
    const json ds = api_->get(kDaemonSets, "kube-system", agent);
    const json pods = agentPods();
    return ds.value("/status/numberReady"_json_pointer, size_t{0}) == everyNode &&
           ds.value("/status/updatedNumberScheduled"_json_pointer, size_t{0}) == everyNode &&
           !pods.is_discarded() && pods["items"].size() == everyNode;
  };
  // Whatever happens below, the DaemonSet is left as deploy/ made it, its agent running.
  const OnScopeExit back([&] {
    try {
      selectNodes(nullptr);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "the node agent's DaemonSet not restored: " << e.what();
    }
    EXPECT_TRUE(eventually(agentReady, 120s, 500ms)) << "the node agent did not come back";
  });

  selectNodes({{"ker-e2e.example.com/no-node-agent", "true"}});
  json pods;
  ASSERT_TRUE(eventually(
      [&] {
        pods = agentPods();
        return !pods.is_discarded() && pods["items"].empty();
      },
      90s, 500ms))
      << "the node agent's pod is still there: " << pods.dump();

  api_->remove(resources::kExtendedResourceClasses, "", className_);
  ASSERT_TRUE(eventually(
      [&] {
        try {
          api_->get(resources::kExtendedResourceClasses, "", className_);
          return false;
        } catch (const ApiError& e) {
          return e.isNotFound();
        }
      },
      30s, 200ms))
      << "the class was not deleted";
  std::this_thread::sleep_for(3s);
  ASSERT_EQ(nodeShows(), std::make_pair(std::optional<int64_t>(1), std::optional<int64_t>(1)))
      << "with no agent running, the node should still show the name: " << show(nodeShows());

  const auto t0 = std::chrono::steady_clock::now();
  selectNodes(nullptr);
  std::pair<std::optional<int64_t>, std::optional<int64_t>> seen;
  EXPECT_TRUE(eventually(
      [&] {
        seen = nodeShows();
        return !seen.first && !seen.second;
      },
      60s, 200ms))
      << "60 s after the node agent was let back on the node, it shows " << show(seen) << " of "
      << gpu_ << ", whose class is gone";
  std::cout << "[measured] agent let back at +0 s; " << gpu_ << " off the node at +"
            << secondsSince(t0) << " s" << std::endl;
}

TEST_F(ClassTest, APodPlacedByAnotherSchedulerNeverStartsItsContainers) {
  device("k80");
  ASSERT_TRUE(awaitCapacity(1));
  const double refusedBefore = refusals("ClassClaimMissing");
  ASSERT_GE(refusedBefore, 0) << "the agent's metrics cannot be scraped";

  const json created =
      api_->create(resources::kPods, ns_, podAsking("rogue", 1, "another-scheduler"));
  ASSERT_EQ(created.value("/spec/schedulerName"_json_pointer, std::string()), "another-scheduler")
      << "a pod naming a scheduler keeps it";
  // Bound as that scheduler would: it knows nothing of claims.
  api_->bindPod(ns_, "rogue", created["metadata"]["uid"], node());

  const std::string why = awaitEventMessage("rogue", "Failed", "but no claim was made for it", 90s);
  ASSERT_FALSE(why.empty()) << "no ClassClaimMissing refusal for pod rogue; its events: "
                            << kubectlJson("get events -n " + ns_).dump();
  EXPECT_NE(why.find("extended-resource-node-agent"), std::string::npos) << why;
  EXPECT_NE(why.find("ExtendedResourceClass " + className_), std::string::npos) << why;
  EXPECT_NE(why.find(gpu_), std::string::npos) << why;
  double refusedAfter = 0;
  EXPECT_TRUE(eventually(
      [&] { return (refusedAfter = refusals("ClassClaimMissing")) > refusedBefore; }, 30s))
      << "extended_resource_agent_refusals_total{reason=\"ClassClaimMissing\"} stayed at "
      << refusedAfter;

  const json pod = *getPod("rogue");
  EXPECT_EQ(pod.value("/spec/nodeName"_json_pointer, std::string()), node());
  EXPECT_NE(pod.value("/status/phase"_json_pointer, std::string()), "Running")
      << pod["status"].dump();
  for (const auto& s : pod.value("/status/containerStatuses"_json_pointer, json::array())) {
    EXPECT_FALSE(s.contains("/state/running"_json_pointer)) << s.dump();
    EXPECT_FALSE(s.contains("/lastState/terminated"_json_pointer)) << "it ran once: " << s.dump();
  }
  EXPECT_TRUE(recordedClaim(pod).is_null()) << "nothing made it a claim";

  deletePod("rogue", 0);
  EXPECT_TRUE(eventually([&] { return !getPod("rogue"); }, 60s)) << "pod rogue was not removed";
}

TEST_F(ClassTest, AQuotaOnTheNameRefusesAThirdPod) {
  device("k80");
  device("k80");
  ASSERT_TRUE(awaitCapacity(2));
  api_->create(kQuotas, ns_,
               {{"apiVersion", "v1"},
                {"kind", "ResourceQuota"},
                {"metadata", {{"name", "gpus"}, {"namespace", ns_}}},
                {"spec", {{"hard", {{"requests." + gpu_, "2"}}}}}});
  json quota;
  ASSERT_TRUE(eventually(
      [&] {
        quota = api_->get(kQuotas, ns_, "gpus");
        return quota.contains("/status/hard"_json_pointer) &&
               quota["status"]["hard"].contains("requests." + gpu_);
      },
      60s))
      << "the resourcequota controller did not take up the quota: " << quota.dump();

  api_->create(resources::kPods, ns_, podAsking("a", 1));
  api_->create(resources::kPods, ns_, podAsking("b", 1));
  try {
    api_->create(resources::kPods, ns_, podAsking("c", 1));
    ADD_FAILURE() << "a third pod asking for " << gpu_ << " was admitted past the quota";
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("exceeded quota"), std::string::npos) << e.what();
  }
  for (const auto* p : {"a", "b"}) {
    EXPECT_TRUE(eventually([&] { return podRunning(p); }, 120s)) << p << ": " << podPhase(p);
  }
}

// A quota on the name counts pods' requests, not claims: a tenant could take the class's devices
// past it with a claim or template of its rawResourceName. Once the class is labelled
// claims-through-pods-only, deploy/admission-policy.yaml refuses those (create, and a spec
// edited to that resource), while a pod asking the usual way still gets its device through the
// claim the controller makes.
TEST_F(ClassTest, AClassForPodsOnlyRefusesClaimsAndTemplatesOfItsDevices) {
  device("k80");
  ASSERT_TRUE(awaitCapacity(1));
  const json before = itest::claimObject(ns_, "direct-before", resource_, 1, {{"type", "k80"}});
  api_->create(resources::kExtendedResourceClaims, ns_, before);
  // A template made before the label: it stays, but the controller makes no claim from it.
  api_->create(resources::kExtendedResourceClaimTemplates, ns_,
               {{"apiVersion", before["apiVersion"]},
                {"kind", "ExtendedResourceClaimTemplate"},
                {"metadata", {{"name", "template-before"}, {"namespace", ns_}}},
                {"spec", {{"spec", before["spec"]}}}});
  api_->patch(resources::kExtendedResourceClasses, "", className_, PatchType::kMerge,
              {{"metadata", {{"labels", {{kPodsOnlyLabel, "true"}}}}}});

  std::string refusal;
  int tries = 0;
  // The controller publishes the label in the policy's params, which the API server reads
  // through an informer: a claim created before it has them is deleted and tried again.
  const bool refused = eventually(
      [&] {
        const std::string name = "direct-" + std::to_string(++tries);
        try {
          api_->create(resources::kExtendedResourceClaims, ns_,
                       itest::claimObject(ns_, name, resource_, 1, {{"type", "k80"}}));
          api_->remove(resources::kExtendedResourceClaims, ns_, name);
          return false;
        } catch (const ApiError& e) {
          refusal = e.what();
          return true;
        }
      },
      30s, 500ms);
  ASSERT_TRUE(refused) << "a claim of " << resource_ << " was accepted for 30 s";
  EXPECT_NE(refusal.find("are given only to pods that ask for " + gpu_), std::string::npos)
      << refusal;
  EXPECT_NE(refusal.find("ExtendedResourceClass " + className_), std::string::npos) << refusal;

  try {
    const json claim = itest::claimObject(ns_, "unused", resource_, 1, {{"type", "k80"}});
    api_->create(resources::kExtendedResourceClaimTemplates, ns_,
                 {{"apiVersion", claim["apiVersion"]},
                  {"kind", "ExtendedResourceClaimTemplate"},
                  {"metadata", {{"name", "direct-template"}, {"namespace", ns_}}},
                  {"spec", {{"spec", claim["spec"]}}}});
    ADD_FAILURE() << "a template of " << resource_ << " was accepted";
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("not through a claim template"), std::string::npos)
        << e.what();
  }
  // Nor may a claim ask for them as one of its named requests, beside a resource anyone may
  // claim; a claim of requests for other resources only is accepted.
  const std::string anyones = uniqueName("anyones") + ".io/x";
  json viaRequests = itest::claimObject(ns_, "via-requests", resource_, 1);
  viaRequests["spec"] = {{"requests",
                          {{{"name", "nic"}, {"rawResourceName", anyones}},
                           {{"name", "gpu"}, {"rawResourceName", resource_}}}}};
  try {
    api_->create(resources::kExtendedResourceClaims, ns_, viaRequests);
    ADD_FAILURE() << "a claim requesting " << resource_ << " was accepted";
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("are given only to pods that ask for " + gpu_),
              std::string::npos)
        << e.what();
  }
  viaRequests["spec"]["requests"].erase(1);
  EXPECT_NO_THROW(api_->create(resources::kExtendedResourceClaims, ns_, viaRequests));
  // A claim of another resource may not be edited into one of the class's.
  json other = api_->create(resources::kExtendedResourceClaims, ns_,
                            itest::claimObject(ns_, "other", uniqueName("other") + ".io/x", 1));
  other["spec"]["rawResourceName"] = resource_;
  EXPECT_THROW(api_->update(resources::kExtendedResourceClaims, ns_, other), ApiError);
  // One made before the label is left as it is: its labels may still change.
  EXPECT_NO_THROW(api_->patch(resources::kExtendedResourceClaims, ns_, "direct-before",
                              PatchType::kMerge, {{"metadata", {{"labels", {{"team", "a"}}}}}}));
  api_->remove(resources::kExtendedResourceClaims, ns_, "direct-before");

  json templated = podAsking("templated", 0, kProfile);
  templated["metadata"]["annotations"] = {{kClaimTemplatesAnnotation, "gpu=template-before"}};
  api_->create(resources::kPods, ns_, templated);
  std::string warning;
  EXPECT_TRUE(eventually(
      [&] {
        const json events =
            api_->list(resources::kEvents, ns_, {.fieldSelector = "involvedObject.name=templated"});
        for (const auto& e : events["items"]) {
          if (e.value("reason", "") == "ClaimTemplateUnusable") {
            warning = e.value("message", "");
            return true;
          }
        }
        return false;
      },
      30s))
      << "no warning that the template serves nothing";
  EXPECT_NE(warning.find("gives only to pods that ask for " + gpu_), std::string::npos) << warning;
  EXPECT_TRUE(Pod::fromJson(api_->get(resources::kPods, ns_, "templated")).generatedClaims.empty())
      << "a claim was made from a template of the class's devices";

  api_->create(resources::kPods, ns_, podAsking("asks", 1));
  EXPECT_TRUE(eventually([&] { return podRunning("asks"); }, 120s)) << podPhase("asks");
}

// deploy/admission-policy.yaml refuses a second class for a name a class serves, naming that
// class; one for another name is accepted.
TEST_F(ClassTest, ASecondClassForTheSameNameIsRefused) {
  const std::string second = uniqueName("class");
  std::string refusal;
  // The API server reads the classes it compares with through an informer: until it has the
  // suite's class, a second one may pass; such a one is deleted and tried again.
  const bool refused = eventually(
      [&] {
        try {
          api_->create(resources::kExtendedResourceClasses, "",
                       itest::k80ClassObject(second, gpu_, resource_));
          api_->remove(resources::kExtendedResourceClasses, "", second);
          return false;
        } catch (const ApiError& e) {
          refusal = e.what();
          return true;
        }
      },
      30s, 500ms);
  ASSERT_TRUE(refused) << "a second class for " << gpu_ << " was accepted for 30 s";
  EXPECT_NE(refusal.find("ExtendedResourceClass " + className_ + " already serves " + gpu_),
            std::string::npos)
      << refusal;

  const std::string otherName = uniqueName("cls") + ".example.com/gpu";
  api_->create(resources::kExtendedResourceClasses, "",
               itest::k80ClassObject(second, otherName, resource_));
  api_->remove(resources::kExtendedResourceClasses, "", second);
}

TEST_F(ClassTest, ADeploymentsPodsEachGetADeviceAndLeaveNoClaimsWhenScaledAway) {
  const std::string d0 = device("k80");
  const std::string d1 = device("k80");
  ASSERT_TRUE(awaitCapacity(2));
  json tmpl = podAsking("unused", 1);
  tmpl["spec"]["containers"] = json::array({container("cuda", 1)});
  api_->create(kDeployments, ns_, itest::deploymentObject(ns_, "train", 2, tmpl["spec"]));
  auto running = [&] {
    std::vector<std::string> out;
    for (const auto& p : podsLabelled("app=train")) {
      if (p.value("/status/phase"_json_pointer, std::string()) == "Running" &&
          !p.contains("/metadata/deletionTimestamp"_json_pointer)) {
        out.push_back(p["metadata"]["name"]);
      }
    }
    return out;
  };
  ASSERT_TRUE(eventually([&] { return running().size() == 2; }, 180s))
      << running().size() << " running";

  std::map<std::string, std::string> holder;  // device -> pod
  for (const auto& name : running()) {
    const json pod = *getPod(name);
    EXPECT_EQ(pod.value("/spec/schedulerName"_json_pointer, std::string()), kProfile);
    const json claim = recordedClaim(pod);
    ASSERT_FALSE(claim.is_null()) << name;
    EXPECT_EQ(claim.value("/status/phase"_json_pointer, std::string()), "Bound") << claim.dump();
    const json allocated = claim.value("/status/extendedResourceNames"_json_pointer, json());
    ASSERT_EQ(allocated.size(), 1u) << claim.dump();
    const std::string dev = allocated[0];
    EXPECT_TRUE(holder.emplace(dev, name).second)
        << dev << " is allocated to both " << holder[dev] << " and " << name;
    const std::string out = report(name, "cuda");
    EXPECT_NE(out.find("ids=" + dev + "-id\n"), std::string::npos) << name << ":\n" << out;
    EXPECT_NE(out.find("node=" + containerDeviceNode(dev) + "\n"), std::string::npos) << out;
    EXPECT_EQ(out.find("node=", out.find("node=") + 1), std::string::npos)
        << name << " sees more than its device:\n"
        << out;
  }
  EXPECT_EQ(holder.size(), 2u);
  EXPECT_TRUE(holder.count(d0) == 1 && holder.count(d1) == 1);

  api_->patch(kDeployments, ns_, "train", PatchType::kMerge, {{"spec", {{"replicas", 3}}}});
  std::string third;
  ASSERT_TRUE(eventually(
      [&] {
        for (const auto& p : podsLabelled("app=train")) {
          const std::string name = p["metadata"]["name"];
          bool holds = false;
          for (const auto& [dev, pod] : holder) {
            holds = holds || pod == name;
          }
          if (!holds) {
            third = name;
            return true;
          }
        }
        return false;
      },
      60s))
      << "the Deployment made no third pod";
  std::vector<std::string> why;
  EXPECT_TRUE(
      eventually([&] { return !(why = eventMessages(third, "FailedScheduling")).empty(); }, 60s))
      << third << " is " << podPhase(third);
  if (!why.empty()) {
    std::cout << "[measured] the third pod waits: " << why.back() << std::endl;
  }
  EXPECT_FALSE(eventually([&] { return running().size() > 2; }, 5s))
      << "a third pod runs with two devices";
  EXPECT_EQ(podPhase(third), "Pending");

  api_->patch(kDeployments, ns_, "train", PatchType::kMerge, {{"spec", {{"replicas", 0}}}});
  json claims;
  EXPECT_TRUE(eventually(
      [&] {
        claims = api_->list(resources::kExtendedResourceClaims, ns_, {});
        return podsLabelled("app=train").empty() && claims["items"].empty();
      },
      120s, 500ms))
      << podsLabelled("app=train").size() << " pods and these claims left: " << claims.dump();
}

}  // namespace
}  // namespace ker::e2e

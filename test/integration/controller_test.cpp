// The controller binary against a real kube-apiserver and kube-scheduler, with the extender
// binding pods: releases, Lost claims, orphan repair, the pending-pod nudge measured end to
// end, and leader hand-over.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include "common/api_error.h"
#include "common/informer.h"
#include "extender_fixture.h"
#include "model/objects.h"
#include "model/suitability.h"
#include "template_helpers.h"

namespace ker::itest {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

long long millisSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

class ControllerTest : public ExtenderSuite {
 protected:
  static constexpr auto kGrace = 3s;

  static void SetUpTestSuite() {
    setUpSuite([] {
      // Topology-aware scoring by the devices' numaNode; devices without it (most tests') form
      // one island per node, which ranks nodes as plain binpack does.
      startStack({.extenderArgs = {"--topology-property=numaNode"}});
      if (env_ != nullptr) {
        // The credentials and Lease deploy/deployment.yaml gives the controller, so a missing
        // permission fails here rather than in a user's cluster.
        controller_ = startController(controllerPort_);
      }
    });
  }

  static void TearDownTestSuite() {
    standby_.reset();
    controller_.reset();
    stopStack();
  }

  // Starts a controller instance serving metrics on a fresh port; waits until it is ready.
  static std::unique_ptr<ChildProcess> startController(int& port) {
    port = freePort();
    return ExtenderSuite::startController(port, extraArgs_);
  }

  static std::string metricsOf(int port) {
    httplib::Client client("127.0.0.1", port);
    auto res = client.Get("/metrics");
    return res ? res->body : std::string();
  }

  static bool leads(int port) {
    return metricValue(metricsOf(port), "extended_resource_controller_leader") == 1;
  }

  void SetUp() override {
    ExtenderSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) {
      return;
    }
    ASSERT_TRUE(alive(controller_, "controller"));
    ASSERT_TRUE(eventually([] { return leads(controllerPort_); }, 30s)) << controller_->logTail();
    node_ = makeNodes(1)[0];
  }

  // Leaves the cluster as it found it: pods go, the controller releases their claims, then
  // claims and devices go. Other suites check invariants over the whole cluster.
  void TearDown() override {
    if (api_ == nullptr || ns_.empty()) {
      return;
    }
    deleteAllPodsNow(*api_, ns_);
    eventually(
        [&] {
          const json claims = api_->list(resources::kExtendedResourceClaims, ns_, {});
          for (const auto& c : claims["items"]) {
            if (c.value("/status/phase"_json_pointer, "Pending") != "Pending") {
              return false;
            }
          }
          return true;
        },
        10s);
    removeClaimsAndDevices();
  }

  // Creates a device of `resource` on `node` under PCIe root `root`; returns its name.
  std::string deviceUnderRoot(const std::string& node, const std::string& resource,
                              const std::string& root) {
    const std::string name = uniqueName("dev");
    api_->create(resources::kExtendedResources, "",
                 deviceObject(name, node, resource, {{"pcieRoot", root}}));
    return name;
  }

  // Creates claim `claim` for `count` devices and pod `pod` holding it.
  json createPod(const std::string& pod, const std::string& claim, int count = 1) {
    api_->create(resources::kExtendedResourceClaims, ns_,
                 claimObject(ns_, claim, resource_, count, {{"type", "k80"}}));
    return api_->create(resources::kPods, ns_, podObject(ns_, pod, {claim}, schedulerName_));
  }

  std::string claimPhase(const std::string& claim) {
    return api_->get(resources::kExtendedResourceClaims, ns_, claim)
        .value("/status/phase"_json_pointer, "");
  }
  json claimStatus(const std::string& claim) {
    return api_->get(resources::kExtendedResourceClaims, ns_, claim).value("status", json());
  }
  // Whether the object is gone from the API server.
  bool gone(const Resource& res, const std::string& ns, const std::string& name) {
    try {
      api_->get(res, ns, name);
      return false;
    } catch (const ApiError& e) {
      return e.isNotFound();
    }
  }
  std::string devicePhase(const std::string& device) {
    return api_->get(resources::kExtendedResources, "", device)
        .value("/status/phase"_json_pointer, "");
  }
  // The claim is Pending and each device free to the next bind (offerable): Available, or
  // freed by the claim's release before its own status says so.
  bool released(const std::string& claim, const std::vector<std::string>& devices) {
    const auto c =
        ExtendedResourceClaim::fromJson(api_->get(resources::kExtendedResourceClaims, ns_, claim));
    if (c.phase != ClaimPhase::kPending) {
      return false;
    }
    const std::optional<ClaimAllocation> allocation = allocationOf(c);
    for (const auto& d : devices) {
      if (!offerable(ExtendedResource::fromJson(api_->get(resources::kExtendedResources, "", d)),
                     allocation)) {
        return false;
      }
    }
    return true;
  }

  // kube-scheduler tried the pod and parked it as unschedulable: only a cluster event brings it
  // back.
  bool waitParked(const std::string& pod) {
    return eventually(
        [&] {
          const json conditions =
              getPod(pod).value("/status/conditions"_json_pointer, json::array());
          for (const auto& c : conditions) {
            if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False" &&
                c.value("reason", "") == "Unschedulable") {
              return true;
            }
          }
          return false;
        },
        30s);
  }

  std::string logs() {
    return "controller:\n" + controller_->logTail() + "\nextender:\n" + extender_->logTail();
  }

  std::string node_;

  static std::unique_ptr<ChildProcess> controller_;
  static std::unique_ptr<ChildProcess> standby_;
  static int controllerPort_;
  static std::vector<std::string> extraArgs_;  // for the controllers a suite starts
};

std::vector<std::string> ControllerTest::extraArgs_;

std::unique_ptr<ChildProcess> ControllerTest::controller_;
std::unique_ptr<ChildProcess> ControllerTest::standby_;
int ControllerTest::controllerPort_ = 0;

// With --protect-in-use=false: a claim or device deleted while in use goes at once, and the
// controller deals with what it leaves behind.
class UnprotectedControllerTest : public ControllerTest {
 protected:
  static void SetUpTestSuite() {
    extraArgs_ = {"--protect-in-use=false"};
    ControllerTest::SetUpTestSuite();
  }
  static void TearDownTestSuite() {
    ControllerTest::TearDownTestSuite();
    extraArgs_.clear();
  }
};

TEST_F(ControllerTest, DeletingAPodReleasesItsClaimAndDevicesWithinASecond) {
  const std::vector<std::string> devices = {makeDevice(node_), makeDevice(node_)};
  createPod("web", "two", 2);
  ASSERT_TRUE(waitBound("web")) << logs();
  ASSERT_EQ(claimPhase("two"), "Bound");

  const auto deleted = Clock::now();
  deletePodNow(*api_, ns_, "web");
  ASSERT_TRUE(eventually([&] { return released("two", devices); }, 10s, 10ms)) << logs();
  const auto took = millisSince(deleted);
  std::cout << "pod deletion -> claim and devices released: " << took << " ms\n";
  RecordProperty("release_ms", std::to_string(took));
  EXPECT_LT(took, 1000);

  const json status = claimStatus("two");
  EXPECT_FALSE(status.contains("podRef"));
  EXPECT_FALSE(status.contains("extendedResourceNames"));
  EXPECT_EQ(status.value("reason", ""), "Released");
  EXPECT_EQ(invariantViolations(), "");

  // The release wrote the claim alone; each device says so itself after the write delay.
  for (const auto& d : devices) {
    ASSERT_TRUE(eventually([&] { return devicePhase(d) == "Available"; }, 30s)) << logs();
    const json s = api_->get(resources::kExtendedResources, "", d)["status"];
    EXPECT_EQ(s.value("reason", ""), "Released") << d;
    EXPECT_EQ(s.value("/releasedFrom/name"_json_pointer, ""), "two") << d;
    EXPECT_FALSE(s.contains("allocation")) << d;
  }
  EXPECT_EQ(invariantViolations(), "");
}

// The conditions ride on the status writes the bind and the release make anyway, and the API
// server keeps them (the CRD's schema).
// A TCP connection to 127.0.0.1:port from another loopback address, so that one test is
// several peers. -1 when it cannot be made.
int connectFrom(const char* from, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  ::inet_pton(AF_INET, from, &local.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The process's peak resident memory (VmHWM), in KiB.
long peakKib(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      return std::stol(line.substr(6));
    }
  }
  return -1;
}

// Any pod the cluster's NetworkPolicy lets through reaches the controller's metrics port (the
// node agent's has the same settings, probeServerOptions). Two 62 MB POSTs and twenty
// connections that never finish their request, from two peers, neither grow the controller's
// memory nor keep the kubelet's probes from a prompt answer.
TEST_F(ControllerTest, ItsMetricsPortWithstandsLargeAndSlowRequests) {
  const int pid = controller_->pid();
  const long before = peakKib(pid);
  ASSERT_GT(before, 0);
  std::vector<int> slow;
  for (int i = 0; i < 20; ++i) {
    const int fd = connectFrom("127.0.0.3", controllerPort_);
    ASSERT_GE(fd, 0);
    const std::string partial = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    ::send(fd, partial.data(), partial.size(), MSG_NOSIGNAL);
    slow.push_back(fd);
  }
  constexpr size_t kBody = 62'000'000;
  std::atomic<size_t> bodyBytesSent{0};
  std::vector<std::thread> senders;
  for (int i = 0; i < 2; ++i) {
    senders.emplace_back([&] {
      const int fd = connectFrom("127.0.0.2", controllerPort_);
      if (fd < 0) {
        return;
      }
      const std::string head =
          "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(kBody) +
          "\r\n\r\n";
      ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
      const std::string block(64 * 1024, 'x');
      for (size_t sent = 0; sent < kBody;) {
        const ssize_t n = ::send(fd, block.data(), block.size(), MSG_NOSIGNAL);
        if (n <= 0) {
          break;
        }
        sent += static_cast<size_t>(n);
        bodyBytesSent += static_cast<size_t>(n);
      }
      ::close(fd);
    });
  }
  int answered = 0;
  long slowestMs = 0;
  for (int i = 0; i < 10; ++i) {
    httplib::Client probe("127.0.0.1", controllerPort_);
    probe.set_connection_timeout(1s);
    probe.set_read_timeout(1s);
    const auto start = Clock::now();
    auto res = probe.Get("/healthz");
    slowestMs = std::max<long>(slowestMs, static_cast<long>(millisSince(start)));
    answered += res && res->status == 200 ? 1 : 0;
    std::this_thread::sleep_for(200ms);
  }
  for (auto& t : senders) {
    t.join();
  }
  for (const int fd : slow) {
    ::close(fd);
  }
  const long after = peakKib(pid);
  std::cout << "large and slow requests: peak memory " << before << " -> " << after
            << " KiB, body bytes taken before the refusal " << bodyBytesSent.load()
            << ", probes answered " << answered << "/10, slowest " << slowestMs << " ms\n";
  EXPECT_EQ(answered, 10) << "a probe went unanswered within its 1 s timeout\n"
                          << controller_->logTail();
  EXPECT_LT(after - before, 16 * 1024) << "the bodies were read into memory";
  EXPECT_LT(bodyBytesSent.load(), kBody) << "a body was taken whole";
}

TEST_F(ControllerTest, ConditionsFollowTheBindAndTheRelease) {
  const std::string device = makeDevice(node_);
  auto condition = [](const json& status, const std::string& type) {
    for (const auto& c : status.value("conditions", json::array())) {
      if (c.value("type", "") == type) {
        return c;
      }
    }
    return json();
  };
  createPod("web", "c");
  ASSERT_TRUE(waitBound("web")) << logs();
  const json bound = condition(claimStatus("c"), "Allocated");
  EXPECT_EQ(bound.value("status", ""), "True") << claimStatus("c").dump();
  EXPECT_EQ(bound.value("reason", ""), "Bound");
  EXPECT_NE(bound.value("message", "").find(device), std::string::npos) << bound.dump();
  EXPECT_GE(bound.value("observedGeneration", 0), 1);
  EXPECT_EQ(condition(claimStatus("c"), "Lost").value("status", ""), "False");
  const json deviceStatus = api_->get(resources::kExtendedResources, "", device)["status"];
  EXPECT_EQ(condition(deviceStatus, "Allocated").value("status", ""), "True");
  EXPECT_EQ(condition(deviceStatus, "Healthy").value("status", ""), "True");

  deletePodNow(*api_, ns_, "web");
  ASSERT_TRUE(eventually([&] { return released("c", {device}); }, 10s)) << logs();
  const json freed = condition(claimStatus("c"), "Allocated");
  EXPECT_EQ(freed.value("status", ""), "False") << claimStatus("c").dump();
  EXPECT_EQ(freed.value("reason", ""), "Pending");
  EXPECT_FALSE(freed.value("lastTransitionTime", "").empty());
  const json lost = condition(claimStatus("c"), "Lost");
  EXPECT_EQ(lost.value("status", ""), "False");
  // The device's own status (and so its conditions) follows after the write delay.
  ASSERT_TRUE(eventually([&] { return devicePhase(device) == "Available"; }, 30s)) << logs();
  const json freedDevice = api_->get(resources::kExtendedResources, "", device)["status"];
  EXPECT_EQ(condition(freedDevice, "Allocated").value("reason", ""), "Available");
  EXPECT_EQ(invariantViolations(), "");
}

TEST_F(ControllerTest, APodWaitingForTheDeviceIsBoundOnceItsHolderIsDeleted) {
  const std::string device = makeDevice(node_);
  createPod("first", "first-claim");
  ASSERT_TRUE(waitBound("first")) << logs();
  createPod("second", "second-claim");
  ASSERT_TRUE(waitParked("second")) << logs();

  const auto deleted = Clock::now();
  deletePodNow(*api_, ns_, "first");
  ASSERT_TRUE(waitBound("second", 30s)) << logs();
  const auto took = millisSince(deleted);
  std::cout << "holder deleted -> waiting pod bound: " << took << " ms\n";
  RecordProperty("delete_to_binding_ms", std::to_string(took));
  EXPECT_LT(took, 15000) << "kube-scheduler's pod backoff is at most 10s";
  EXPECT_EQ(claimPhase("first-claim"), "Pending");
  EXPECT_EQ(claimPhase("second-claim"), "Bound");
  EXPECT_EQ(invariantViolations(), "");
}

// With the devices' own write put off for an hour: the claim's release alone frees them.
class ReleaseThroughClaimTest : public ControllerTest {
 protected:
  static void SetUpTestSuite() {
    extraArgs_ = {"--freed-device-write-delay=1h"};
    ControllerTest::SetUpTestSuite();
  }
  static void TearDownTestSuite() {
    ControllerTest::TearDownTestSuite();
    extraArgs_.clear();
  }
};

// The waiting pod gets the device its holder left, by the claim's release and the claim's
// event alone: the device's own status still says Bound to the first claim until the second
// bind writes it. A third pod, of another claim, still gets nothing: the device is the
// second's, and its claim now holds it.
TEST_F(ReleaseThroughClaimTest, AReleasedClaimsDeviceGoesToTheNextPodBeforeItsOwnWrite) {
  const std::string device = makeDevice(node_);
  createPod("first", "first-claim");
  ASSERT_TRUE(waitBound("first")) << logs();
  const json bound = api_->get(resources::kExtendedResources, "", device)["status"];
  EXPECT_EQ(bound.value("allocation", 0), 1);
  EXPECT_EQ(claimStatus("first-claim").value("allocation", 0), 1);
  createPod("second", "second-claim");
  ASSERT_TRUE(waitParked("second")) << logs();

  // Every version of the device the API server stores, as its watch delivers them.
  std::mutex mu;
  std::vector<std::string> versions;
  Informer<ExtendedResource> watched(*api_, resources::kExtendedResources,
                                     {.fieldSelector = "metadata.name=" + device});
  watched.addHandlers({.onUpdate = [&](const auto&, const auto& d) {
    std::lock_guard lock(mu);
    versions.push_back(std::string(toString(d->phase)) + " " +
                       (d->claimRef ? d->claimRef->name : std::string("-")));
  }});
  watched.start();
  ASSERT_TRUE(watched.waitForSync(10s));
  deletePodNow(*api_, ns_, "first");
  ASSERT_TRUE(waitBound("second", 30s)) << logs();
  ASSERT_TRUE(eventually(
      [&] {
        std::lock_guard lock(mu);
        return !versions.empty();
      },
      10s));
  watched.stop();
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(versions, std::vector<std::string>{"Bound second-claim"})
        << "one write: the second bind's, over the device still naming the first claim";
  }
  const json taken = api_->get(resources::kExtendedResources, "", device)["status"];
  EXPECT_EQ(taken.value("/claimRef/name"_json_pointer, ""), "second-claim");
  EXPECT_EQ(taken.value("allocation", 0), 1);
  EXPECT_EQ(claimPhase("second-claim"), "Bound");

  createPod("third", "third-claim");
  EXPECT_TRUE(waitParked("third")) << "the device is the second pod's";
  EXPECT_EQ(invariantViolations(), "");
}

TEST_F(UnprotectedControllerTest, TheNudgeAloneBringsAParkedPodBackWhenDevicesFree) {
  const std::string device = makeDevice(node_);
  ASSERT_TRUE(eventually([&] { return devicePhase(device) == "Available"; }, 10s)) << logs();
  // Out of offer, as the node agent's health check leaves a free device that fails it.
  auto setPhase = [&](const std::string& phase, const std::string& reason) {
    json d = api_->get(resources::kExtendedResources, "", device);
    d["status"] = {{"phase", phase}, {"reason", reason}};
    api_->updateStatus(resources::kExtendedResources, "", d);
  };
  setPhase("Pending", "DeviceUnhealthy");
  createPod("second", "second-claim");
  ASSERT_TRUE(waitParked("second")) << logs();
  const double nudgesBefore =
      metricValue(metricsOf(controllerPort_), "extended_resource_controller_pod_nudges_total");

  // kube-scheduler does not watch claims or devices: the device healthy again is offered
  // without any event it sees, so only the controller's nudge can bring "second" back before
  // the 5-minute flush of unschedulable pods.
  setPhase("Available", "");
  const auto freed = Clock::now();
  ASSERT_TRUE(waitBound("second", 30s)) << logs();
  const auto took = millisSince(freed);
  std::cout << "device freed -> parked pod bound: " << took << " ms\n";
  RecordProperty("release_to_binding_ms", std::to_string(took));
  EXPECT_LT(took, 15000) << "kube-scheduler's pod backoff is at most 10s";

  EXPECT_TRUE(
      getPod("second")["metadata"]["annotations"].contains("extendedresource.io/requeue-at"));
  EXPECT_GT(
      metricValue(metricsOf(controllerPort_), "extended_resource_controller_pod_nudges_total"),
      nudgesBefore);
  EXPECT_EQ(claimPhase("second-claim"), "Bound");
}

TEST_F(UnprotectedControllerTest, WithoutTheNudgeAParkedPodIgnoresAFreedDevice) {
  const std::string device = makeDevice(node_);
  createPod("first", "first-claim");
  ASSERT_TRUE(waitBound("first")) << logs();
  createPod("second", "second-claim");
  ASSERT_TRUE(waitParked("second")) << logs();

  // The control: no controller, the device freed by hand. kube-scheduler sees no event.
  controller_->stop();
  api_->remove(resources::kExtendedResourceClaims, ns_, "first-claim");
  json d = api_->get(resources::kExtendedResources, "", device);
  d["status"] = {{"phase", "Available"}};
  api_->updateStatus(resources::kExtendedResources, "", d);
  EXPECT_FALSE(waitBound("second", 5s)) << "bound without any nudge";

  // The controller starts, sees the Available device and nudges the parked pod.
  const auto restarted = Clock::now();
  controller_ = startController(controllerPort_);
  ASSERT_TRUE(waitBound("second", 30s)) << logs();
  const auto took = millisSince(restarted);
  std::cout << "controller restarted -> parked pod bound: " << took << " ms\n";
  EXPECT_LT(took, 15000);
  EXPECT_TRUE(
      getPod("second")["metadata"]["annotations"].contains("extendedresource.io/requeue-at"));
}

TEST_F(ControllerTest, AFinishedPodReleasesItsClaim) {
  const std::string device = makeDevice(node_);
  createPod("job", "job-claim");
  ASSERT_TRUE(waitBound("job")) << logs();
  json pod = getPod("job");
  pod["status"]["phase"] = "Succeeded";
  api_->updateStatus(resources::kPods, ns_, pod);
  EXPECT_TRUE(eventually([&] { return released("job-claim", {device}); }, 10s)) << logs();
}

TEST_F(ControllerTest, DeletingABoundDeviceMakesItsClaimLost) {
  const std::vector<std::string> devices = {makeDevice(node_), makeDevice(node_)};
  createPod("web", "two", 2);
  ASSERT_TRUE(waitBound("web")) << logs();
  const auto allocated = claimStatus("two")["extendedResourceNames"];
  const std::string gone = allocated[0];
  const std::string kept = allocated[1];
  api_->remove(resources::kExtendedResources, "", gone);

  ASSERT_TRUE(eventually([&] { return claimPhase("two") == "Lost"; }, 10s)) << logs();
  const json status = claimStatus("two");
  EXPECT_NE(status.value("message", "").find(gone), std::string::npos) << status.dump();
  EXPECT_EQ(status["extendedResourceNames"], json({kept}));
  EXPECT_EQ(devicePhase(kept), "Bound") << "the pod still uses it";

  // When the pod goes, what is left is released.
  deletePodNow(*api_, ns_, "web");
  EXPECT_TRUE(eventually([&] { return released("two", {kept}); }, 10s)) << logs();
}

// A device deleted and created again under its name while its pod runs (a device plugin
// re-registering, say) is the device that pod uses: it must go back to that pod's claim and
// never to a second pod, even in the moments before the controller has seen it.
TEST_F(UnprotectedControllerTest, ADeviceRecreatedUnderItsNameGoesBackToThePodThatHadIt) {
  const std::string device = makeDevice(node_);
  createPod("web", "first-claim");
  ASSERT_TRUE(waitBound("web")) << logs();
  auto create = [&] {
    api_->create(resources::kExtendedResources, "",
                 deviceObject(device, node_, resource_, {{"type", "k80"}}));
  };
  auto boundTo = [&](const std::string& claim) {
    const json d = api_->get(resources::kExtendedResources, "", device);
    return d.value("/status/phase"_json_pointer, "") == "Bound" &&
           d.value("/status/claimRef/name"_json_pointer, "") == claim;
  };

  // With the controller stopped only the extender stands between the new object, which has
  // no status, and a second pod; that pod comes once the extender has seen it come back.
  controller_->stop();
  auto cachedDevices = [&] {
    return metricValue(extenderMetrics(), "extended_resource_scheduler_cached_devices");
  };
  const double cached = cachedDevices();
  api_->remove(resources::kExtendedResources, "", device);
  ASSERT_TRUE(eventually([&] { return cachedDevices() == cached - 1; }, 10s));
  create();
  ASSERT_TRUE(eventually([&] { return cachedDevices() == cached; }, 10s));
  createPod("second", "second-claim");
  ASSERT_TRUE(waitParked("second")) << logs();
  EXPECT_EQ(devicePhase(device), "");
  controller_ = startController(controllerPort_);
  ASSERT_TRUE(eventually([&] { return boundTo("first-claim"); }, 10s)) << logs();
  EXPECT_EQ(claimPhase("first-claim"), "Bound");
  EXPECT_EQ(invariantViolations(), "");

  // With it running: the deleted device makes the claim Lost, which keeps the name; the
  // device back makes it Bound again.
  api_->remove(resources::kExtendedResources, "", device);
  ASSERT_TRUE(eventually([&] { return claimPhase("first-claim") == "Lost"; }, 10s)) << logs();
  EXPECT_EQ(claimStatus("first-claim")["lostExtendedResourceNames"], json({device}));
  create();
  ASSERT_TRUE(eventually([&] { return claimPhase("first-claim") == "Bound"; }, 10s)) << logs();
  EXPECT_TRUE(boundTo("first-claim"));
  const json status = claimStatus("first-claim");
  EXPECT_EQ(status["extendedResourceNames"], json({device}));
  EXPECT_FALSE(status.contains("lostExtendedResourceNames"));
  EXPECT_EQ(status.value("reason", ""), "Recovered");
  EXPECT_EQ(invariantViolations(), "");

  // Once its pod goes, the device is the waiting pod's.
  deletePodNow(*api_, ns_, "web");
  ASSERT_TRUE(waitBound("second", 30s)) << logs();
  EXPECT_TRUE(boundTo("second-claim"));
}

// Without protection (or with the finalizer taken off) a claim deleted under its pod goes at
// once, but the device stays with the pod it was given to: the device names its holders. A
// second pod gets it only once the first is gone.
TEST_F(UnprotectedControllerTest, DeletingABoundClaimLeavesItsDeviceWithItsPodUntilThePodIsGone) {
  const std::string device = makeDevice(node_);
  createPod("web", "c");
  ASSERT_TRUE(waitBound("web")) << logs();
  ASSERT_EQ(devicePhase(device), "Bound");
  const json bound = api_->get(resources::kExtendedResources, "", device);
  EXPECT_EQ(bound.value("/status/holders/0/name"_json_pointer, ""), "web") << bound.dump();
  EXPECT_EQ(bound.value("/status/holders/0/uid"_json_pointer, ""),
            getPod("web").value("/metadata/uid"_json_pointer, ""));

  api_->remove(resources::kExtendedResourceClaims, ns_, "c");
  ASSERT_TRUE(eventually([&] { return gone(resources::kExtendedResourceClaims, ns_, "c"); }, 10s))
      << logs();
  createPod("second", "c2");
  ASSERT_TRUE(waitParked("second")) << logs();
  EXPECT_FALSE(eventually([&] { return devicePhase(device) != "Bound"; }, 5s))
      << "the device of a pod that still runs was freed\n"
      << logs();
  EXPECT_EQ(getPod("second").value("/spec/nodeName"_json_pointer, ""), "");

  const auto deleted = Clock::now();
  deletePodNow(*api_, ns_, "web");
  ASSERT_TRUE(waitBound("second", 30s)) << logs();
  std::cout << "holder deleted -> device given to the waiting pod: " << millisSince(deleted)
            << " ms\n";
  EXPECT_EQ(api_->get(resources::kExtendedResources, "", device)
                .value("/status/claimRef/name"_json_pointer, ""),
            "c2");
  EXPECT_EQ(invariantViolations(), "");
}

// The node agent creates its devices with the protection finalizer, and a cluster where
// protection ran keeps the finalizers it put on: with protection off, neither holds a deletion.
TEST_F(UnprotectedControllerTest, AProtectionFinalizerAlreadyOnHoldsNoDeletion) {
  const std::string device = uniqueName("dev");
  json published = deviceObject(device, node_, resource_, {{"type", "k80"}});
  published["metadata"]["finalizers"] = {kDeviceProtectionFinalizer};
  api_->create(resources::kExtendedResources, "", published);
  createPod("web", "c");
  ASSERT_TRUE(waitBound("web")) << logs();
  ASSERT_EQ(devicePhase(device), "Bound");
  api_->patch(resources::kExtendedResourceClaims, ns_, "c", PatchType::kMerge,
              {{"metadata", {{"finalizers", {kClaimProtectionFinalizer}}}}});
  EXPECT_TRUE(
      api_->get(resources::kExtendedResources, "", device)["metadata"].contains("finalizers"))
      << "not deleting: left as it is";

  api_->remove(resources::kExtendedResources, "", device);
  ASSERT_TRUE(eventually([&] { return claimPhase("c") == "Lost"; }, 10s)) << logs();
  EXPECT_TRUE(eventually([&] { return gone(resources::kExtendedResources, "", device); }, 10s))
      << "the device in use went at once\n"
      << logs();

  api_->remove(resources::kExtendedResourceClaims, ns_, "c");
  EXPECT_TRUE(eventually([&] { return gone(resources::kExtendedResourceClaims, ns_, "c"); }, 10s))
      << "the claim its pod holds went at once\n"
      << logs();
  // A pod running without its claim is what deleting it without protection leaves.
  deletePodNow(*api_, ns_, "web");
  EXPECT_TRUE(eventually([&] { return invariantViolations().empty(); }, 10s))
      << invariantViolations();
}

TEST_F(ControllerTest, AHalfWrittenBindIsRepairedOnlyAfterTheGracePeriod) {
  const std::string device = makeDevice(node_);
  const json claim = api_->create(resources::kExtendedResourceClaims, ns_,
                                  claimObject(ns_, "c", resource_, 1, {{"type", "k80"}}));
  // The controller first gives the new device its Available status and its protection
  // finalizer; writing over it before then would race those writes.
  ASSERT_TRUE(eventually(
      [&] {
        const json d = api_->get(resources::kExtendedResources, "", device);
        return d.value("/status/phase"_json_pointer, "") == "Available" &&
               d.value("/metadata/finalizers"_json_pointer, json::array()) ==
                   json::array({kDeviceProtectionFinalizer});
      },
      10s))
      << logs();
  // What an extender that died between its device write and its claim write leaves behind.
  json d = api_->get(resources::kExtendedResources, "", device);
  d["status"] = {
      {"phase", "Bound"},
      {"claimRef", {{"namespace", ns_}, {"name", "c"}, {"uid", claim["metadata"]["uid"]}}}};
  api_->updateStatus(resources::kExtendedResources, "", d);
  const auto written = Clock::now();

  EXPECT_FALSE(eventually([&] { return devicePhase(device) == "Available"; }, 1500ms))
      << "repaired within the grace period";
  ASSERT_TRUE(eventually([&] { return devicePhase(device) == "Available"; }, 15s)) << logs();
  EXPECT_GE(millisSince(written), 2900);
}

TEST_F(ControllerTest, ANewDeviceWithoutStatusShowsAvailable) {
  const std::string device = makeDevice(node_);
  EXPECT_TRUE(eventually([&] { return devicePhase(device) == "Available"; }, 10s)) << logs();
}

// A free device whose node has no Node object is taken out of offer after the grace period, and
// offered again once the Node is registered; a device of a registered node is left alone.
TEST_F(ControllerTest, AFreeDeviceOfANodeWithoutANodeObjectIsPendingUntilTheNodeRegisters) {
  const std::string ghost = uniqueName("ghost");
  auto labelled = [&](const std::string& node) {
    const std::string name = uniqueName("dev");
    nlohmann::json d = deviceObject(name, node, resource_, {{"type", "k80"}});
    d["metadata"]["labels"] = {{kNodeLabel, node}};
    api_->create(resources::kExtendedResources, "", d);
    return name;
  };
  const std::string device = labelled(ghost);
  const std::string registered = labelled(node_);
  const auto created = Clock::now();
  auto reason = [&](const std::string& name) {
    return api_->get(resources::kExtendedResources, "", name)
        .value("/status/reason"_json_pointer, "");
  };
  auto parked = [&] {
    return devicePhase(device) == "Pending" && reason(device) == "NodeNotRegistered";
  };

  ASSERT_TRUE(eventually([&] { return devicePhase(device) == "Available"; }, 10s)) << logs();
  ASSERT_TRUE(eventually(parked, 15s)) << logs();
  EXPECT_GE(millisSince(created), 2900) << "parked within the grace period";
  EXPECT_EQ(devicePhase(registered), "Available");
  EXPECT_EQ(reason(registered), "");

  // Gone again whatever fails below, so that no other test's pod is placed on it.
  struct NodeRemover {
    std::string name;
    ~NodeRemover() {
      try {
        removeIgnoringMissing(resources::kNodes, "", name);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "could not delete node " << name << ": " << e.what();
      }
    }
  } remover{ghost};
  api_->create(resources::kNodes, "", nodeObject(ghost));
  ASSERT_TRUE(eventually([&] { return devicePhase(device) == "Available"; }, 10s)) << logs();
  EXPECT_EQ(reason(device), "");

  api_->remove(resources::kNodes, "", ghost);
  EXPECT_TRUE(eventually(parked, 15s)) << logs();
  EXPECT_EQ(invariantViolations(), "");
}

// Objects the API accepts but the parser rejects: each gets a reason (or, for a pod, an event)
// and none of them stops the others from being served.
TEST_F(ControllerTest, InvalidObjectsAreReportedAndBlockNothing) {
  const json valuelessIn = {{"key", "type"}, {"operator", "In"}};
  const std::string badDevice = uniqueName("bad-dev");
  json d = deviceObject(badDevice, node_, resource_, {{"type", "k80"}});
  d["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"] =
      json::array({valuelessIn});
  api_->create(resources::kExtendedResources, "", d);
  json c = claimObject(ns_, "bad-claim", resource_, 1, {});
  c["spec"]["metadataRequirements"] = {{"matchExpressions", json::array({valuelessIn})}};
  api_->create(resources::kExtendedResourceClaims, ns_, c);
  json pod = podObject(ns_, "garbled", {"x"}, schedulerName_);
  pod["metadata"]["annotations"][kClaimsAnnotation] = "Not_A_Claim!";
  api_->create(resources::kPods, ns_, pod);

  auto status = [&](const Resource& res, const std::string& ns, const std::string& name) {
    return api_->get(res, ns, name).value("status", json::object());
  };
  ASSERT_TRUE(eventually(
      [&] {
        return status(resources::kExtendedResources, "", badDevice).value("reason", "") ==
                   "Invalid" &&
               status(resources::kExtendedResourceClaims, ns_, "bad-claim").value("reason", "") ==
                   "Invalid";
      },
      10s))
      << logs();
  EXPECT_NE(status(resources::kExtendedResources, "", badDevice).value("message", "").find("In"),
            std::string::npos);
  EXPECT_EQ(status(resources::kExtendedResources, "", badDevice).value("phase", ""), "Available");
  ASSERT_TRUE(eventually(
      [&] {
        const json events = api_->list(resources::kEvents, ns_, {});
        for (const auto& e : events["items"]) {
          if (e["involvedObject"].value("name", "") == "garbled" &&
              e.value("reason", "") == "InvalidClaims") {
            return e.value("type", "") == "Warning";
          }
        }
        return false;
      },
      10s))
      << logs();

  const std::string device = makeDevice(node_);
  createPod("web", "good");
  ASSERT_TRUE(waitBound("web")) << logs();
  EXPECT_EQ(claimStatus("good")["extendedResourceNames"], json({device}));
  deletePodNow(*api_, ns_, "web");
  EXPECT_TRUE(eventually([&] { return released("good", {device}); }, 10s)) << logs();
}

// ---- claims made from templates (docs/templates.md) ----

TEST_F(ControllerTest, PodsNamingOneTemplateEachGetAClaimOfTheirOwnAndDistinctDevices) {
  std::vector<std::string> matching = {makeDevice(node_), makeDevice(node_), makeDevice(node_)};
  makeDevice(node_, "p100");
  api_->create(resources::kExtendedResourceClaimTemplates, ns_,
               templateObject(ns_, "gpu", resource_));
  for (int i = 0; i < 3; ++i) {
    json pod = podObject(ns_, "web-" + std::to_string(i), {}, schedulerName_);
    pod["metadata"]["annotations"] = {{kClaimTemplatesAnnotation, "gpu=gpu"}};
    api_->create(resources::kPods, ns_, pod);
  }
  std::vector<json> pods;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(waitBound("web-" + std::to_string(i))) << logs();
    pods.push_back(getPod("web-" + std::to_string(i)));
  }
  std::sort(matching.begin(), matching.end());
  EXPECT_EQ(checkTemplatePods(*api_, ns_, pods), matching);
  EXPECT_EQ(api_->list(resources::kExtendedResourceClaims, ns_, {})["items"].size(), 3u);

  // Its pod gone, a generated claim is released like any other (without a garbage collector
  // it stays, Pending).
  ASSERT_EQ(generatedClaimsOf(*api_, ns_, pods[0]).size(), 1u);
  const std::string claim = generatedClaimsOf(*api_, ns_, pods[0])[0]["metadata"]["name"];
  const std::vector<std::string> held = claimStatus(claim)["extendedResourceNames"];
  deletePodNow(*api_, ns_, "web-0");
  EXPECT_TRUE(eventually([&] { return released(claim, held); }, 10s)) << logs();
  EXPECT_EQ(claimStatus(claim).value("reason", ""), "Released");
  EXPECT_EQ(invariantViolations(), "");
}

TEST_F(ControllerTest, APodWaitsForItsTemplateAndIsBoundOnceTheClaimIsMade) {
  const std::string device = makeDevice(node_);
  json pod = podObject(ns_, "early", {}, schedulerName_);
  pod["metadata"]["annotations"] = {{kClaimTemplatesAnnotation, "gpu=later"}};
  api_->create(resources::kPods, ns_, pod);
  ASSERT_TRUE(waitParked("early")) << logs();
  bool saidWhy = false;
  eventually(
      [&] {
        const json events = api_->list(resources::kEvents, ns_, {});
        for (const auto& e : events["items"]) {
          if (e["involvedObject"].value("name", "") == "early" &&
              e.value("reason", "") == "FailedScheduling" &&
              e.value("message", "")
                      .find("waiting for the controller to create the claim for "
                            "template entry gpu") != std::string::npos) {
            saidWhy = true;
          }
        }
        return saidWhy;
      },
      10s);
  EXPECT_TRUE(saidWhy) << "the FailedScheduling event names the wait";
  bool warned = false;
  eventually(
      [&] {
        const json events = api_->list(resources::kEvents, ns_, {});
        for (const auto& e : events["items"]) {
          if (e["involvedObject"].value("name", "") == "early" &&
              e.value("reason", "") == "ClaimTemplateUnusable" &&
              e.value("message", "").find("template " + ns_ + "/later not found") !=
                  std::string::npos) {
            warned = true;
          }
        }
        return warned;
      },
      10s);
  EXPECT_TRUE(warned) << "the controller says which template is missing";
  EXPECT_TRUE(api_->list(resources::kExtendedResourceClaims, ns_, {})["items"].empty());

  api_->create(resources::kExtendedResourceClaimTemplates, ns_,
               templateObject(ns_, "later", resource_));
  ASSERT_TRUE(waitBound("early", 20s)) << logs();
  EXPECT_EQ(checkTemplatePods(*api_, ns_, {getPod("early")}), std::vector<std::string>{device});
}

// With kube-controller-manager's replicaset and garbage collector: the pods of a ReplicaSet
// share one template, and each claim goes with its pod.
TEST_F(ControllerTest, AReplicaSetSharesATemplateAndEachClaimIsDeletedWithItsPod) {
  const auto kcm = startControllerManager("replicaset,garbagecollector");

  std::vector<std::string> matching = {makeDevice(node_), makeDevice(node_), makeDevice(node_)};
  std::sort(matching.begin(), matching.end());
  api_->create(resources::kExtendedResourceClaimTemplates, ns_,
               templateObject(ns_, "gpu", resource_));
  json podTemplate = podObject(ns_, "unused", {}, schedulerName_);
  podTemplate["metadata"] = {{"labels", {{"app", "web"}}},
                             {"annotations", {{kClaimTemplatesAnnotation, "gpu=gpu"}}}};
  const Resource replicaSets{"apps", "v1", "replicasets", true};
  api_->create(
      replicaSets, ns_,
      {{"apiVersion", "apps/v1"},
       {"kind", "ReplicaSet"},
       {"metadata", {{"name", "web"}, {"namespace", ns_}}},
       {"spec",
        {{"replicas", 3},
         {"selector", {{"matchLabels", {{"app", "web"}}}}},
         {"template", {{"metadata", podTemplate["metadata"]}, {"spec", podTemplate["spec"]}}}}}});
  auto boundPods = [&] {
    std::vector<json> out;
    const json list = api_->list(resources::kPods, ns_, {});
    for (const auto& p : list["items"]) {
      if (!p.value("/spec/nodeName"_json_pointer, "").empty() &&
          !p.contains("/metadata/deletionTimestamp"_json_pointer)) {
        out.push_back(p);
      }
    }
    return out;
  };
  ASSERT_TRUE(eventually([&] { return boundPods().size() == 3; }, 60s))
      << logs() << "\nkube-controller-manager:\n"
      << kcm->logTail();
  std::vector<json> pods = boundPods();
  EXPECT_EQ(checkTemplatePods(*api_, ns_, pods), matching);

  // A pod deleted: its claim is released and deleted with it; the replacement gets a claim of
  // its own and the freed device.
  const json gone = pods[0];
  ASSERT_EQ(generatedClaimsOf(*api_, ns_, gone).size(), 1u);
  const std::string claim = generatedClaimsOf(*api_, ns_, gone)[0]["metadata"]["name"];
  deletePodNow(*api_, ns_, gone["metadata"]["name"]);
  EXPECT_TRUE(eventually(
      [&] {
        try {
          api_->get(resources::kExtendedResourceClaims, ns_, claim);
          return false;
        } catch (const ApiError& e) {
          return e.isNotFound();
        }
      },
      60s))
      << "the garbage collector did not delete the claim\n"
      << kcm->logTail();
  ASSERT_TRUE(eventually(
      [&] {
        const auto now = boundPods();
        return now.size() == 3 && std::none_of(now.begin(), now.end(), [&](const json& p) {
                 return p["metadata"]["uid"] == gone["metadata"]["uid"];
               });
      },
      60s))
      << logs();
  EXPECT_EQ(checkTemplatePods(*api_, ns_, boundPods()), matching);
  EXPECT_EQ(api_->list(resources::kExtendedResourceClaims, ns_, {})["items"].size(), 3u);
  EXPECT_EQ(invariantViolations(), "");

  // The ReplicaSet deleted, its pods and their claims go too; then no controller manager is
  // left running for the other tests.
  api_->remove(replicaSets, ns_, "web");
  EXPECT_TRUE(eventually(
      [&] { return api_->list(resources::kExtendedResourceClaims, ns_, {})["items"].empty(); },
      60s))
      << kcm->logTail();
  kcm->stop();
}

// A shareable claim is held by three pods at once, all on its node though another node has a
// matching device; its device stays allocated until the last of them goes. A claim that is
// not shareable still refuses a second pod.
TEST_F(ControllerTest, ASharedClaimIsHeldByThreePodsOnItsNodeUntilTheLastGoes) {
  const std::string device = makeDevice(node_);
  const std::string elsewhere = makeNodes(1)[0];
  makeDevice(elsewhere);
  json shared = claimObject(ns_, "shared", resource_, 1, {{"type", "k80"}});
  shared["spec"]["shareable"] = true;
  api_->create(resources::kExtendedResourceClaims, ns_, shared);

  api_->create(resources::kPods, ns_, podObject(ns_, "s-0", {"shared"}, schedulerName_));
  ASSERT_TRUE(waitBound("s-0")) << logs();
  const std::string node = nodeOf("s-0");
  const json allocated = claimStatus("shared").value("extendedResourceNames", json());
  ASSERT_EQ(allocated.size(), 1u);
  const std::string taken = allocated[0];
  for (const char* pod : {"s-1", "s-2"}) {
    api_->create(resources::kPods, ns_, podObject(ns_, pod, {"shared"}, schedulerName_));
    ASSERT_TRUE(waitBound(pod)) << logs();
    EXPECT_EQ(nodeOf(pod), node) << pod;
  }
  json status = claimStatus("shared");
  EXPECT_FALSE(status.contains("podRef"));
  ASSERT_EQ(status.value("holders", json::array()).size(), 3u) << status.dump();
  EXPECT_EQ(status.value("extendedResourceNames", json()), allocated) << "never re-allocated";
  const auto annotation = getPod("s-2").value(
      "/metadata/annotations/extendedresource.io~1allocation"_json_pointer, std::string());
  EXPECT_EQ(json::parse(annotation)["shared"][0]["name"], taken);
  EXPECT_EQ(invariantViolations(), "");

  deletePodNow(*api_, ns_, "s-0");
  deletePodNow(*api_, ns_, "s-1");
  ASSERT_TRUE(eventually(
      [&] { return claimStatus("shared").value("holders", json::array()).size() == 1; }, 10s))
      << logs();
  status = claimStatus("shared");
  EXPECT_EQ(status.value("phase", ""), "Bound");
  EXPECT_EQ(status["holders"][0].value("name", ""), "s-2");
  EXPECT_EQ(devicePhase(taken), "Bound");
  EXPECT_EQ(invariantViolations(), "");

  deletePodNow(*api_, ns_, "s-2");
  ASSERT_TRUE(eventually([&] { return released("shared", {taken}); }, 10s)) << logs();
  EXPECT_FALSE(claimStatus("shared").contains("holders"));

  createPod("solo-0", "solo");
  ASSERT_TRUE(waitBound("solo-0")) << logs();
  api_->create(resources::kPods, ns_, podObject(ns_, "solo-1", {"solo"}, schedulerName_));
  ASSERT_TRUE(waitParked("solo-1")) << logs();
  EXPECT_TRUE(nodeOf("solo-1").empty());
  EXPECT_EQ(claimStatus("solo").value("/podRef/name"_json_pointer, ""), "solo-0");
  EXPECT_EQ(invariantViolations(), "");
}

TEST_F(ControllerTest, AStandbyTakesOverWhenTheLeaderStops) {
  int standbyPort = 0;
  standby_ = startController(standbyPort);
  EXPECT_FALSE(leads(standbyPort)) << "only one instance leads";
  EXPECT_TRUE(leads(controllerPort_));

  const auto stopped = Clock::now();
  controller_->stop();
  ASSERT_TRUE(eventually([&] { return leads(standbyPort); }, 20s)) << standby_->logTail();
  const auto took = millisSince(stopped);
  std::cout << "leader stopped -> standby leads: " << took << " ms\n";
  EXPECT_LT(took, 3000) << "the stopped leader gave its lease up";

  // The new leader does the work.
  controller_ = std::move(standby_);
  controllerPort_ = standbyPort;
  const std::string device = makeDevice(node_);
  createPod("web", "c");
  ASSERT_TRUE(waitBound("web")) << logs();
  deletePodNow(*api_, ns_, "web");
  EXPECT_TRUE(eventually([&] { return released("c", {device}); }, 10s)) << logs();
}

// With --protect-in-use (the default, passed here all the same): claims and devices carry the
// protection finalizers, and one deleted while a pod holds it stays until that pod is gone.
class ProtectionTest : public ControllerTest {
 protected:
  static void SetUpTestSuite() {
    extraArgs_ = {"--protect-in-use=true"};
    ControllerTest::SetUpTestSuite();
  }
  static void TearDownTestSuite() {
    ControllerTest::TearDownTestSuite();
    extraArgs_.clear();
  }

  bool hasFinalizer(const Resource& res, const std::string& ns, const std::string& name,
                    const std::string& finalizer) {
    const json f = api_->get(res, ns, name).value("/metadata/finalizers"_json_pointer, json());
    return f.is_array() && std::find(f.begin(), f.end(), finalizer) != f.end();
  }
  bool deleting(const Resource& res, const std::string& ns, const std::string& name) {
    return api_->get(res, ns, name).contains("/metadata/deletionTimestamp"_json_pointer);
  }
  // The events about one object; those about a cluster-scoped one are in "default".
  std::vector<json> eventsAbout(const std::string& kind, const std::string& name,
                                const std::string& eventNs) {
    std::vector<json> out;
    const json events = api_->list(resources::kEvents, eventNs, {});
    for (const auto& e : events["items"]) {
      if (e.value("/involvedObject/name"_json_pointer, "") == name &&
          e.value("/involvedObject/kind"_json_pointer, "") == kind) {
        out.push_back(e);
      }
    }
    return out;
  }
  std::vector<std::string> claimEventReasons(const std::string& claim) {
    std::vector<std::string> out;
    for (const auto& e : eventsAbout("ExtendedResourceClaim", claim, ns_)) {
      out.push_back(e.value("reason", ""));
    }
    return out;
  }
  json allocatedCondition(const json& object) {
    for (const auto& c : object.value("/status/conditions"_json_pointer, json::array())) {
      if (c.value("type", "") == "Allocated") {
        return c;
      }
    }
    return json();
  }
};

TEST_F(ProtectionTest, AClaimDeletedWhileItsPodRunsStaysUntilThePodIsGone) {
  const std::string device = makeDevice(node_);
  createPod("web", "c");
  ASSERT_TRUE(waitBound("web")) << logs();
  ASSERT_TRUE(eventually(
      [&] {
        return hasFinalizer(resources::kExtendedResourceClaims, ns_, "c",
                            kClaimProtectionFinalizer) &&
               hasFinalizer(resources::kExtendedResources, "", device, kDeviceProtectionFinalizer);
      },
      10s))
      << logs();

  api_->remove(resources::kExtendedResourceClaims, ns_, "c");
  ASSERT_TRUE(deleting(resources::kExtendedResourceClaims, ns_, "c"));
  EXPECT_TRUE(eventually(
      [&] {
        const auto reasons = claimEventReasons("c");
        return std::find(reasons.begin(), reasons.end(), "DeletionWaiting") != reasons.end();
      },
      10s))
      << "kubectl describe says why it is still there";
  EXPECT_EQ(allocatedCondition(api_->get(resources::kExtendedResourceClaims, ns_, "c"))
                .value("reason", ""),
            "DeletionWaiting");
  // A second pod wanting a device of that kind is not given the held one meanwhile.
  createPod("second", "c2");
  ASSERT_TRUE(waitParked("second")) << logs();
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(claimPhase("c"), "Bound");
  EXPECT_EQ(devicePhase(device), "Bound");
  EXPECT_EQ(api_->get(resources::kExtendedResources, "", device)
                .value("/status/claimRef/name"_json_pointer, ""),
            "c");
  EXPECT_EQ(getPod("second").value("/spec/nodeName"_json_pointer, ""), "");

  deletePodNow(*api_, ns_, "web");
  EXPECT_TRUE(eventually([&] { return gone(resources::kExtendedResourceClaims, ns_, "c"); }, 10s))
      << logs();
  ASSERT_TRUE(waitBound("second", 30s)) << logs();
  EXPECT_EQ(api_->get(resources::kExtendedResources, "", device)
                .value("/status/claimRef/name"_json_pointer, ""),
            "c2");
  EXPECT_EQ(invariantViolations(), "");
}

TEST_F(ProtectionTest, ADeviceDeletedWhileInUseIsLostToItsClaimAndStaysUntilReleased) {
  const std::string device = makeDevice(node_);
  createPod("web", "c");
  ASSERT_TRUE(waitBound("web")) << logs();
  ASSERT_TRUE(eventually(
      [&] {
        return hasFinalizer(resources::kExtendedResources, "", device, kDeviceProtectionFinalizer);
      },
      10s))
      << logs();

  api_->remove(resources::kExtendedResources, "", device);
  ASSERT_TRUE(eventually([&] { return claimPhase("c") == "Lost"; }, 10s)) << logs();
  EXPECT_NE(claimStatus("c").value("message", "").find("being deleted"), std::string::npos)
      << claimStatus("c").dump();
  EXPECT_TRUE(deleting(resources::kExtendedResources, "", device));
  EXPECT_EQ(devicePhase(device), "Bound") << "its pod still has it";
  // `kubectl describe er` says why it is still there: its condition, and one event naming the
  // claim and the pod.
  EXPECT_TRUE(eventually(
      [&] {
        const json allocated =
            allocatedCondition(api_->get(resources::kExtendedResources, "", device));
        return allocated.value("status", "") == "True" &&
               allocated.value("reason", "") == "DeletionWaiting";
      },
      10s))
      << api_->get(resources::kExtendedResources, "", device).dump() << logs();
  std::vector<json> waiting;
  EXPECT_TRUE(eventually(
      [&] {
        waiting.clear();
        for (const auto& e : eventsAbout("ExtendedResource", device, "default")) {
          if (e.value("reason", "") == "DeletionWaiting") {
            waiting.push_back(e);
          }
        }
        return !waiting.empty();
      },
      10s))
      << logs();
  ASSERT_EQ(waiting.size(), 1u);
  const std::string said = waiting[0].value("message", "");
  EXPECT_NE(said.find("claim " + ns_ + "/c (pod web)"), std::string::npos) << said;
  EXPECT_EQ(waiting[0].value("count", 1), 1) << "once per deletion, not on every resync";
  // A pod wanting a device of that kind is not given the deleting one, before or after its
  // holder goes.
  createPod("second", "c2");
  ASSERT_TRUE(waitParked("second")) << logs();

  deletePodNow(*api_, ns_, "web");
  EXPECT_TRUE(eventually([&] { return gone(resources::kExtendedResources, "", device); }, 10s))
      << logs();
  EXPECT_EQ(claimPhase("c"), "Pending");
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(getPod("second").value("/spec/nodeName"_json_pointer, ""), "");
  EXPECT_EQ(claimPhase("c2"), "Pending");
  EXPECT_EQ(invariantViolations(), "");
}

TEST_F(ProtectionTest, AClaimNobodyHoldsIsDeletedAtOnce) {
  api_->create(resources::kExtendedResourceClaims, ns_,
               claimObject(ns_, "idle", resource_, 1, {{"type", "k80"}}));
  ASSERT_TRUE(eventually(
      [&] {
        return hasFinalizer(resources::kExtendedResourceClaims, ns_, "idle",
                            kClaimProtectionFinalizer);
      },
      10s))
      << logs();
  api_->remove(resources::kExtendedResourceClaims, ns_, "idle");
  EXPECT_TRUE(
      eventually([&] { return gone(resources::kExtendedResourceClaims, ns_, "idle"); }, 10s))
      << logs();
}

// A claim that compares a property as a quantity gets the device whose property is large
// enough (not the one that sorts first as text, nor one whose property is not a number), and a
// pod whose comparison nothing satisfies waits, saying why, until a device that does appears
// (the controller nudges it then).
TEST_F(ControllerTest, QuantityComparisonsChooseTheDeviceAndAPodWaitsForOne) {
  auto nodes = makeNodes(4);
  api_->create(resources::kExtendedResources, "",
               deviceObject(uniqueName("small"), nodes[0], resource_, {{"memory", "16Gi"}}));
  api_->create(resources::kExtendedResources, "",
               deviceObject(uniqueName("odd"), nodes[1], resource_, {{"memory", "lots"}}));
  const std::string large = uniqueName("large");
  api_->create(resources::kExtendedResources, "",
               deviceObject(large, nodes[2], resource_, {{"memory", "80Gi"}}));
  auto comparing = [&](const std::string& name, const std::string& op, const std::string& value) {
    json c = claimObject(ns_, name, resource_, 1);
    c["spec"]["metadataRequirements"] = {
        {"matchExpressions", {{{"key", "memory"}, {"operator", op}, {"values", {value}}}}}};
    return c;
  };
  api_->create(resources::kExtendedResourceClaims, ns_, comparing("at-least-40", "Ge", "40Gi"));
  api_->create(resources::kExtendedResourceClaims, ns_, comparing("over-100", "Gt", "100Gi"));
  api_->create(resources::kPods, ns_, podObject(ns_, "trainer", {"at-least-40"}, schedulerName_));
  api_->create(resources::kPods, ns_, podObject(ns_, "giant", {"over-100"}, schedulerName_));

  ASSERT_TRUE(waitBound("trainer")) << extender_->logTail();
  EXPECT_EQ(nodeOf("trainer"), nodes[2]);
  auto claim = ExtendedResourceClaim::fromJson(
      api_->get(resources::kExtendedResourceClaims, ns_, "at-least-40"));
  EXPECT_EQ(claim.allocated, (std::vector<std::string>{large}));

  const std::string message = awaitFailedScheduling("giant");
  ASSERT_FALSE(message.empty()) << extender_->logTail();
  EXPECT_NE(message.find("claim " + ns_ + "/over-100: 0 of 1 free " + resource_ +
                         " with memory>100Gi on this node (a device's memory \"lots\" is not a "
                         "quantity)"),
            std::string::npos)
      << message;
  EXPECT_EQ(nodeOf("giant"), "");

  const std::string huge = uniqueName("huge");
  api_->create(resources::kExtendedResources, "",
               deviceObject(huge, nodes[3], resource_, {{"memory", "128Gi"}}));
  ASSERT_TRUE(waitBound("giant", 60s)) << extender_->logTail();
  EXPECT_EQ(nodeOf("giant"), nodes[3]);
  EXPECT_EQ(ExtendedResourceClaim::fromJson(
                api_->get(resources::kExtendedResourceClaims, ns_, "over-100"))
                .allocated,
            (std::vector<std::string>{huge}));
  EXPECT_EQ(invariantViolations(), "");
}

// Four GPUs on one NUMA node: the pod lands on the node that has four sharing a NUMA node,
// not on the one whose four are split two and two; a second such pod waits, saying why, until
// two more devices make four on one NUMA node there.
TEST_F(ControllerTest, AConstrainedClaimGetsDevicesSharingThePropertyAndWaitsForThem) {
  auto nodes = makeNodes(2);
  std::map<std::string, std::vector<std::string>> byNode;
  auto addDevice = [&](const std::string& node, const std::string& numa) {
    const std::string name = uniqueName("gpu");
    api_->create(resources::kExtendedResources, "",
                 deviceObject(name, node, resource_, {{"numaNode", numa}}));
    byNode[node].push_back(name);
    return name;
  };
  for (const char* numa : {"0", "0", "1", "1"}) {
    addDevice(nodes[0], numa);
  }
  for (int i = 0; i < 4; ++i) {
    addDevice(nodes[1], "0");
  }
  auto fourOnOneNuma = [&](const std::string& name) {
    json c = claimObject(ns_, name, resource_, 4);
    c["spec"]["constraints"] = {{{"matchProperty", "numaNode"}}};
    return c;
  };
  api_->create(resources::kExtendedResourceClaims, ns_, fourOnOneNuma("first"));
  api_->create(resources::kPods, ns_, podObject(ns_, "first", {"first"}, schedulerName_));
  ASSERT_TRUE(waitBound("first")) << extender_->logTail();
  EXPECT_EQ(nodeOf("first"), nodes[1]);
  auto claim =
      ExtendedResourceClaim::fromJson(api_->get(resources::kExtendedResourceClaims, ns_, "first"));
  std::vector<std::string> expected = byNode[nodes[1]];
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(claim.allocated, expected);

  api_->create(resources::kExtendedResourceClaims, ns_, fourOnOneNuma("second"));
  api_->create(resources::kPods, ns_, podObject(ns_, "second", {"second"}, schedulerName_));
  const std::string message = awaitFailedScheduling("second");
  ASSERT_FALSE(message.empty()) << extender_->logTail();
  EXPECT_NE(message.find("claim " + ns_ + "/second: at most 2 of 4 free " + resource_ +
                         " sharing numaNode on this node"),
            std::string::npos)
      << message;

  const std::string third = addDevice(nodes[0], "1");
  const std::string fourth = addDevice(nodes[0], "1");
  ASSERT_TRUE(waitBound("second", 60s)) << extender_->logTail();
  EXPECT_EQ(nodeOf("second"), nodes[0]);
  claim =
      ExtendedResourceClaim::fromJson(api_->get(resources::kExtendedResourceClaims, ns_, "second"));
  ASSERT_EQ(claim.allocated.size(), 4u);
  for (const auto& name : claim.allocated) {
    auto d = ExtendedResource::fromJson(api_->get(resources::kExtendedResources, "", name));
    EXPECT_EQ(d.properties.at("numaNode"), "1") << name;
  }
  EXPECT_EQ(invariantViolations(), "");
}

// Through the real kube-scheduler with --topology-property: a 2-GPU request finishes the node's
// broken island instead of breaking a whole one (by name it would take the whole island's
// devices first), and a 4-GPU one-NUMA request then takes the whole island of the fuller node.
TEST_F(ControllerTest, TopologyScoringKeepsWholeIslandsForLargerRequests) {
  auto nodes = makeNodes(2);
  const std::string base = uniqueName("topo");
  std::map<std::string, std::string> numaOf;
  auto addDevice = [&](const std::string& node, const std::string& name, const std::string& numa) {
    api_->create(resources::kExtendedResources, "",
                 deviceObject(name, node, resource_, {{"numaNode", numa}}));
    numaOf[name] = numa;
  };
  for (int i = 0; i < 4; ++i) {  // whole: both islands free
    addDevice(nodes[0], base + "-idle-" + std::to_string(i), i < 2 ? "0" : "1");
    addDevice(nodes[0], base + "-idle-x" + std::to_string(i), i < 2 ? "0" : "1");
  }
  for (int i = 0; i < 4; ++i) {  // named first: a whole island of 4
    addDevice(nodes[1], base + "-a" + std::to_string(i), "1");
  }
  for (int i = 0; i < 2; ++i) {  // what is left of the other island
    addDevice(nodes[1], base + "-b" + std::to_string(i), "0");
  }
  api_->create(resources::kExtendedResourceClaims, ns_, claimObject(ns_, "two", resource_, 2));
  api_->create(resources::kPods, ns_, podObject(ns_, "two", {"two"}, schedulerName_));
  ASSERT_TRUE(waitBound("two")) << extender_->logTail();
  EXPECT_EQ(nodeOf("two"), nodes[1]);
  auto claim =
      ExtendedResourceClaim::fromJson(api_->get(resources::kExtendedResourceClaims, ns_, "two"));
  EXPECT_EQ(claim.allocated, (std::vector<std::string>{base + "-b0", base + "-b1"}));

  json four = claimObject(ns_, "four", resource_, 4);
  four["spec"]["constraints"] = {{{"matchProperty", "numaNode"}}};
  api_->create(resources::kExtendedResourceClaims, ns_, four);
  api_->create(resources::kPods, ns_, podObject(ns_, "four", {"four"}, schedulerName_));
  ASSERT_TRUE(waitBound("four")) << extender_->logTail();
  EXPECT_EQ(nodeOf("four"), nodes[1]);
  claim =
      ExtendedResourceClaim::fromJson(api_->get(resources::kExtendedResourceClaims, ns_, "four"));
  ASSERT_EQ(claim.allocated.size(), 4u);
  for (const auto& name : claim.allocated) {
    EXPECT_EQ(numaOf[name], "1") << name;
  }
  EXPECT_EQ(invariantViolations(), "");
}

// A distinct property through the real kube-scheduler: two GPUs on one PCIe root do not serve
// a claim for two on roots of their own; the pod waits, saying why, until a GPU on another root
// comes, and then gets one device per root.
TEST_F(ControllerTest, ADistinctClaimGetsADevicePerValueAndWaitsForOne) {
  const std::string node = makeNodes(1)[0];
  std::map<std::string, std::string> rootOf;
  auto addDevice = [&](const std::string& root) {
    const std::string name = uniqueName("gpu");
    api_->create(resources::kExtendedResources, "",
                 deviceObject(name, node, resource_, {{"pciRoot", root}}));
    rootOf[name] = root;
  };
  addDevice("0000:00");
  addDevice("0000:00");
  json c = claimObject(ns_, "roots", resource_, 2);
  c["spec"]["constraints"] = {{{"distinctProperty", "pciRoot"}}};
  api_->create(resources::kExtendedResourceClaims, ns_, c);
  api_->create(resources::kPods, ns_, podObject(ns_, "roots", {"roots"}, schedulerName_));
  const std::string message = awaitFailedScheduling("roots");
  ASSERT_FALSE(message.empty()) << extender_->logTail();
  EXPECT_NE(message.find("claim " + ns_ + "/roots: 1 of 2 free " + resource_ +
                         " each with its own pciRoot on this node"),
            std::string::npos)
      << message;

  addDevice("0000:80");
  ASSERT_TRUE(waitBound("roots", 60s)) << extender_->logTail();
  auto claim =
      ExtendedResourceClaim::fromJson(api_->get(resources::kExtendedResourceClaims, ns_, "roots"));
  ASSERT_EQ(claim.allocated.size(), 2u);
  EXPECT_NE(rootOf[claim.allocated[0]], rootOf[claim.allocated[1]]);
  EXPECT_EQ(invariantViolations(), "");
}

// firstAvailable through the real kube-scheduler: an H100, else two A100s. The first pod gets
// the H100; the second, with none left, two A100s, and the claim says so; a third waits,
// naming what each alternative lacks, until another H100 comes.
TEST_F(ControllerTest, FirstAvailableTakesTheFirstAlternativeThatFitsAndSaysWhichOne) {
  auto nodes = makeNodes(2);
  auto addDevice = [&](const std::string& node, const std::string& model) {
    const std::string name = uniqueName(model);
    api_->create(resources::kExtendedResources, "",
                 deviceObject(name, node, resource_, {{"model", model}}));
    return name;
  };
  const std::string h100 = addDevice(nodes[0], "h100");
  addDevice(nodes[1], "a100");
  addDevice(nodes[1], "a100");
  auto h100ElseTwoA100 = [&](const std::string& name) {
    json c = claimObject(ns_, name, resource_, 1);
    c["spec"].erase("extendedResourceNum");
    c["spec"].erase("metadataRequirements");
    c["spec"]["firstAvailable"] = {
        {{"name", "h100"}, {"metadataRequirements", {{"matchLabels", {{"model", "h100"}}}}}},
        {{"name", "two-a100"},
         {"extendedResourceNum", 2},
         {"metadataRequirements", {{"matchLabels", {{"model", "a100"}}}}}}};
    api_->create(resources::kExtendedResourceClaims, ns_, c);
    api_->create(resources::kPods, ns_, podObject(ns_, name, {name}, schedulerName_));
  };
  auto claimOf = [&](const std::string& name) {
    return ExtendedResourceClaim::fromJson(
        api_->get(resources::kExtendedResourceClaims, ns_, name));
  };

  h100ElseTwoA100("first");
  ASSERT_TRUE(waitBound("first")) << extender_->logTail();
  EXPECT_EQ(nodeOf("first"), nodes[0]);
  EXPECT_EQ(claimOf("first").alternative, "h100");
  EXPECT_EQ(claimOf("first").allocated, std::vector<std::string>{h100});

  h100ElseTwoA100("second");
  ASSERT_TRUE(waitBound("second")) << extender_->logTail();
  EXPECT_EQ(nodeOf("second"), nodes[1]);
  EXPECT_EQ(claimOf("second").alternative, "two-a100");
  EXPECT_EQ(claimOf("second").allocated.size(), 2u);

  h100ElseTwoA100("third");
  const std::string message = awaitFailedScheduling("third");
  ASSERT_FALSE(message.empty()) << extender_->logTail();
  EXPECT_NE(message.find("no alternative fits: alternative h100: claim " + ns_ +
                         "/third: 0 of 1 free " + resource_ + " with model=h100"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("alternative two-a100: claim " + ns_ + "/third: 0 of 2 free"),
            std::string::npos)
      << message;
  addDevice(nodes[1], "h100");
  ASSERT_TRUE(waitBound("third", 60s)) << extender_->logTail();
  EXPECT_EQ(claimOf("third").alternative, "h100");
  EXPECT_EQ(invariantViolations(), "");
}

// A GPU and a NIC under one PCIe root, as one claim of two named requests: the pod waits, saying
// what failed, while no root has both free; once a NIC is added beside the free GPU the pod is
// bound with each request's device recorded, and its deletion frees both.
TEST_F(ControllerTest, AClaimOfAGpuAndANicUnderOneRootWaitsForThemAndFreesBoth) {
  auto nodes = makeNodes(1);
  const std::string nicResource = uniqueName("nic") + ".example.com/nic";
  const std::string gpu = deviceUnderRoot(nodes[0], resource_, "r0");
  deviceUnderRoot(nodes[0], nicResource, "r1");
  json c = claimObject(ns_, "pair", resource_, 1);
  c["spec"] = {{"requests",
                {{{"name", "gpu"}, {"rawResourceName", resource_}},
                 {{"name", "nic"}, {"rawResourceName", nicResource}}}},
               {"constraints", {{{"matchProperty", "pcieRoot"}}}}};
  api_->create(resources::kExtendedResourceClaims, ns_, c);
  api_->create(resources::kPods, ns_, podObject(ns_, "pair", {"pair"}, schedulerName_));
  const std::string message = awaitFailedScheduling("pair");
  ASSERT_FALSE(message.empty()) << extender_->logTail();
  EXPECT_NE(message.find("serves every request of claims " + ns_ + "/pair/gpu, " + ns_ +
                         "/pair/nic together on this node"),
            std::string::npos)
      << message;

  const std::string nic = deviceUnderRoot(nodes[0], nicResource, "r0");
  ASSERT_TRUE(waitBound("pair", 60s)) << extender_->logTail();
  const auto claim =
      ExtendedResourceClaim::fromJson(api_->get(resources::kExtendedResourceClaims, ns_, "pair"));
  EXPECT_EQ(claim.allocations,
            (std::vector<RequestAllocation>{{"gpu", {gpu}, ""}, {"nic", {nic}, ""}}));
  const json pod = api_->get(resources::kPods, ns_, "pair");
  const json annotation =
      json::parse(pod["metadata"]["annotations"][kAllocationAnnotation].get<std::string>());
  ASSERT_EQ(annotation["pair"].size(), 2u) << annotation.dump();
  EXPECT_EQ(annotation["pair"][1]["request"], "nic") << annotation.dump();
  EXPECT_EQ(annotation["pair"][1]["rawResourceName"], nicResource) << annotation.dump();
  EXPECT_EQ(invariantViolations(), "");

  deletePodNow(*api_, ns_, "pair");
  ASSERT_TRUE(eventually([&] { return released("pair", {gpu, nic}); }, 30s)) << logs();
  EXPECT_EQ(invariantViolations(), "");
}

// A distinctProperty spanning both requests: the GPU and the NIC each under a PCIe root of its
// own. With one root between them the pod waits, and says so; a NIC under a second root lets it
// bind, and the NIC sharing the GPU's root stays free.
TEST_F(ControllerTest, AClaimOfAGpuAndANicOnRootsOfTheirOwnWaitsForASecondRoot) {
  auto nodes = makeNodes(1);
  const std::string nicResource = uniqueName("nic") + ".example.com/nic";
  const std::string gpu = deviceUnderRoot(nodes[0], resource_, "r0");
  const std::string sameRoot = deviceUnderRoot(nodes[0], nicResource, "r0");
  json c = claimObject(ns_, "apart", resource_, 1);
  c["spec"] = {{"requests",
                {{{"name", "gpu"}, {"rawResourceName", resource_}},
                 {{"name", "nic"}, {"rawResourceName", nicResource}}}},
               {"constraints", {{{"distinctProperty", "pcieRoot"}}}}};
  api_->create(resources::kExtendedResourceClaims, ns_, c);
  api_->create(resources::kPods, ns_, podObject(ns_, "apart", {"apart"}, schedulerName_));
  const std::string message = awaitFailedScheduling("apart");
  ASSERT_FALSE(message.empty()) << extender_->logTail();
  EXPECT_NE(message.find("claim " + ns_ +
                         "/apart: requests gpu, nic: at most 1 of 2 free devices with a pcieRoot "
                         "of their own on this node"),
            std::string::npos)
      << message;

  const std::string nic = deviceUnderRoot(nodes[0], nicResource, "r1");
  ASSERT_TRUE(waitBound("apart", 60s)) << extender_->logTail();
  const auto claim =
      ExtendedResourceClaim::fromJson(api_->get(resources::kExtendedResourceClaims, ns_, "apart"));
  EXPECT_EQ(claim.allocations,
            (std::vector<RequestAllocation>{{"gpu", {gpu}, ""}, {"nic", {nic}, ""}}));
  const auto untouched =
      ExtendedResource::fromJson(api_->get(resources::kExtendedResources, "", sameRoot));
  EXPECT_EQ(untouched.phase, DevicePhase::kAvailable);
  EXPECT_EQ(invariantViolations(), "");

  deletePodNow(*api_, ns_, "apart");
  ASSERT_TRUE(eventually([&] { return released("apart", {gpu, nic}); }, 30s)) << logs();
  EXPECT_EQ(invariantViolations(), "");
}

// A claim's owner edits firstAvailable while its pod runs (the spec may change while Bound): the
// alternative the status names is gone. When the pod finishes, the claim is still released and
// its device freed, and deleting the claim is not held up by its protection.
TEST_F(ControllerTest, AClaimWhoseAlternativeWasEditedAwayIsStillReleasedAndDeleted) {
  const std::string node = makeNodes(1)[0];
  const std::string h100 = uniqueName("h100");
  api_->create(resources::kExtendedResources, "",
               deviceObject(h100, node, resource_, {{"model", "h100"}}));
  json c = claimObject(ns_, "edited", resource_, 1);
  c["spec"].erase("extendedResourceNum");
  c["spec"].erase("metadataRequirements");
  c["spec"]["firstAvailable"] = {
      {{"name", "h100"}, {"metadataRequirements", {{"matchLabels", {{"model", "h100"}}}}}}};
  api_->create(resources::kExtendedResourceClaims, ns_, c);
  api_->create(resources::kPods, ns_, podObject(ns_, "edited", {"edited"}, schedulerName_));
  ASSERT_TRUE(waitBound("edited")) << extender_->logTail();

  json edited = api_->get(resources::kExtendedResourceClaims, ns_, "edited");
  edited["spec"]["firstAvailable"][0]["name"] = "any-h100";
  api_->update(resources::kExtendedResourceClaims, ns_, edited);
  json pod = getPod("edited");
  pod["status"]["phase"] = "Succeeded";
  api_->updateStatus(resources::kPods, ns_, pod);
  ASSERT_TRUE(eventually([&] { return released("edited", {h100}); }, 10s)) << logs();
  api_->remove(resources::kExtendedResourceClaims, ns_, "edited");
  EXPECT_TRUE(
      eventually([&] { return gone(resources::kExtendedResourceClaims, ns_, "edited"); }, 10s))
      << logs();
}

}  // namespace
}  // namespace ker::itest

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "common/api_error.h"
#include "controller/controller.h"
#include "controller/template_claims_plan.h"
#include "fake_api_client.h"
#include "model/objects.h"

namespace ker {
namespace {

using namespace std::chrono_literals;
using testing::FakeApiClient;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

const std::string kGpu = "nvidia.com/gpu";

json podJson(const std::string& name, const std::string& node, const std::string& claims,
             const std::string& phase = "Running") {
  json p = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name}, {"namespace", "default"}, {"annotations", {{kClaimsAnnotation, claims}}}}},
      {"spec", {{"schedulerName", "extended-resource-scheduler"}}},
      {"status", {{"phase", phase}}}};
  if (!node.empty()) {
    p["spec"]["nodeName"] = node;
  }
  return p;
}

// A pod kube-scheduler tried and parked as unschedulable.
json parkedPodJson(const std::string& name, const std::string& claims) {
  json p = podJson(name, "", claims, "Pending");
  p["status"]["conditions"] = {
      {{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}};
  return p;
}

json claimJson(const std::string& name) {
  return {{"apiVersion", kApiVersion},
          {"kind", "ExtendedResourceClaim"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", {{"rawResourceName", kGpu}}}};
}

json deviceJson(const std::string& name, const std::string& node = "n1") {
  const json onNode = {
      {"required",
       {{"nodeSelectorTerms",
         json::array({{{"matchFields", json::array({{{"key", "metadata.name"},
                                                     {"operator", "In"},
                                                     {"values", json::array({node})}}})}}})}}}};
  return {{"apiVersion", kApiVersion},
          {"kind", "ExtendedResource"},
          {"metadata", {{"name", name}}},
          {"spec", {{"rawResourceName", kGpu}, {"nodeAffinity", onNode}}},
          {"status", {{"phase", "Available"}}}};
}

class ControllerLoopTest : public ::testing::Test {
 protected:
  ~ControllerLoopTest() override {
    if (controller) {
      controller->stop();
    }
    pods.stop();
    claims.stop();
    devices.stop();
    templates.stop();
    events.stop();
  }

  void start(Millis grace = 2min) {
    startStandingBy(grace);
    controller->start();
  }

  // The informers run and the controller is built, as on a replica that does not lead.
  void startStandingBy(Millis grace = 2min) {
    ControllerOptions o;
    o.workers = 2;
    o.nudgeDelay = 20ms;
    o.nudgeFollowUp = 300ms;
    o.reconciler.orphanGrace = grace;
    controller = std::make_unique<Controller>(
        api, pods, claims, devices, &events, registry, [this] { return leader.load(); }, o);
    controller->watchTemplates(templates);
    events.start();
    pods.start();
    claims.start();
    devices.start();
    templates.start();
    ASSERT_TRUE(pods.waitForSync(5s) && claims.waitForSync(5s) && devices.waitForSync(5s) &&
                templates.waitForSync(5s));
  }

  // Pod p on n1 holds claim c with devices d0 and d1.
  void seedBoundCluster(const std::string& podPhase = "Running") {
    const std::string podUid =
        api.seed(resources::kPods, podJson("p", "n1", "c", podPhase))["metadata"]["uid"];
    json c = claimJson("c");
    c["status"] = {{"phase", "Bound"},
                   {"extendedResourceNames", {"d0", "d1"}},
                   {"nodeName", "n1"},
                   {"podRef", {{"name", "p"}, {"uid", podUid}}}};
    claimUid = api.seed(resources::kExtendedResourceClaims, c)["metadata"]["uid"];
    for (const char* name : {"d0", "d1"}) {
      seedDeviceBoundToC(name, podUid);
    }
  }

  // As a bind writes it: Bound to claim c, naming the pod p it was given to.
  void seedDeviceBoundToC(const std::string& name, const std::string& podUid = "") {
    json d = deviceJson(name);
    d["status"] = {{"phase", "Bound"},
                   {"claimRef", {{"namespace", "default"}, {"name", "c"}, {"uid", claimUid}}}};
    if (!podUid.empty()) {
      d["status"]["holders"] = {{{"name", "p"}, {"uid", podUid}}};
    }
    api.seed(resources::kExtendedResources, d);
  }

  std::string claimPhase(const std::string& name = "c") {
    auto c = api.peek(resources::kExtendedResourceClaims, "default", name);
    return c ? c->value("/status/phase"_json_pointer, "") : "<gone>";
  }
  std::string devicePhase(const std::string& name) {
    auto d = api.peek(resources::kExtendedResources, "", name);
    return d ? d->value("/status/phase"_json_pointer, "") : "<gone>";
  }
  // The nudge's mark on a pod; empty until it is nudged.
  std::string requeueAt(const std::string& pod) {
    return api.peek(resources::kPods, "default", pod)
        .value()
        .value("/metadata/annotations"_json_pointer, json::object())
        .value(kRequeueAtAnnotation, "");
  }
  bool released() {
    return claimPhase() == "Pending" && devicePhase("d0") == "Available" &&
           devicePhase("d1") == "Available";
  }

  // Every event recorded so far with this reason, once the recorder has posted them.
  std::vector<json> eventsWithReason(const std::string& reason) {
    EXPECT_TRUE(events.flush(5s));
    std::vector<json> out;
    const json listed = api.list(resources::kEvents, "default", {});
    for (const auto& e : listed["items"]) {
      if (e["reason"] == reason) {
        out.push_back(e);
      }
    }
    return out;
  }

  template <class F>
  bool eventually(F&& cond, std::chrono::milliseconds timeout = 5s) {
    const auto deadline = Clock::now() + timeout;
    while (!cond()) {
      if (Clock::now() >= deadline) {
        return false;
      }
      std::this_thread::sleep_for(2ms);
    }
    return true;
  }

  double reconciles(const std::string& kind, const std::string& result) {
    return registry.counter("extended_resource_controller_reconciles_total", "", {"kind", "result"})
        .labels({kind, result})
        .value();
  }

  FakeApiClient api;
  metrics::Registry registry;
  EventRecorder events{api, {}};
  Informer<WatchedPod> pods{api, resources::kPods};
  Informer<ExtendedResourceClaim> claims{api, resources::kExtendedResourceClaims};
  Informer<ExtendedResource> devices{api, resources::kExtendedResources};
  Informer<ExtendedResourceClaimTemplate> templates{api,
                                                    resources::kExtendedResourceClaimTemplates};
  std::atomic<bool> leader{true};
  std::unique_ptr<Controller> controller;
  std::string claimUid;
};

TEST_F(ControllerLoopTest, PodDeletionReleasesItsClaimWithinASecond) {
  seedBoundCluster();
  start();
  ASSERT_TRUE(eventually([&] { return reconciles("claim", "success") >= 1; }));
  ASSERT_EQ(claimPhase(), "Bound");

  const auto deleted = Clock::now();
  api.remove(resources::kPods, "default", "p");
  ASSERT_TRUE(eventually([&] { return released(); }, 5s));
  const auto took = Clock::now() - deleted;
  EXPECT_LT(took, 1s) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                      << "ms";
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kGet), 0) << "the watch saw the pod deleted";
}

TEST_F(ControllerLoopTest, ClaimDeletedWithItsPodFreesItsDevicesWithoutRetries) {
  seedBoundCluster();
  start();
  ASSERT_TRUE(eventually([&] { return reconciles("claim", "success") >= 1; }));
  api.remove(resources::kPods, "default", "p");
  api.remove(resources::kExtendedResourceClaims, "default", "c");
  ASSERT_TRUE(eventually(
      [&] { return devicePhase("d0") == "Available" && devicePhase("d1") == "Available"; }));
  EXPECT_EQ(reconciles("claim", "error"), 0);
  EXPECT_EQ(reconciles("device", "error"), 0);
}

// A claim deleted while Bound (its finalizer gone, or protection off) leaves its devices with
// the pod that still runs with them, which is warned; they are freed once the pod is gone.
TEST_F(ControllerLoopTest, AClaimDeletedUnderARunningPodKeepsItsDevicesUntilThePodIsGone) {
  seedBoundCluster();
  start();
  ASSERT_TRUE(eventually([&] { return reconciles("claim", "success") >= 1; }));
  api.remove(resources::kExtendedResourceClaims, "default", "c");
  ASSERT_TRUE(eventually([&] { return !eventsWithReason("ClaimDeleted").empty(); }));
  const std::vector<json> warnings = eventsWithReason("ClaimDeleted");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0]["type"], "Warning");
  EXPECT_EQ(warnings[0]["involvedObject"]["name"], "p");
  EXPECT_EQ(warnings[0]["message"],
            "claim c was deleted while this pod held it: its devices (d0, d1) stay with the pod "
            "until it ends, but a container created again gets none");
  // Several looks later (each device is looked at again while its holder runs), the running pod
  // still has its devices.
  ASSERT_TRUE(eventually([&] { return reconciles("device", "requeue") >= 4; }, 10s));
  EXPECT_EQ(devicePhase("d0"), "Bound");
  EXPECT_EQ(devicePhase("d1"), "Bound");

  api.remove(resources::kPods, "default", "p");
  ASSERT_TRUE(eventually(
      [&] { return devicePhase("d0") == "Available" && devicePhase("d1") == "Available"; }, 10s));
  EXPECT_EQ(reconciles("device", "error"), 0);
}

// A finished pod no longer holds anything: the devices of its deleted claim are freed.
TEST_F(ControllerLoopTest, AClaimDeletedUnderAFinishedPodFreesItsDevices) {
  seedBoundCluster("Succeeded");
  start();
  ASSERT_TRUE(eventually([&] { return reconciles("claim", "success") >= 1; }));
  api.remove(resources::kExtendedResourceClaims, "default", "c");
  ASSERT_TRUE(eventually(
      [&] { return devicePhase("d0") == "Available" && devicePhase("d1") == "Available"; }));
}

// A Lost claim's remaining devices stay with the pod too, which is warned of them.
TEST_F(ControllerLoopTest, ALostClaimDeletedUnderARunningPodWarnsOfItsRemainingDevices) {
  seedBoundCluster();
  json c = api.peek(resources::kExtendedResourceClaims, "default", "c").value();
  c["status"]["phase"] = "Lost";
  c["status"]["extendedResourceNames"] = {"d0"};
  c["status"]["lostExtendedResourceNames"] = {"d1"};
  api.updateStatus(resources::kExtendedResourceClaims, "default", c);
  api.remove(resources::kExtendedResources, "", "d1");
  start();
  ASSERT_TRUE(eventually([&] { return reconciles("claim", "success") >= 1; }));
  api.remove(resources::kExtendedResourceClaims, "default", "c");
  ASSERT_TRUE(eventually([&] { return !eventsWithReason("ClaimDeleted").empty(); }));
  std::vector<std::string> messages;
  for (const auto& e : eventsWithReason("ClaimDeleted")) {
    messages.push_back(e["message"]);
  }
  EXPECT_EQ(messages,
            std::vector<std::string>{"claim c was deleted while this pod held it: its devices "
                                     "(d0) stay with the pod until it ends, but a container "
                                     "created again gets none"});
  EXPECT_EQ(devicePhase("d0"), "Bound");
}

// A pod being deleted is on its way out with its claims: no warning when they go first. Its
// containers may still run (its kubelet stops them within the grace period), so the devices stay
// until the pod is gone.
TEST_F(ControllerLoopTest, AClaimDeletedUnderAPodBeingDeletedWarnsNoOne) {
  seedBoundCluster();
  start();
  ASSERT_TRUE(eventually([&] { return reconciles("claim", "success") >= 1; }));
  // Held by a finalizer, as a running pod is by its kubelet's graceful shutdown.
  json p = api.peek(resources::kPods, "default", "p").value();
  p["metadata"]["finalizers"] = {"example.com/hold"};
  api.update(resources::kPods, "default", p);
  api.remove(resources::kPods, "default", "p");
  ASSERT_TRUE(eventually([&] {
    const auto cached = pods.get("default/p");
    return cached && cached->meta.deleting;
  }));
  api.remove(resources::kExtendedResourceClaims, "default", "c");
  ASSERT_TRUE(eventually([&] { return reconciles("device", "requeue") >= 2; }, 10s));
  EXPECT_EQ(devicePhase("d0"), "Bound");
  p = api.peek(resources::kPods, "default", "p").value();
  p["metadata"]["finalizers"] = json::array();
  api.update(resources::kPods, "default", p);
  ASSERT_TRUE(eventually(
      [&] { return devicePhase("d0") == "Available" && devicePhase("d1") == "Available"; }, 10s));
  EXPECT_TRUE(eventsWithReason("ClaimDeleted").empty());
}

TEST_F(ControllerLoopTest, GarbledClaimsAnnotationGetsOneWarningAndBlocksNothing) {
  seedBoundCluster();
  api.seed(resources::kPods, podJson("garbled", "", "Not_A_Claim!", "Pending"));
  start();
  auto warnings = [&] {
    int n = 0;
    const json list = api.list(resources::kEvents, "default", {});
    for (const auto& e : list["items"]) {
      if (e["involvedObject"]["name"] == "garbled") {
        EXPECT_EQ(e["type"], "Warning");
        EXPECT_EQ(e["reason"], "InvalidClaims");
        EXPECT_NE(e["message"].get<std::string>().find("Not_A_Claim!"), std::string::npos);
        n++;
      }
    }
    return n;
  };
  ASSERT_TRUE(eventually([&] { return warnings() == 1; }));
  auto p = api.peek(resources::kPods, "default", "garbled").value();
  p["metadata"]["labels"] = {{"touched", "yes"}};
  api.update(resources::kPods, "default", p);
  api.remove(resources::kPods, "default", "p");
  ASSERT_TRUE(eventually([&] { return released(); }));
  ASSERT_TRUE(events.flush(5s));
  EXPECT_EQ(warnings(), 1) << "once per problem, not per update";
}

TEST_F(ControllerLoopTest, ClaimsOfPodsGoneWhileDownAreReleasedAtStart) {
  seedBoundCluster();
  api.remove(resources::kPods, "default", "p");
  start();
  EXPECT_TRUE(eventually([&] { return released(); }));
}

// A replica that does not lead sees every pod the cluster deletes: were their keys queued, its
// queue would grow with the cluster's churn for as long as it stands by.
TEST_F(ControllerLoopTest, AStandbyQueuesNothingAndCatchesUpWhenItLeads) {
  seedBoundCluster();
  startStandingBy();
  for (int i = 0; i < 20; ++i) {
    const std::string name = "churn-" + std::to_string(i);
    api.create(resources::kPods, "default", podJson(name, "n1", "c", "Running"));
    api.remove(resources::kPods, "default", name);
  }
  api.remove(resources::kExtendedResourceClaims, "default", "c");
  api.create(resources::kExtendedResourceClaims, "default", claimJson("c"));
  api.remove(resources::kPods, "default", "p");
  ASSERT_TRUE(eventually([&] { return pods.list().empty(); }));
  EXPECT_EQ(controller->queueLength(), 0u);

  controller->start();
  EXPECT_TRUE(eventually([&] {
    return devicePhase("d0") == "Available" && devicePhase("d1") == "Available" &&
           claimPhase() == "Pending";
  }));
}

TEST_F(ControllerLoopTest, FinishedPodReleasesItsClaim) {
  seedBoundCluster();
  start();
  auto p = api.peek(resources::kPods, "default", "p").value();
  p["status"]["phase"] = "Succeeded";
  api.updateStatus(resources::kPods, "default", p);
  EXPECT_TRUE(eventually([&] { return released(); }));
}

TEST_F(ControllerLoopTest, DeletedDeviceMakesItsClaimLost) {
  seedBoundCluster();
  start();
  api.remove(resources::kExtendedResources, "", "d1");
  ASSERT_TRUE(eventually([&] { return claimPhase() == "Lost"; }));
  auto s = api.peek(resources::kExtendedResourceClaims, "default", "c").value()["status"];
  EXPECT_EQ(s["extendedResourceNames"], json({"d0"}));
  EXPECT_NE(s["message"].get<std::string>().find("d1"), std::string::npos);
  EXPECT_EQ(devicePhase("d0"), "Bound");
}

TEST_F(ControllerLoopTest, ADeletedDeviceThatComesBackIsTheLostClaimsAgain) {
  seedBoundCluster();
  start();
  api.remove(resources::kExtendedResources, "", "d1");
  ASSERT_TRUE(eventually([&] { return claimPhase() == "Lost"; }));
  json recreated = deviceJson("d1");
  recreated.erase("status");
  api.seed(resources::kExtendedResources, recreated);
  ASSERT_TRUE(eventually([&] { return claimPhase() == "Bound"; }));
  EXPECT_EQ(devicePhase("d1"), "Bound");
  auto claimEvents = [&] {
    std::vector<std::string> reasons;
    const json list = api.list(resources::kEvents, "default", {});
    for (const auto& e : list["items"]) {
      if (e["involvedObject"]["kind"] == "ExtendedResourceClaim") {
        reasons.push_back(e["reason"]);
      }
    }
    return reasons;
  };
  ASSERT_TRUE(eventually([&] { return claimEvents().size() >= 2; }));
  std::this_thread::sleep_for(100ms);  // room for an event that must not come
  ASSERT_TRUE(events.flush(5s));
  EXPECT_EQ(claimEvents(), (std::vector<std::string>{"Lost", "Recovered"}));
}

// Devices written before they named their holders (no status.holders) say nothing of who
// may still use them: their claim's deletion frees them at once.
TEST_F(ControllerLoopTest, DeletedClaimFreesDevicesThatNameNoHolders) {
  seedBoundCluster();
  for (const char* name : {"d0", "d1"}) {
    json d = api.peek(resources::kExtendedResources, "", name).value();
    d["status"].erase("holders");
    api.updateStatus(resources::kExtendedResources, "", d);
  }
  start();
  api.remove(resources::kExtendedResourceClaims, "default", "c");
  const auto deleted = Clock::now();
  ASSERT_TRUE(eventually(
      [&] { return devicePhase("d0") == "Available" && devicePhase("d1") == "Available"; }));
  EXPECT_LT(Clock::now() - deleted, 1s);
}

TEST_F(ControllerLoopTest, ConflictsAreRetried) {
  seedBoundCluster();
  start();
  api.failNext(FakeApiClient::Verb::kUpdateStatus,
               ApiError(ApiErrorKind::kConflict, 409, "Conflict", "the object has been modified"),
               3);
  api.remove(resources::kPods, "default", "p");
  EXPECT_TRUE(eventually([&] { return released(); }));
  EXPECT_GE(reconciles("claim", "conflict"), 1);
}

TEST_F(ControllerLoopTest, MidBindDeviceIsRepairedOnlyAfterTheGracePeriod) {
  api.seed(resources::kExtendedResourceClaims, claimJson("c"));
  claimUid =
      api.peek(resources::kExtendedResourceClaims, "default", "c").value()["metadata"]["uid"];
  seedDeviceBoundToC("d0");
  const auto started = Clock::now();
  start(600ms);
  ASSERT_TRUE(eventually([&] { return reconciles("device", "requeue") >= 1; }));
  EXPECT_EQ(devicePhase("d0"), "Bound") << "within the grace period";
  ASSERT_TRUE(eventually([&] { return devicePhase("d0") == "Available"; }));
  EXPECT_GE(Clock::now() - started, 600ms);
}

// A device a bind wrote for a claim whose status does not list it yet waits out the grace
// period, unless the claim is deleted: then it is freed at once (the claim's deletion finds it
// by its claimRef).
TEST_F(ControllerLoopTest, ADeletedClaimFreesAMidBindDeviceAtOnce) {
  api.seed(resources::kExtendedResourceClaims, claimJson("c"));
  claimUid =
      api.peek(resources::kExtendedResourceClaims, "default", "c").value()["metadata"]["uid"];
  seedDeviceBoundToC("d0");
  start();
  ASSERT_TRUE(eventually([&] { return reconciles("device", "requeue") >= 1; }));
  EXPECT_EQ(devicePhase("d0"), "Bound") << "within the grace period";
  api.remove(resources::kExtendedResourceClaims, "default", "c");
  const auto deleted = Clock::now();
  ASSERT_TRUE(eventually([&] { return devicePhase("d0") == "Available"; }));
  EXPECT_LT(Clock::now() - deleted, 1s);
}

TEST_F(ControllerLoopTest, DeviceWithoutStatusIsShownAvailable) {
  json d = deviceJson("fresh");
  d.erase("status");
  api.seed(resources::kExtendedResources, d);
  start();
  EXPECT_TRUE(eventually([&] { return devicePhase("fresh") == "Available"; }));
}

TEST_F(ControllerLoopTest, ClaimWithoutStatusIsShownPending) {
  api.seed(resources::kExtendedResourceClaims, claimJson("fresh"));
  json halfWritten = claimJson("half");
  halfWritten["status"] = {{"extendedResourceNames", {"d9"}}, {"nodeName", "n1"}};
  api.seed(resources::kExtendedResourceClaims, halfWritten);
  json bad = claimJson("bad");
  bad["spec"]["extendedResourceNum"] = "two";
  api.seed(resources::kExtendedResourceClaims, bad);
  start();
  EXPECT_TRUE(eventually([&] { return claimPhase("fresh") == "Pending"; }));
  ASSERT_TRUE(eventually([&] { return claimPhase("half") == "Pending"; }));
  json half = api.peek(resources::kExtendedResourceClaims, "default", "half").value()["status"];
  EXPECT_EQ(half["conditions"][0]["reason"], "Pending");  // the rest: conditions_test.cpp
  half.erase("conditions");
  EXPECT_EQ(half, json({{"phase", "Pending"}})) << "Pending lists nothing";
  ASSERT_TRUE(eventually([&] { return claimPhase("bad") == "Pending"; }));
  EXPECT_EQ(api.peek(resources::kExtendedResourceClaims, "default", "bad")
                .value()
                .value("/status/reason"_json_pointer, ""),
            toString(Reason::kInvalid));
}

TEST_F(ControllerLoopTest, FreedDevicesNudgeParkedPods) {
  seedBoundCluster();
  api.seed(resources::kExtendedResourceClaims, claimJson("w"));
  api.seed(resources::kPods, parkedPodJson("waiting", "w"));
  start();
  auto annotation = [&] { return requeueAt("waiting"); };
  ASSERT_TRUE(eventually([&] { return reconciles("claim", "success") >= 2; }));
  const std::string before = annotation();
  EXPECT_EQ(before, "") << "no device became Available yet";
  api.remove(resources::kPods, "default", "p");
  EXPECT_TRUE(eventually([&] { return annotation() != before; }));
  EXPECT_TRUE(released());
}

// The extender holds a device whose name a live claim lists. One Available all along (here it
// cannot be the device the claim lost: it is on another node) becomes usable when the claim
// is released, with no device event to say so.
TEST_F(ControllerLoopTest, AReleaseThatDropsAHoldOnAnAvailableDeviceNudgesParkedPods) {
  const std::string podUid = api.seed(resources::kPods, podJson("p", "n1", "c"))["metadata"]["uid"];
  json c = claimJson("c");
  c["status"] = {{"phase", "Lost"},
                 {"lostExtendedResourceNames", {"d9"}},
                 {"nodeName", "n1"},
                 {"podRef", {{"name", "p"}, {"uid", podUid}}}};
  api.seed(resources::kExtendedResourceClaims, c);
  api.seed(resources::kExtendedResources, deviceJson("d9", "n2"));
  api.seed(resources::kExtendedResourceClaims, claimJson("w"));
  api.seed(resources::kPods, parkedPodJson("waiting", "w"));
  start();
  // The device listed at start is news too: past that nudge and its follow-up (deferred to
  // a second after the first).
  ASSERT_TRUE(eventually([&] { return reconciles("renudge", "success") >= 1; }));
  EXPECT_EQ(devicePhase("d9"), "Available") << "not the device the claim lost";
  const std::string before = requeueAt("waiting");
  api.remove(resources::kPods, "default", "p");
  ASSERT_TRUE(eventually([&] { return claimPhase() == "Pending"; }));
  EXPECT_TRUE(eventually([&] { return requeueAt("waiting") != before; }));
}

// Applied before its claim, the pod was parked with "claim not found": the claim's arrival
// is what it waits for, as is a Lost claim's release with nothing to free.
TEST_F(ControllerLoopTest, AClaimThatBecomesAllocatableNudgesPodsParkedOnIt) {
  api.seed(resources::kPods, parkedPodJson("early", "w"));
  json lost = claimJson("l");
  lost["status"] = {{"phase", "Lost"}};
  api.seed(resources::kExtendedResourceClaims, lost);
  api.seed(resources::kPods, parkedPodJson("on-lost", "l"));
  api.seed(resources::kExtendedResourceClaims, claimJson("known"));
  api.seed(resources::kPods, parkedPodJson("on-known", "known"));
  start();
  // Lost without a holder: the claim waits out its grace period.
  ASSERT_TRUE(eventually([&] { return reconciles("claim", "requeue") >= 1; }));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(requeueAt("early"), "") << "nothing changed yet";
  EXPECT_EQ(requeueAt("on-known"), "") << "claims found at start are not news";
  EXPECT_EQ(requeueAt("on-lost"), "");

  api.seed(resources::kExtendedResourceClaims, claimJson("w"));
  EXPECT_TRUE(eventually([&] { return requeueAt("early") != ""; }));
  // Past the follow-up (300 ms here): only the pods naming w were due.
  ASSERT_TRUE(eventually(
      [&] { return reconciles("renudge", "success") + reconciles("renudge", "requeue") >= 1; },
      15s));
  EXPECT_EQ(requeueAt("on-known"), "") << "a pod waiting on another claim of the resource";
  EXPECT_EQ(requeueAt("on-lost"), "");
  auto l = api.peek(resources::kExtendedResourceClaims, "default", "l").value();
  l["status"] = {{"phase", "Pending"}};
  api.updateStatus(resources::kExtendedResourceClaims, "default", l);
  EXPECT_TRUE(eventually([&] { return requeueAt("on-lost") != ""; }));

  // A status write is no news to the waiting pod; an edit of what it asks for is.
  auto known = api.peek(resources::kExtendedResourceClaims, "default", "known").value();
  known["status"] = {{"phase", "Pending"}, {"message", "still waiting"}};
  api.updateStatus(resources::kExtendedResourceClaims, "default", known);
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(requeueAt("on-known"), "");
  known = api.peek(resources::kExtendedResourceClaims, "default", "known").value();
  known["spec"]["metadataRequirements"] = {{"matchLabels", {{"type", "k80"}}}};
  api.update(resources::kExtendedResourceClaims, "default", known);
  EXPECT_TRUE(eventually([&] { return requeueAt("on-known") != ""; }));
}

// kube-scheduler parks the pod only after the first nudge ran: the follow-up reaches it.
TEST_F(ControllerLoopTest, APodParkedJustAfterTheNudgeGetsTheFollowUp) {
  seedBoundCluster();
  // One device to free, so one trigger: a second device's, landing after the first nudge
  // (a loaded machine spaces the two events), would nudge the pod before the follow-up.
  api.remove(resources::kExtendedResources, "", "d1");
  auto c = api.peek(resources::kExtendedResourceClaims, "default", "c").value();
  c["status"]["extendedResourceNames"] = {"d0"};
  api.updateStatus(resources::kExtendedResourceClaims, "default", c);
  api.seed(resources::kExtendedResourceClaims, claimJson("w"));
  api.seed(resources::kPods, podJson("late", "", "w", "Pending"));
  start();
  auto annotation = [&] { return requeueAt("late"); };
  ASSERT_TRUE(eventually([&] { return reconciles("claim", "success") >= 2; }));
  api.remove(resources::kPods, "default", "p");
  // Two nudges: the freed device's, and the released claim's (for pods naming c), in either
  // order.
  ASSERT_TRUE(eventually([&] { return reconciles("nudge", "success") >= 2; }));
  EXPECT_EQ(annotation(), "") << "not parked yet when the nudges ran";

  auto parked = api.peek(resources::kPods, "default", "late").value();
  parked["status"]["conditions"] = {
      {{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}};
  api.updateStatus(resources::kPods, "default", parked);
  // The follow-up runs 300 ms after the release here; a loaded machine may add seconds. Its
  // reconcile is counted once it has returned.
  EXPECT_TRUE(eventually([&] { return annotation() != ""; }, 15s));
  EXPECT_TRUE(eventually([&] { return reconciles("renudge", "success") >= 1; }));
}

// A bind costs the API server no event; the release's event records what the claim held.
TEST_F(ControllerLoopTest, ABindGetsNoEventAndTheReleaseSaysWhatItHeld) {
  api.seed(resources::kExtendedResourceClaims, claimJson("c"));
  start();
  // The controller first gives the new claim its Pending status; a bind read before that
  // write would lose to it with a conflict.
  ASSERT_TRUE(eventually([&] { return claimPhase() == "Pending"; }));
  auto c = api.peek(resources::kExtendedResourceClaims, "default", "c").value();
  claimUid = c["metadata"]["uid"];
  seedDeviceBoundToC("d0");
  const std::string podUid = api.seed(resources::kPods, podJson("p", "n1", "c"))["metadata"]["uid"];
  c["status"] = {{"phase", "Bound"},
                 {"extendedResourceNames", {"d0"}},
                 {"nodeName", "n1"},
                 {"podRef", {{"name", "p"}, {"uid", podUid}}}};
  api.updateStatus(resources::kExtendedResourceClaims, "default", c);
  EXPECT_EQ(claimPhase(), "Bound");
  // Its pod ends: whichever the controller sees first, the claim is then released.
  auto pod = api.peek(resources::kPods, "default", "p").value();
  pod["status"]["phase"] = "Succeeded";
  api.updateStatus(resources::kPods, "default", pod);
  ASSERT_TRUE(eventually([&] { return !eventsWithReason("Released").empty(); }));
  const std::string released = eventsWithReason("Released").front()["message"];
  EXPECT_EQ(released.rfind("released d0 on node n1 from pod p: ", 0), 0u) << released;
  EXPECT_TRUE(eventsWithReason("Bound").empty());
}

TEST_F(ControllerLoopTest, WithoutLeadershipNothingIsWritten) {
  seedBoundCluster();
  leader = false;
  const auto rv = api.resourceVersion();
  start();
  api.remove(resources::kPods, "default", "p");
  const auto afterDelete = api.resourceVersion();
  ASSERT_TRUE(eventually([&] { return reconciles("claim", "aborted") >= 1; }));
  EXPECT_EQ(api.resourceVersion(), afterDelete);
  EXPECT_NE(rv, afterDelete);
  EXPECT_EQ(claimPhase(), "Bound");
}

TEST_F(ControllerLoopTest, MetricsAreExported) {
  seedBoundCluster();
  start();
  api.remove(resources::kPods, "default", "p");
  ASSERT_TRUE(eventually([&] { return released(); }));
  const std::string text = registry.render();
  for (const char* name : {"extended_resource_controller_reconciles_total",
                           "extended_resource_controller_reconcile_duration_seconds_bucket",
                           "extended_resource_controller_queue_depth",
                           "extended_resource_controller_releases_total{cause=\"PodDeleted\"} 1"}) {
    EXPECT_NE(text.find(name), std::string::npos) << name;
  }
}

json templateJson(const std::string& name) {
  return {{"apiVersion", kApiVersion},
          {"kind", "ExtendedResourceClaimTemplate"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec",
           {{"metadata", {{"labels", {{"team", "a"}}}}},
            {"spec", {{"rawResourceName", kGpu}, {"extendedResourceNum", 1}}}}}};
}

// A pending pod with one template entry, gpu=tmpl.
json templatePodJson(const std::string& name) {
  json p = podJson(name, "", "", "Pending");
  p["metadata"]["annotations"] = {{kClaimTemplatesAnnotation, "gpu=tmpl"}};
  return p;
}

// The claims labelled with the pod's UID, as the API holds them.
std::vector<json> labelledClaims(FakeApiClient& api, const std::string& podUid) {
  std::vector<json> out;
  const json list = api.list(resources::kExtendedResourceClaims, "default",
                             {.labelSelector = std::string(kPodUidLabel) + "=" + podUid});
  for (const auto& c : list["items"]) {
    out.push_back(c);
  }
  return out;
}

// A pod as far as podClaimName reads it.
Pod podNamed(const std::string& name, const std::string& uid) {
  Pod pod;
  pod.meta.name = name;
  pod.meta.uid = uid;
  return pod;
}

std::string record(FakeApiClient& api, const std::string& pod) {
  return api.peek(resources::kPods, "default", pod)
      .value()
      .value("/metadata/annotations"_json_pointer, json::object())
      .value(kGeneratedClaimsAnnotation, "");
}

TEST_F(ControllerLoopTest, APodNamingATemplateGetsOneClaimOfItsOwnRecorded) {
  api.seed(resources::kExtendedResourceClaimTemplates, templateJson("tmpl"));
  const std::string uid = api.seed(resources::kPods, templatePodJson("w"))["metadata"]["uid"];
  start();
  ASSERT_TRUE(eventually([&] { return !record(api, "w").empty(); })) << "no record written";
  const auto claims = labelledClaims(api, uid);
  ASSERT_EQ(claims.size(), 1u);
  const json& c = claims[0];
  const std::string name = c["metadata"]["name"];
  EXPECT_EQ(record(api, "w"), json({{"gpu", name}}).dump());
  EXPECT_EQ(name, podClaimName(podNamed("w", uid), "gpu", "gpu"));
  EXPECT_EQ(c["metadata"]["labels"]["team"], "a");
  EXPECT_EQ(c["metadata"]["labels"][kTemplateEntryLabel], "gpu");
  EXPECT_EQ(c["metadata"]["ownerReferences"][0]["uid"], uid);
  EXPECT_EQ(c["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(c["metadata"]["ownerReferences"][0]["blockOwnerDeletion"], true);
  EXPECT_EQ(c["spec"]["rawResourceName"], kGpu);
  // A claim made for a pod gets its first status from its bind: none is written before.
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(
      api.peek(resources::kExtendedResourceClaims, "default", name).value().contains("status"));
  // Later updates of the pod change nothing.
  auto p = api.peek(resources::kPods, "default", "w").value();
  p["metadata"]["labels"] = {{"touched", "yes"}};
  api.update(resources::kPods, "default", p);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(labelledClaims(api, uid).size(), 1u);
  EXPECT_EQ(eventsWithReason("ClaimsGenerated").size(), 1u);
}

// A claim created before a crash (or whose create reply was lost) but never recorded is
// adopted, not made again.
TEST_F(ControllerLoopTest, AnUnrecordedClaimOfThePodIsAdoptedNotMadeTwice) {
  api.seed(resources::kExtendedResourceClaimTemplates, templateJson("tmpl"));
  const std::string uid = api.seed(resources::kPods, templatePodJson("w"))["metadata"]["uid"];
  const std::string name = podClaimName(podNamed("w", uid), "gpu", "gpu");
  json made = claimJson(name);
  made["metadata"]["labels"] = {{kTemplateEntryLabel, "gpu"}, {kPodUidLabel, uid}};
  made["metadata"]["ownerReferences"] = {
      {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "w"}, {"uid", uid}, {"controller", true}}};
  api.seed(resources::kExtendedResourceClaims, made);
  start();
  ASSERT_TRUE(eventually([&] { return !record(api, "w").empty(); }));
  EXPECT_EQ(record(api, "w"), json({{"gpu", name}}).dump());
  EXPECT_EQ(labelledClaims(api, uid).size(), 1u);
  EXPECT_EQ(api.list(resources::kExtendedResourceClaims, "default", {})["items"].size(), 1u);
}

// The create's reply is lost after the server made the claim: the next attempt's create is
// refused as AlreadyExists (or the cache shows the claim first), and the claim is recorded,
// not made a second time.
TEST_F(ControllerLoopTest, AClaimWhoseCreateReplyWasLostIsRecordedNotMadeTwice) {
  api.seed(resources::kExtendedResourceClaimTemplates, templateJson("tmpl"));
  api.loseNextCreateReplies(resources::kExtendedResourceClaims);
  const std::string uid = api.seed(resources::kPods, templatePodJson("w"))["metadata"]["uid"];
  start();
  ASSERT_TRUE(eventually([&] { return !record(api, "w").empty(); })) << "no record written";
  EXPECT_EQ(record(api, "w"),
            json({{"gpu", podClaimName(podNamed("w", uid), "gpu", "gpu")}}).dump());
  EXPECT_EQ(labelledClaims(api, uid).size(), 1u);
}

// A claim of another pod under the name: the entry waits, with a Warning, and nothing is
// recorded or made.
TEST_F(ControllerLoopTest, AClaimNotMadeForTheEntryUnderItsNameIsNeitherAdoptedNorReplaced) {
  api.seed(resources::kExtendedResourceClaimTemplates, templateJson("tmpl"));
  const std::string uid = api.seed(resources::kPods, templatePodJson("w"))["metadata"]["uid"];
  api.seed(resources::kExtendedResourceClaims,
           claimJson(podClaimName(podNamed("w", uid), "gpu", "gpu")));
  start();
  ASSERT_TRUE(eventually([&] { return eventsWithReason("ClaimTemplateUnusable").size() == 1; }));
  EXPECT_EQ(record(api, "w"), "");
  EXPECT_EQ(api.list(resources::kExtendedResourceClaims, "default", {})["items"].size(), 1u);
}

TEST_F(ControllerLoopTest, APodWaitsForItsTemplateAndGetsItsClaimOnceItExists) {
  const std::string uid = api.seed(resources::kPods, templatePodJson("w"))["metadata"]["uid"];
  start();
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(labelledClaims(api, uid).empty());
  EXPECT_EQ(record(api, "w"), "");
  EXPECT_EQ(eventsWithReason("ClaimTemplateUnusable").size(), 1u);
  api.create(resources::kExtendedResourceClaimTemplates, "default", templateJson("tmpl"));
  ASSERT_TRUE(eventually([&] { return !record(api, "w").empty(); }));
  EXPECT_EQ(labelledClaims(api, uid).size(), 1u);
}

}  // namespace
}  // namespace ker

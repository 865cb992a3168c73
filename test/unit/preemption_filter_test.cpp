// Preemption decided by the extender's filter: nominations in the device index, the pure
// decisions (holders, node, TTL), the filter end to end with a fake worker, and the worker's
// API calls.
#include <gtest/gtest.h>

#include <climits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/api_error.h"
#include "common/event_recorder.h"
#include "common/resource.h"
#include "model/device_transitions.h"
#include "scheduler/extender.h"
#include "scheduler/preemption/preemption.h"
#include "scheduler/preemption/preemption_worker.h"
#include "scheduler_fixtures.h"
#include "test/unit/extender_parts.h"
#include "test/unit/fake_api_client.h"

namespace ker {
namespace {

using testing::ptr;

using nlohmann::json;
using testing::claim;
using testing::device;
using Clock = DeviceIndex::Clock;

ExtendedResource boundTo(ExtendedResource d, const std::string& claimName) {
  d.phase = DevicePhase::kBound;
  d.phaseWritten = true;
  d.claimRef = ClaimRef{"default", claimName, "uid-" + claimName};
  return d;
}

std::vector<std::string> freeNames(const DeviceIndex& idx, const std::string& node,
                                   const std::string& podUid) {
  std::vector<std::string> out;
  for (const auto& d : idx.freeOnNode("nvidia.com/gpu", node, {}, podUid)) {
    out.push_back(d->meta.name);
  }
  return out;
}

TEST(Nominations, OutliveTheDeviceBeingBoundAndAreFreeOnlyToThePreemptor) {
  DeviceIndex idx;
  idx.upsert(ptr(boundTo(device("a", "n1", {}), "victim-erc")));
  idx.setClaimDevices("default/victim-erc", "nvidia.com/gpu", {"a"});
  const auto now = Clock::now();
  ASSERT_TRUE(idx.nominate("n1", {"a"}, "high", now, std::chrono::seconds(90)));
  EXPECT_EQ(idx.nominatedNode("high", now), "n1");
  // Seen Bound again (the victim's claim still holds it): the nomination stays.
  idx.upsert(ptr(boundTo(device("a", "n1", {}), "victim-erc")));
  EXPECT_EQ(idx.nominatedPods(), 1u);
  // Released by the controller: free to the preemptor only.
  idx.setClaimDevices("default/victim-erc", "nvidia.com/gpu", {});
  idx.upsert(ptr(device("a", "n1", {})));
  EXPECT_EQ(freeNames(idx, "n1", "high"), (std::vector<std::string>{"a"}));
  EXPECT_TRUE(freeNames(idx, "n1", "third").empty());
  EXPECT_FALSE(idx.holdForFilter("n1", {"a"}, "third", now, DeviceIndex::kHoldTtl));
  EXPECT_FALSE(idx.nominate("n1", {"a"}, "third", now, std::chrono::seconds(90)));
  // The preemptor's own filter holds it without losing the nomination.
  EXPECT_TRUE(idx.holdForFilter("n1", {"a"}, "high", now, DeviceIndex::kHoldTtl));
  idx.dropFilterHold("high");
  EXPECT_EQ(idx.nominatedNode("high", now), "n1");
  EXPECT_TRUE(freeNames(idx, "n1", "third").empty());
  // Its bind takes it: the nomination ends.
  ASSERT_TRUE(idx.holdForBind({"a"}, "high"));
  EXPECT_EQ(idx.nominatedPods(), 0u);
  EXPECT_EQ(idx.nominatedNode("high", now), "");
}

TEST(Nominations, ExpireAndAreDroppedWithThePod) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  const auto past = Clock::now() - std::chrono::seconds(120);
  ASSERT_TRUE(idx.nominate("n1", {"a"}, "high", past, std::chrono::seconds(60)));
  EXPECT_EQ(idx.nominatedNode("high", Clock::now()), "");
  EXPECT_EQ(freeNames(idx, "n1", "third"), (std::vector<std::string>{"a"}));
  ASSERT_TRUE(idx.nominate("n1", {"a"}, "other", Clock::now(), std::chrono::seconds(60)));
  EXPECT_EQ(idx.nominatedPods(), 1u);  // the expired one was swept
  idx.dropNomination("other");
  EXPECT_EQ(idx.nominatedPods(), 0u);
  EXPECT_EQ(idx.holdCount(), 0u);
}

TEST(PreemptionHolders, UnknownOrReplacedPodsAreNeverVictimsAndClaimsGroupByPod) {
  std::map<std::string, ClaimPtr> claims;
  auto addClaim = [&](const std::string& name, const std::string& pod) {
    auto c = claim(name, 1);
    c.phase = ClaimPhase::kBound;
    c.podRef = PodRef{pod, "uid-" + pod};
    claims["default/" + name] = std::make_shared<const ExtendedResourceClaim>(c);
  };
  addClaim("c1", "low");
  addClaim("c2", "low");
  addClaim("c3", "gone");
  addClaim("c4", "replaced");
  std::map<std::string, PodPtr> pods;
  auto addPod = [&](const std::string& name, const std::string& uid, int32_t priority) {
    Pod p;
    p.meta.ns = "default";
    p.meta.name = name;
    p.meta.uid = uid;
    p.priority = priority;
    p.gracePeriodSeconds = 5;
    pods["default/" + name] = std::make_shared<const Pod>(p);
  };
  addPod("low", "uid-low", 10);
  addPod("replaced", "uid-new", 10);
  Holders holders;
  auto gpus = [](std::string name) {
    return DeviceIndex::Holds{{"nvidia.com/gpu", {std::move(name)}}};
  };
  addHolders(
      {{"default/c1", gpus("a")},
       {"default/c2", gpus("b")},
       {"default/c3", gpus("c")},
       {"default/c4", gpus("d")},
       {"default/c5", gpus("e")}},
      [&](const std::string& k) -> ClaimPtr {
        auto it = claims.find(k);
        return it == claims.end() ? nullptr : it->second;
      },
      [&](const std::string& k) -> PodPtr {
        auto it = pods.find(k);
        return it == pods.end() ? nullptr : it->second;
      },
      "uid-high", std::nullopt, holders);
  ASSERT_EQ(holders.holders.size(), 4u);
  EXPECT_EQ(holders.holders[0].uid, "uid-low");
  EXPECT_EQ(holders.holders[0].priority, 10);
  EXPECT_EQ(holders.holders[0].claims.size(), 2u);
  EXPECT_EQ(holders.pods[0].gracePeriodSeconds, 5);
  for (size_t h = 1; h < holders.holders.size(); ++h) {
    EXPECT_EQ(holders.holders[h].priority, INT32_MAX) << holders.holders[h].key;
  }
  EXPECT_TRUE(anyLowerPriority(holders, 11));
  EXPECT_FALSE(anyLowerPriority(holders, 10));
}

TEST(PreemptionDecision, PicksTheNodeWithTheLeastImportantVictimsAndSaysWhyNotElsewhere) {
  PodClaims claims;
  claims.pending.push_back(
      std::make_shared<const ExtendedResourceClaim>(claim("want", 1, {{"type", "k80"}})));
  Pod preemptor;
  preemptor.meta = {.name = "high", .ns = "default", .uid = "uid-high"};
  preemptor.priority = 100;
  auto candidate = [](const std::string& node, int32_t priority) {
    PreemptionCandidate c;
    c.node = node;
    c.devices.push_back(ptr(boundTo(device(node + "-a", node, {{"type", "k80"}}), node + "-erc")));
    PreemptionHolder h{
        .uid = "uid-" + node + "-pod", .key = "default/" + node + "-pod", .priority = priority};
    h.claims.push_back(HeldClaim{"default/" + node + "-erc", "nvidia.com/gpu", {node + "-a"}});
    c.holders.holders.push_back(h);
    c.holders.pods.push_back(PreemptionVictim{.uid = h.uid,
                                              .ns = "default",
                                              .name = node + "-pod",
                                              .priority = priority,
                                              .gracePeriodSeconds = 10});
    return c;
  };
  const auto decision = decidePreemption(
      claims, preemptor,
      {candidate("n1", 50), candidate("n2", 10), candidate("n3", 100), candidate("n4", 200)});
  ASSERT_TRUE(decision.order);
  EXPECT_EQ(decision.order->node, "n2");
  ASSERT_EQ(decision.order->victims.size(), 1u);
  EXPECT_EQ(decision.order->victims[0].name, "n2-pod");
  EXPECT_EQ(decision.order->devices, (std::vector<std::string>{"n2-a"}));
  EXPECT_EQ(decision.order->ttl, std::chrono::seconds(10) + kNominationMargin);
  EXPECT_EQ(decision.unresolvable[0], "");  // n1 could preempt too, it was not chosen
  EXPECT_EQ(decision.unresolvable[1], "");
  EXPECT_NE(decision.unresolvable[2], "");  // equal priority
  EXPECT_NE(decision.unresolvable[3], "");  // higher priority

  preemptor.preemptNever = true;
  const auto never = decidePreemption(claims, preemptor, {candidate("n2", 10)});
  EXPECT_FALSE(never.order);
  EXPECT_NE(never.unresolvable[0].find("Never"), std::string::npos);
}

// A node with one k80 held by one pod of the given priority.
PreemptionCandidate heldCandidate(const std::string& node, int32_t priority, const std::string& app,
                                  bool terminating = false) {
  PreemptionCandidate c;
  c.node = node;
  c.devices.push_back(ptr(boundTo(device(node + "-a", node, {{"type", "k80"}}), node + "-erc")));
  PreemptionHolder h{
      .uid = "uid-" + node + "-pod", .key = "default/" + node + "-pod", .priority = priority};
  h.claims.push_back(HeldClaim{"default/" + node + "-erc", "nvidia.com/gpu", {node + "-a"}});
  c.holders.holders.push_back(h);
  c.holders.pods.push_back(PreemptionVictim{.uid = h.uid,
                                            .ns = "default",
                                            .name = node + "-pod",
                                            .priority = priority,
                                            .terminating = terminating,
                                            .labels = {{"app", app}}});
  return c;
}

PodClaims wantsOneK80() {
  PodClaims claims;
  claims.pending.push_back(
      std::make_shared<const ExtendedResourceClaim>(claim("want", 1, {{"type", "k80"}})));
  return claims;
}

// Evicting a pod whose device its agent marked unhealthy frees nothing the preemptor could get:
// released, the device stays Pending with the mark (freeDevice), so no victim is chosen there.
TEST(PreemptionDecision, ADeviceMarkedUnhealthyIsNotCountedAsFreedByItsVictim) {
  const PodClaims claims = wantsOneK80();
  Pod preemptor;
  preemptor.meta = {.name = "high", .ns = "default", .uid = "uid-high"};
  preemptor.priority = 100;
  PreemptionCandidate sick = heldCandidate("n1", 10, "a");
  ExtendedResource marked = *sick.devices[0];
  ASSERT_TRUE(markDeviceUnhealthy(marked, Reason::kDeviceUnhealthy, "ECC errors").ok());
  sick.devices[0] = ptr(marked);
  const auto decision = decidePreemption(claims, preemptor, {sick, heldCandidate("n2", 50, "a")});
  ASSERT_TRUE(decision.order);
  EXPECT_EQ(decision.order->node, "n2") << "n1's victim would free a device nobody is offered";
  EXPECT_NE(decision.unresolvable[0], "");
}

TEST(PreemptionDecision, ResumesOnTheNominatedNodeWhoseVictimsAreTerminating) {
  const PodClaims claims = wantsOneK80();
  Pod preemptor;
  preemptor.meta = {.name = "high", .ns = "default", .uid = "uid-high"};
  preemptor.priority = 100;
  const std::vector<PreemptionCandidate> candidates{heldCandidate("n1", 10, "a"),
                                                    heldCandidate("n2", 50, "a", true)};
  const auto fresh = decidePreemption(claims, preemptor, candidates);
  EXPECT_EQ(fresh.order->node, "n1");
  EXPECT_FALSE(fresh.resumed);
  const auto resumed = decidePreemption(claims, preemptor, candidates, {}, "n2");
  EXPECT_EQ(resumed.order->node, "n2");
  EXPECT_TRUE(resumed.resumed);
  // A nominated node whose victims are not leaving yet is no reason to prefer it.
  const auto again = decidePreemption(
      claims, preemptor, {heldCandidate("n1", 50, "a"), heldCandidate("n2", 10, "a")}, {}, "n1");
  EXPECT_EQ(again.order->node, "n2");
  EXPECT_FALSE(again.resumed);
}

TEST(PreemptionDecision, AvoidsTheNodeWhoseVictimsABudgetProtects) {
  const PodClaims claims = wantsOneK80();
  Pod preemptor;
  preemptor.meta = {.name = "high", .ns = "default", .uid = "uid-high"};
  preemptor.priority = 100;
  // n1's victim is the least important, but a budget with no disruption left covers it.
  const std::vector<PdbPtr> budgets{
      std::make_shared<const PodDisruptionBudget>(PodDisruptionBudget::fromJson(
          {{"metadata", {{"name", "guard"}, {"namespace", "default"}}},
           {"spec", {{"selector", {{"matchLabels", {{"app", "guarded"}}}}}}},
           {"status", {{"disruptionsAllowed", 0}}}}))};
  const std::vector<PreemptionCandidate> candidates{heldCandidate("n1", 10, "guarded"),
                                                    heldCandidate("n2", 50, "free")};
  const auto decision = decidePreemption(claims, preemptor, candidates, budgets);
  ASSERT_TRUE(decision.order);
  EXPECT_EQ(decision.order->node, "n2");
  // Without the budget, the lower-priority victim on n1 is chosen.
  EXPECT_EQ(decidePreemption(claims, preemptor, candidates).order->node, "n1");
  // A budget that still allows a disruption protects nobody.
  const std::vector<PdbPtr> lenient{
      std::make_shared<const PodDisruptionBudget>(PodDisruptionBudget::fromJson(
          {{"metadata", {{"name", "guard"}, {"namespace", "default"}}},
           {"spec", {{"selector", {{"matchLabels", {{"app", "guarded"}}}}}}},
           {"status", {{"disruptionsAllowed", 1}}}}))};
  EXPECT_EQ(decidePreemption(claims, preemptor, candidates, lenient).order->node, "n1");
}

TEST(PreemptionWorkerTest, MarksAndDeletesTheVictimByUidAndLeavesOthersAlone) {
  testing::FakeApiClient api;
  // The fake gives each pod a UID of its own.
  auto pod = [&](const std::string& name) -> std::string {
    const json p = {{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata", {{"name", name}, {"namespace", "default"}}},
                    {"spec", {{"nodeName", "n1"}}}};
    return api.seed(resources::kPods, p)["metadata"]["uid"];
  };
  const std::string lowUid = pod("low");
  pod("replaced");
  const std::string leavingUid = pod("leaving");
  EventRecorder events(api, {.component = "extended-resource-scheduler"});
  PreemptionWorker worker(api, events, {});
  PreemptionOrder order{
      .preemptorUid = "uid-high", .preemptorNs = "default", .preemptorName = "high", .node = "n1"};
  EXPECT_EQ(worker.evict(order, {.uid = lowUid, .ns = "default", .name = "low"}),
            EvictionResult::kDeleted);
  EXPECT_FALSE(api.peek(resources::kPods, "default", "low"));
  EXPECT_EQ(worker.evict(order, {.uid = "uid-old", .ns = "default", .name = "replaced"}),
            EvictionResult::kGone);
  EXPECT_TRUE(api.peek(resources::kPods, "default", "replaced"));
  EXPECT_EQ(worker.evict(order, {.uid = "uid-x", .ns = "default", .name = "absent"}),
            EvictionResult::kGone);
  const int removes = api.calls(testing::FakeApiClient::Verb::kRemove);
  EXPECT_EQ(
      worker.evict(order,
                   {.uid = "uid-leaving", .ns = "default", .name = "leaving", .terminating = true}),
      EvictionResult::kTerminating);
  EXPECT_EQ(api.calls(testing::FakeApiClient::Verb::kRemove), removes);

  const json patch = disruptionTargetPatch("extended-resource-scheduler", SystemTime{});
  const json& c = patch["status"]["conditions"][0];
  EXPECT_EQ(c["type"], "DisruptionTarget");
  EXPECT_EQ(c["status"], "True");
  EXPECT_EQ(c["reason"], "PreemptionByScheduler");
  EXPECT_EQ(preemptedMessage(order), "Preempted by pod uid-high on node n1");
}

// A started worker that collects the preemptors of its failed orders, with its event recorder
// (started too unless said otherwise).
struct FailureRecordingWorker {
  explicit FailureRecordingWorker(ApiClient& api, bool startEvents = true)
      : events(api, {.component = "extended-resource-scheduler"}),
        worker(api, events,
               {.onFailed = [this](const std::string& uid) { failed.push_back(uid); }}) {
    if (startEvents) {
      events.start();
    }
    worker.start();
  }
  EventRecorder events;
  std::vector<std::string> failed;
  PreemptionWorker worker;
};

// A pending pod of the extender's scheduler, as a preemptor is; returns its UID.
std::string seedPreemptor(testing::FakeApiClient& api, const std::string& name,
                          int32_t priority = 0) {
  const json p = {{"apiVersion", "v1"},
                  {"kind", "Pod"},
                  {"metadata", {{"name", name}, {"namespace", "default"}}},
                  {"spec", {{"schedulerName", kDefaultSchedulerName}, {"priority", priority}}}};
  return api.seed(resources::kPods, p)["metadata"]["uid"];
}

TEST(PreemptionWorkerTest, AnOrderDeletesItsVictimsOffTheCallersThreadAndRecordsTheEvents) {
  testing::FakeApiClient api;
  const json p = {{"apiVersion", "v1"},
                  {"kind", "Pod"},
                  {"metadata", {{"name", "low"}, {"namespace", "default"}}},
                  {"spec", {{"nodeName", "n1"}}}};
  const std::string uid = api.seed(resources::kPods, p)["metadata"]["uid"];
  const std::string high = seedPreemptor(api, "high");
  EventRecorder events(api, {.component = "extended-resource-scheduler"});
  events.start();
  PreemptionWorker worker(api, events, {.queueSize = 1});
  PreemptionOrder order{.preemptorUid = high,
                        .preemptorNs = "default",
                        .preemptorName = "high",
                        .node = "n1",
                        .victims = {{.uid = uid, .ns = "default", .name = "low"}}};
  // Not started: the queue takes one order, then refuses.
  ASSERT_TRUE(worker.submit(order));
  EXPECT_FALSE(worker.submit(order));
  worker.start();
  ASSERT_TRUE(worker.drain(std::chrono::seconds(5)));
  EXPECT_FALSE(api.peek(resources::kPods, "default", "low"));
  ASSERT_TRUE(events.flush(std::chrono::seconds(5)));
  std::multiset<std::string> reasons;
  const json list = api.list(resources::kEvents, "default", {});
  for (const auto& e : list["items"]) {
    reasons.insert(e.value("reason", "") + "/" + e["involvedObject"].value("name", ""));
  }
  EXPECT_EQ(reasons, (std::multiset<std::string>{"Preempted/low", "Preempting/high"}));
  worker.stop();
  EXPECT_FALSE(worker.submit(order));
}

std::string seedPod(testing::FakeApiClient& api, const std::string& name) {
  const json p = {{"apiVersion", "v1"},
                  {"kind", "Pod"},
                  {"metadata", {{"name", name}, {"namespace", "default"}}},
                  {"spec", {{"nodeName", "n1"}}}};
  return api.seed(resources::kPods, p)["metadata"]["uid"];
}

TEST(PreemptionWorkerTest, TransientFailuresAreRetriedWithADoublingDelayAndThenGiveUp) {
  testing::FakeApiClient api;
  const std::string uid = seedPod(api, "low");
  EventRecorder events(api, {.component = "extended-resource-scheduler"});
  std::vector<std::chrono::milliseconds> waits;
  PreemptionWorker worker(api, events,
                          {.sleep = [&](std::chrono::milliseconds d) { waits.push_back(d); }});
  PreemptionOrder order{
      .preemptorUid = "uid-high", .preemptorNs = "default", .preemptorName = "high", .node = "n1"};
  const PreemptionVictim victim{.uid = uid, .ns = "default", .name = "low"};
  const ApiError unavailable(ApiErrorKind::kServerError, 503, "ServiceUnavailable", "busy");

  api.failNext(testing::FakeApiClient::Verb::kRemove, unavailable, 2);
  EXPECT_EQ(worker.evict(order, victim), EvictionResult::kDeleted);
  EXPECT_FALSE(api.peek(resources::kPods, "default", "low"));
  EXPECT_EQ(waits, (std::vector<std::chrono::milliseconds>{std::chrono::milliseconds(200),
                                                           std::chrono::milliseconds(400)}));

  // Four attempts, then it is a failure.
  waits.clear();
  const std::string again = seedPod(api, "again");
  api.failNext(testing::FakeApiClient::Verb::kGet, unavailable, -1);
  EXPECT_EQ(worker.evict(order, {.uid = again, .ns = "default", .name = "again"}),
            EvictionResult::kFailed);
  EXPECT_EQ(waits.size(), 3u);
  api.clearFailures();
  EXPECT_TRUE(api.peek(resources::kPods, "default", "again"));

  // A permanent refusal is not retried.
  waits.clear();
  api.failNext(testing::FakeApiClient::Verb::kRemove,
               ApiError(ApiErrorKind::kForbidden, 403, "Forbidden", "no"));
  EXPECT_EQ(worker.evict(order, {.uid = again, .ns = "default", .name = "again"}),
            EvictionResult::kFailed);
  EXPECT_TRUE(waits.empty());
}

TEST(PreemptionWorkerTest, AFullOrderNominatesTheNodeInThePreemptorsStatus) {
  testing::FakeApiClient api;
  const std::string high = seedPreemptor(api, "high");
  const std::string low = seedPod(api, "low");
  FailureRecordingWorker rig(api, false);
  PreemptionWorker& worker = rig.worker;
  std::vector<std::string>& failed = rig.failed;
  ASSERT_TRUE(worker.submit({.preemptorUid = high,
                             .preemptorNs = "default",
                             .preemptorName = "high",
                             .node = "n1",
                             .victims = {{.uid = low, .ns = "default", .name = "low"}}}));
  ASSERT_TRUE(worker.drain(std::chrono::seconds(5)));
  EXPECT_FALSE(api.peek(resources::kPods, "default", "low"));
  EXPECT_EQ(api.get(resources::kPods, "default", "high")["status"].value("nominatedNodeName", ""),
            "n1");
  EXPECT_TRUE(failed.empty());
  // A preemptor replaced under its name is not nominated.
  EXPECT_EQ(nominatedNodePatch("uid-other", "n2")["metadata"]["uid"], "uid-other");
  EXPECT_TRUE(nominatedNodePatch(high, "")["status"]["nominatedNodeName"].is_null());
}

TEST(PreemptionWorkerTest, AVictimThatCannotBeEvictedEndsTheOrderWithAWarning) {
  testing::FakeApiClient api;
  const std::string high = seedPreemptor(api, "high");
  api.patch(resources::kPods, "default", "high", PatchType::kMerge,
            {{"status", {{"nominatedNodeName", "n0"}}}}, "status");
  const std::string first = seedPod(api, "first");
  const std::string second = seedPod(api, "second");
  FailureRecordingWorker rig(api);
  EventRecorder& events = rig.events;
  PreemptionWorker& worker = rig.worker;
  std::vector<std::string>& failed = rig.failed;
  api.failNext(testing::FakeApiClient::Verb::kRemove,
               ApiError(ApiErrorKind::kForbidden, 403, "Forbidden", "no"));
  ASSERT_TRUE(worker.submit({.preemptorUid = high,
                             .preemptorNs = "default",
                             .preemptorName = "high",
                             .node = "n1",
                             .victims = {{.uid = first, .ns = "default", .name = "first"},
                                         {.uid = second, .ns = "default", .name = "second"}}}));
  ASSERT_TRUE(worker.drain(std::chrono::seconds(5)));
  EXPECT_EQ(failed, std::vector<std::string>{high});
  // The rest are spared, and the stale nomination is cleared.
  EXPECT_TRUE(api.peek(resources::kPods, "default", "first"));
  EXPECT_TRUE(api.peek(resources::kPods, "default", "second"));
  EXPECT_FALSE(
      api.get(resources::kPods, "default", "high")["status"].contains("nominatedNodeName"));
  ASSERT_TRUE(events.flush(std::chrono::seconds(5)));
  std::multiset<std::string> reasons;
  const json list = api.list(resources::kEvents, "default", {});
  for (const auto& e : list["items"]) {
    reasons.insert(e.value("reason", "") + "/" + e.value("type", "") + "/" +
                   e["involvedObject"].value("name", ""));
  }
  EXPECT_EQ(reasons, (std::multiset<std::string>{"Preempting/Normal/high",
                                                 "PreemptionFailed/Warning/high"}));
}

// A filter request's pod is only the caller's word: an order for a preemptor the API server
// does not have as described deletes nobody, writes nothing and gives its nomination up.
TEST(PreemptionWorkerTest, AnOrderForAPreemptorThatIsNotTheLivePodDeletesNobody) {
  testing::FakeApiClient api;
  const std::string low = seedPod(api, "low");
  const std::string lowly = seedPreemptor(api, "lowly", 5);
  FailureRecordingWorker rig(api);
  EventRecorder& events = rig.events;
  PreemptionWorker& worker = rig.worker;
  std::vector<std::string>& failed = rig.failed;
  const PreemptionVictim victim{.uid = low, .ns = "default", .name = "low", .priority = 10};
  // A pod that does not exist, and a real one whose priority is not the one claimed.
  ASSERT_TRUE(worker.submit({.preemptorUid = "uid-ghost",
                             .preemptorNs = "default",
                             .preemptorName = "ghost",
                             .preemptorPriority = 1000000,
                             .node = "n1",
                             .victims = {victim}}));
  ASSERT_TRUE(worker.submit({.preemptorUid = lowly,
                             .preemptorNs = "default",
                             .preemptorName = "lowly",
                             .preemptorPriority = 1000000,
                             .node = "n1",
                             .victims = {victim}}));
  ASSERT_TRUE(worker.drain(std::chrono::seconds(5)));
  EXPECT_TRUE(api.peek(resources::kPods, "default", "low"));
  EXPECT_EQ(api.calls(testing::FakeApiClient::Verb::kRemove), 0);
  EXPECT_EQ(api.calls(testing::FakeApiClient::Verb::kPatch), 0);
  EXPECT_EQ(failed, (std::vector<std::string>{"uid-ghost", lowly}));
  ASSERT_TRUE(events.flush(std::chrono::seconds(5)));
  EXPECT_TRUE(api.list(resources::kEvents, "default", {})["items"].empty());
}

TEST(PriorityFloorTest, TracksTheLowestPriorityOfThePodsItWasGiven) {
  PriorityFloor floor;
  EXPECT_FALSE(floor.lowest());
  floor.set("a", 10);
  floor.set("b", 10);
  floor.set("c", 50);
  EXPECT_EQ(floor.lowest(), 10);
  floor.erase("a");
  EXPECT_EQ(floor.lowest(), 10);
  floor.set("b", 70);  // updated
  EXPECT_EQ(floor.lowest(), 50);
  floor.erase("c");
  floor.erase("unknown");
  EXPECT_EQ(floor.lowest(), 70);
  floor.erase("b");
  EXPECT_FALSE(floor.lowest());
}

TEST(PodPriority, ReadFromTheSpecWithKubernetesDefaults) {
  const Pod plain = Pod::fromJson({{"metadata", {{"name", "a"}}}, {"spec", json::object()}});
  EXPECT_EQ(plain.priority, 0);
  EXPECT_FALSE(plain.preemptNever);
  EXPECT_EQ(plain.gracePeriodSeconds, 30);
  const Pod set = Pod::fromJson(
      {{"metadata", {{"name", "a"}}},
       {"spec",
        {{"priority", -5}, {"preemptionPolicy", "Never"}, {"terminationGracePeriodSeconds", 7}}}});
  EXPECT_EQ(set.priority, -5);
  EXPECT_TRUE(set.preemptNever);
  EXPECT_EQ(set.gracePeriodSeconds, 7);
  const Pod huge = Pod::fromJson(
      {{"metadata", {{"name", "a"}}},
       {"spec", {{"priority", int64_t{1} << 40}, {"preemptionPolicy", "PreemptLowerPriority"}}}});
  EXPECT_EQ(huge.priority, INT32_MAX);
  EXPECT_FALSE(huge.preemptNever);
  EXPECT_EQ(huge.invalid, "");
}

// The filter end to end: node n0's two k80s are held by pods of priority 10.
class PreemptionFilterTest : public ::testing::Test, protected testing::ExtenderParts {
 protected:
  void SetUp() override {
    for (const std::string holder : {"low-0", "low-1"}) {
      const std::string dev = "n0-" + holder;
      index_.upsert(ptr(boundTo(device(dev, "n0", {{"type", "k80"}}), holder + "-erc")));
      auto c = claim(holder + "-erc", 1, {{"type", "k80"}});
      c.phase = ClaimPhase::kBound;
      c.podRef = PodRef{holder, "uid-" + holder};
      c.allocated = {dev};
      claims_["default/" + c.meta.name] = std::make_shared<const ExtendedResourceClaim>(c);
      index_.setClaimDevices("default/" + c.meta.name, "nvidia.com/gpu", {dev});
      addPod(holder, 10);
    }
    extender_.enablePreemption({.pods = [this](const std::string& key) -> PodPtr {
                                  auto it = pods_.find(key);
                                  return it == pods_.end() ? nullptr : it->second;
                                },
                                .submit =
                                    [this](PreemptionOrder order) {
                                      orders_.push_back(std::move(order));
                                      return true;
                                    },
                                .lowestPriority = [this] { return floor_.lowest(); }});
  }
  void addPod(const std::string& name, int32_t priority) {
    Pod p;
    p.meta = {.name = name, .ns = "default", .uid = "uid-" + name};
    p.nodeName = "n0";
    p.priority = priority;
    pods_["default/" + name] = std::make_shared<const Pod>(p);
    floor_.set(p.meta.uid, priority);
  }
  FilterReply filter(const std::string& pod, int32_t priority, bool never = false) {
    if (!claims_.contains("default/" + pod + "-erc")) {
      claims_["default/" + pod + "-erc"] =
          std::make_shared<const ExtendedResourceClaim>(claim(pod + "-erc", 1, {{"type", "k80"}}));
    }
    json spec = {{"priority", priority}};
    if (never) {
      spec["preemptionPolicy"] = "Never";
    }
    const json p = {{"metadata",
                     {{"name", pod},
                      {"namespace", "default"},
                      {"uid", "uid-" + pod},
                      {"annotations", {{"extendedresource.io/claims", pod + "-erc"}}}}},
                    {"spec", spec}};
    body_ = json{{"Pod", p}, {"NodeNames", {"n0"}}, {"Nodes", nullptr}}.dump();
    args_ = parseExtenderArgs(body_);
    return extender_.filter(args_).reply;
  }
  // What the controller does once a victim is gone: its claim releases the device.
  void release(const std::string& holder) {
    claims_.erase("default/" + holder + "-erc");
    index_.setClaimDevices("default/" + holder + "-erc", "nvidia.com/gpu", {});
    index_.upsert(ptr(device("n0-" + holder, "n0", {{"type", "k80"}})));
    pods_.erase("default/" + holder);
    floor_.erase("uid-" + holder);
  }

  std::string body_;
  ExtenderArgs args_;
  std::map<std::string, PodPtr> pods_;
  std::vector<PreemptionOrder> orders_;
  PriorityFloor floor_;
};

TEST_F(PreemptionFilterTest, OneVictimIsPreemptedOnceAndItsDeviceKeptForThePreemptor) {
  FilterReply reply = filter("high", 100);
  EXPECT_TRUE(reply.passing.empty());
  ASSERT_EQ(reply.failed.size(), 1u);
  EXPECT_NE(reply.failed[0].second.find("waiting for 1 lower-priority pod"), std::string::npos)
      << reply.failed[0].second;
  ASSERT_EQ(orders_.size(), 1u);
  ASSERT_EQ(orders_[0].victims.size(), 1u);
  const std::string victim = orders_[0].victims[0].name;
  EXPECT_EQ(orders_[0].node, "n0");
  EXPECT_EQ(orders_[0].devices, (std::vector<std::string>{"n0-" + victim}));
  EXPECT_EQ(extender_.stats().preemptions.load(), 1u);

  // Tried again before the victim is gone: it waits, nobody else is chosen.
  reply = filter("high", 100);
  EXPECT_TRUE(reply.passing.empty());
  ASSERT_EQ(reply.failed.size(), 1u);
  EXPECT_NE(reply.failed[0].second.find("waiting for the lower-priority pods"), std::string::npos)
      << reply.failed[0].second;
  EXPECT_EQ(orders_.size(), 1u);

  // The victim's claim released: a third pod of low priority does not get the device...
  release(victim);
  reply = filter("third", 10);
  EXPECT_TRUE(reply.passing.empty());
  EXPECT_EQ(orders_.size(), 1u);
  // ...the preemptor does.
  reply = filter("high", 100);
  ASSERT_EQ(reply.passing.size(), 1u);
  EXPECT_EQ(reply.passing[0], "n0");
  EXPECT_EQ(index_.filterHoldNode("uid-high", Clock::now()), "n0");
}

TEST_F(PreemptionFilterTest, EqualPriorityHoldersAreNeverPreemptedAndTheNodeIsUnresolvable) {
  FilterReply reply = filter("peer", 10);
  EXPECT_TRUE(reply.passing.empty());
  EXPECT_TRUE(orders_.empty());
  // Nobody of lower priority anywhere: the reply is as without preemption.
  EXPECT_EQ(reply.failed.size(), 1u);
  EXPECT_EQ(index_.nominatedPods(), 0u);
}

TEST_F(PreemptionFilterTest, HigherPriorityHoldersAreNeverPreempted) {
  addPod("low-0", 1000);
  addPod("low-1", 1000);
  FilterReply reply = filter("high", 100);
  EXPECT_TRUE(orders_.empty());
  EXPECT_TRUE(reply.passing.empty());
}

TEST_F(PreemptionFilterTest, UnresolvableWhenOnlySomeHoldersAreLowerButNotEnough) {
  // The preemptor needs 2 devices; only one holder is lower: no victim set makes room.
  addPod("low-1", 500);
  claims_["default/big-erc"] =
      std::make_shared<const ExtendedResourceClaim>(claim("big-erc", 2, {{"type", "k80"}}));
  FilterReply reply = filter("big", 100);
  EXPECT_TRUE(orders_.empty());
  EXPECT_TRUE(reply.failed.empty());
  ASSERT_EQ(reply.failedUnresolvable.size(), 1u);
  EXPECT_NE(reply.failedUnresolvable[0].second.find("preemption cannot help"), std::string::npos)
      << reply.failedUnresolvable[0].second;
}

TEST_F(PreemptionFilterTest, APodWhosePolicyIsNeverPreemptsNobody) {
  FilterReply reply = filter("high", 100, true);
  EXPECT_TRUE(orders_.empty());
  EXPECT_EQ(reply.failed.size(), 1u);
}

TEST_F(PreemptionFilterTest, UnknownHolderPodsAreNeverVictims) {
  pods_.clear();
  floor_.set("uid-elsewhere", 0);  // some lower pod is bound, not these holders
  FilterReply reply = filter("high", 100);
  EXPECT_TRUE(orders_.empty());
  EXPECT_TRUE(reply.passing.empty());
}

}  // namespace
}  // namespace ker

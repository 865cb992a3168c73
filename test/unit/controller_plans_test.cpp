#include <gtest/gtest.h>

#include "controller/claim_plan.h"
#include "controller/device_plan.h"
#include "controller/pod_plan.h"
#include "controller/write_request.h"
#include "model/claim_transitions.h"
#include "model/conditions.h"

namespace ker {
namespace {

using namespace std::chrono_literals;

const SteadyTime kT0{std::chrono::hours(1000)};

ExtendedResourceClaim claimBoundTo(const std::string& podUid) {
  ExtendedResourceClaim c;
  c.meta = {.name = "c", .ns = "default", .uid = "uid-c", .resourceVersion = "7"};
  c.rawResourceName = "nvidia.com/gpu";
  c.phase = ClaimPhase::kBound;
  c.phaseWritten = true;
  c.allocated = {"d0"};
  c.nodeName = "n1";
  c.podRef = PodRef{"p", podUid};
  return c;
}

ExtendedResource deviceBoundTo(const ExtendedResourceClaim& c) {
  ExtendedResource d;
  d.meta = {.name = "d0", .uid = "uid-d0", .resourceVersion = "3"};
  d.rawResourceName = "nvidia.com/gpu";
  d.nodeAffinity = {{NodeSelectorTerm{{}, {{"metadata.name", SelectorOperator::kIn, {"n1"}}}}}};
  d.phase = DevicePhase::kBound;
  d.phaseWritten = true;
  d.claimRef = ClaimRef{c.meta.ns, c.meta.name, c.meta.uid};
  return d;
}

Pod runningPod(const std::string& uid) {
  Pod p;
  p.meta = {.name = "p", .ns = "default", .uid = uid};
  p.nodeName = "n1";
  p.phase = "Running";
  p.claims = {"c"};
  return p;
}

// A consistent Bound claim and its running holder: nothing to write.
class ClaimPlanTest : public ::testing::Test {
 protected:
  ClaimPlanTest()
      : claim(claimBoundTo("uid-p")), d0(deviceBoundTo(claim)), holder(runningPod("uid-p")) {
    in.view.claim = &claim;
    in.view.holders = {{&holder, false}};
    in.view.devices = {{"d0", &d0}};
    in.view.now = kT0;
    in.view.grace = 2min;
  }

  // Invalid, and marked so (with the conditions the mark writes).
  void markedInvalid(const std::string& why) {
    claim.invalid = why;
    claim.reason = "Invalid";
    claim.message = why;
    claim.conditions = claimConditions(claim, {}, in.now);
  }

  std::vector<std::string> eventReasons(const Plan& p) {
    std::vector<std::string> out;
    for (const auto& e : p.events) {
      out.push_back(e.about.kind + "/" + e.reason);
    }
    return out;
  }

  ExtendedResourceClaim claim;
  ExtendedResource d0;
  Pod holder;
  ClaimInputs in;
};

TEST_F(ClaimPlanTest, ConsistentClaimFirstSeenPlansNothing) {
  const Plan p = planClaim(in);
  EXPECT_FALSE(p.write);
  EXPECT_FALSE(p.verify);
  EXPECT_TRUE(p.events.empty()) << "a claim found Bound at start is not news";
}

TEST_F(ClaimPlanTest, ReleaseWritesPendingThenFreesWithItsOrigin) {
  holder.phase = "Succeeded";
  const Plan p = planClaim(in);
  ASSERT_TRUE(p.write);
  EXPECT_FALSE(renderWrite(*p.write).mergePatch);
  EXPECT_EQ(renderWrite(*p.write).body["metadata"]["resourceVersion"], "7")
      << "conditional on what was seen";
  EXPECT_EQ(renderWrite(*p.write).body["status"]["phase"], "Pending");
  EXPECT_EQ(renderWrite(*p.write).body["status"]["reason"], "Released");
  EXPECT_FALSE(renderWrite(*p.write).body["status"].contains("podRef"));
  EXPECT_EQ(p.change, Change::kReleased);
  EXPECT_EQ(p.cause, ReleaseCause::kPodFinished);
  ASSERT_TRUE(p.frees);
  EXPECT_EQ(p.frees->names, std::vector<std::string>{"d0"});
  EXPECT_EQ(p.frees->from, (ClaimRef{"default", "c", "uid-c"}));
  EXPECT_EQ(p.frees->status.releasedFrom, p.frees->from) << "Released from the claim";
  EXPECT_FALSE(p.frees->statusIfClaimGone.releasedFrom) << "Orphaned";
  EXPECT_EQ(eventReasons(p),
            (std::vector<std::string>{"ExtendedResourceClaim/Released", "Pod/ClaimReleased"}));
  EXPECT_EQ(p.events[1].about.uid, "uid-p") << "the holder, gone or not";
  // The bind had no event of its own: the release's says what the claim held.
  EXPECT_EQ(p.events[0].message, "released d0 on node n1 from pod p: " + p.why);
}

// The same claim, shareable, held by p and a second running pod q.
class SharedClaimPlanTest : public ClaimPlanTest {
 protected:
  SharedClaimPlanTest() : second(runningPod("uid-q")) {
    second.meta.name = "q";
    claim.shareable = true;
    claim.podRef.reset();
    claim.sharedHolders = {PodRef{"p", "uid-p"}, PodRef{"q", "uid-q"}};
    in.view.holders = {{&holder, false}, {&second, false}};
  }
  Pod second;
};

TEST_F(SharedClaimPlanTest, AHolderThatGoesLeavesTheHoldersAndTheDevicesStay) {
  holder.phase = "Succeeded";
  const Plan p = planClaim(in);
  ASSERT_TRUE(p.write);
  EXPECT_EQ(renderWrite(*p.write).body["metadata"]["resourceVersion"], "7")
      << "conditional on what was seen";
  EXPECT_EQ(renderWrite(*p.write).body["status"]["phase"], "Bound");
  EXPECT_EQ(renderWrite(*p.write).body["status"]["holders"],
            nlohmann::json::parse(R"([{"name": "q", "uid": "uid-q"}])"));
  EXPECT_EQ(renderWrite(*p.write).body["status"]["extendedResourceNames"], nlohmann::json({"d0"}));
  EXPECT_EQ(p.change, Change::kHoldersLeft);
  EXPECT_EQ(p.cause, ReleaseCause::kPodFinished);
  EXPECT_FALSE(p.frees);
  EXPECT_EQ(eventReasons(p),
            (std::vector<std::string>{"Pod/ClaimReleased", "ExtendedResourceClaim/HoldersLeft"}));
  EXPECT_EQ(p.events[0].about.uid, "uid-p");
}

TEST_F(SharedClaimPlanTest, TheLastHolderGoingReleasesAndTellsEveryHolder) {
  holder.phase = "Succeeded";
  second.phase = "Failed";
  const Plan p = planClaim(in);
  ASSERT_TRUE(p.write);
  EXPECT_EQ(renderWrite(*p.write).body["status"]["phase"], "Pending");
  EXPECT_FALSE(renderWrite(*p.write).body["status"].contains("holders"));
  EXPECT_EQ(p.change, Change::kReleased);
  ASSERT_TRUE(p.frees);
  EXPECT_EQ(p.frees->names, std::vector<std::string>{"d0"});
  EXPECT_EQ(eventReasons(p), (std::vector<std::string>{"ExtendedResourceClaim/Released",
                                                       "Pod/ClaimReleased", "Pod/ClaimReleased"}));
}

TEST_F(SharedClaimPlanTest, AClaimIsProtectedWhileAnyHolderHoldsIt) {
  in.protect = true;
  claim.meta.deleting = true;
  claim.meta.finalizers = {kClaimProtectionFinalizer};
  holder.phase = "Succeeded";
  Plan p = planClaim(in);
  EXPECT_EQ(p.change, Change::kHoldersLeft) << "the holder leaves; the finalizer stays";
  ASSERT_EQ(eventReasons(p).back(), "ExtendedResourceClaim/DeletionWaiting");
  EXPECT_NE(p.events.back().message.find("once pod q no longer holds it"), std::string::npos)
      << "only the holder that stays is waited for: " << p.events.back().message;
  claim.sharedHolders = {PodRef{"q", "uid-q"}};
  in.view.holders = {{&second, false}};
  p = planClaim(in);
  EXPECT_EQ(p.change, Change::kDeletionWaiting) << "q still holds it";
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].reason, "DeletionWaiting");
}

TEST_F(ClaimPlanTest, AnInvalidClaimReleasedKeepsSayingWhy) {
  holder.phase = "Failed";
  markedInvalid("spec.metadataRequirements: expected an object");
  const Plan p = planClaim(in);
  ASSERT_TRUE(p.write);
  EXPECT_EQ(renderWrite(*p.write).body["status"]["reason"], "Invalid");
  EXPECT_EQ(renderWrite(*p.write).body["status"]["message"], claim.invalid);
  EXPECT_EQ(p.change, Change::kReleased);
}

TEST_F(ClaimPlanTest, InvalidClaimIsMarkedByAMergePatchOnce) {
  claim.invalid = "spec.extendedResourceNum: expected an integer";
  Plan p = planClaim(in);
  ASSERT_TRUE(p.write);
  EXPECT_TRUE(renderWrite(*p.write).mergePatch);
  nlohmann::json status = renderWrite(*p.write).body["status"];
  const auto conditions = readConditions(status);
  status.erase("conditions");
  EXPECT_EQ(status, nlohmann::json({{"reason", "Invalid"}, {"message", claim.invalid}}));
  EXPECT_EQ(renderWrite(*p.write).body["metadata"]["resourceVersion"], "7");
  EXPECT_EQ(p.change, Change::kMarkedInvalid);
  EXPECT_EQ(eventReasons(p), std::vector<std::string>{"ExtendedResourceClaim/Invalid"});
  // Its conditions come in the same write: still Bound to its pod.
  ExtendedResourceClaim marked = claim;
  marked.reason = "Invalid";
  marked.message = claim.invalid;
  EXPECT_EQ(conditions, claimConditions(marked, {}, in.now));

  claim.phaseWritten = false;
  ASSERT_TRUE(initializeClaim(claim).ok());
  p = planClaim(in);
  EXPECT_EQ(renderWrite(*p.write).body["status"]["phase"], "Pending")
      << "a claim without a phase gets one as it is marked";
  const auto pending = readConditions(renderWrite(*p.write).body["status"]);
  ASSERT_TRUE(findCondition(pending, ConditionType::kAllocated));
  EXPECT_EQ(findCondition(pending, ConditionType::kAllocated)->reason, Reason::kInvalid)
      << "a Pending claim cannot be allocated while invalid";
  claim = claimBoundTo("uid-p");
  claim.invalid = "spec.extendedResourceNum: expected an integer";

  claim.reason = "Invalid";
  claim.message = claim.invalid;
  p = planClaim(in);
  ASSERT_TRUE(p.write) << "marked by an earlier version, without its conditions";
  EXPECT_TRUE(p.events.empty()) << "the mark itself was said";
  claim.conditions = conditions;
  p = planClaim(in);
  EXPECT_FALSE(p.write) << "marked already, and its pod runs on";

  claim.invalid.clear();
  p = planClaim(in);
  ASSERT_TRUE(p.write);
  EXPECT_EQ(p.change, Change::kValidAgain);
  status = renderWrite(*p.write).body["status"];
  EXPECT_EQ(readConditions(status), claimConditions(claimBoundTo("uid-p"), {}, in.now));
  status.erase("conditions");
  EXPECT_EQ(status, nlohmann::json({{"reason", nullptr}, {"message", nullptr}}));
}

TEST_F(ClaimPlanTest, TheInvalidMarkKeepsTheConditionsOfOthers) {
  claim.invalid = "spec.extendedResourceNum: expected an integer";
  claim.raw = nlohmann::json::parse(R"({"status": {"conditions": [
      {"type": "Ready", "status": "True", "reason": "Theirs"},
      {"type": "Allocated", "status": "False", "reason": "Pending"}]}})");
  const Plan p = planClaim(in);
  ASSERT_TRUE(p.write);
  const nlohmann::json list = renderWrite(*p.write).body["status"]["conditions"];
  ASSERT_EQ(list.size(), 3u) << list.dump();
  EXPECT_EQ(list[0]["type"], "Allocated");
  EXPECT_EQ(list[0]["status"], "True");
  EXPECT_EQ(list[2]["type"], "Ready");
}

TEST_F(ClaimPlanTest, AnUnreadableStatusIsLeftAlone) {
  markedInvalid("status.podRef: expected an object");
  claim.statusReadable = false;
  holder.phase = "Succeeded";
  const Plan p = planClaim(in);
  EXPECT_FALSE(p.write) << "it cannot be trusted to say what it holds";
}

TEST_F(ClaimPlanTest, LostDevicesAreListedAndTheHolderWarned) {
  in.view.devices = {{"d0", nullptr}};
  in.view.devicesLive = true;
  const Plan p = planClaim(in);
  ASSERT_TRUE(p.write);
  EXPECT_EQ(p.change, Change::kClaimLost);
  EXPECT_EQ(renderWrite(*p.write).body["status"]["phase"], "Lost");
  EXPECT_EQ(renderWrite(*p.write).body["status"]["reason"], "ExtendedResourceLost")
      << "the names are data: in the list, not the reason";
  EXPECT_EQ(renderWrite(*p.write).body["status"]["lostExtendedResourceNames"],
            nlohmann::json({"d0"}));
  EXPECT_EQ(eventReasons(p),
            (std::vector<std::string>{"ExtendedResourceClaim/Lost", "Pod/ClaimLost"}));
}

TEST_F(ClaimPlanTest, MissingFromTheCacheAsksForALiveReadFirst) {
  in.view.devices = {{"d0", nullptr}};
  const Plan p = planClaim(in);
  ASSERT_TRUE(p.verify);
  EXPECT_EQ(p.verify->what, LiveRead::kClaimDevices);
  EXPECT_FALSE(p.write);
}

TEST(DeletedClaimPlan, WarnsAHolderThatRunsOn) {
  const ExtendedResourceClaim last = claimBoundTo("uid-p");
  Pod holder = runningPod("uid-p");
  Plan p = planDeletedClaim(last, &holder);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].reason, "ClaimDeleted");
  EXPECT_EQ(p.events[0].type, EventType::kWarning);
  EXPECT_EQ(p.events[0].about.name, "p");
  holder.phase = "Succeeded";
  EXPECT_TRUE(planDeletedClaim(last, &holder).events.empty());
  EXPECT_TRUE(planDeletedClaim(last, nullptr).events.empty());
}

class DevicePlanTest : public ::testing::Test {
 protected:
  static std::vector<std::string> eventReasons(const Plan& p) {
    std::vector<std::string> out;
    for (const auto& e : p.events) {
      out.push_back(e.reason);
    }
    return out;
  }
  DevicePlanTest() : claim(claimBoundTo("uid-p")) {
    device.meta = {.name = "d0", .resourceVersion = "3"};
    device.rawResourceName = "nvidia.com/gpu";
    device.nodeAffinity = {
        {NodeSelectorTerm{{}, {{"metadata.name", SelectorOperator::kIn, {"n1"}}}}}};
    device.phaseWritten = true;
    in.view.device = &device;
    in.view.now = kT0;
    in.view.grace = 45s;
  }
  ExtendedResourceClaim claim;
  ExtendedResource device;
  DeviceInputs in;
};

TEST_F(DevicePlanTest, RebindReadsTheClaimLiveFirst) {
  in.view.listedBy = {&claim};
  Plan p = planDevice(in);
  ASSERT_TRUE(p.verify);
  EXPECT_EQ(p.verify->what, LiveRead::kRebindClaim);
  EXPECT_EQ(p.verify->claimKey, "default/c");

  in.rebindClaimRead = true;
  in.rebindClaimLive = &claim;
  p = planDevice(in);
  ASSERT_TRUE(p.write);
  EXPECT_EQ(p.change, Change::kDeviceRebound);
  EXPECT_EQ(renderWrite(*p.write).body["status"]["phase"], "Bound");
  EXPECT_EQ(renderWrite(*p.write).body["status"]["reason"], "Rebound");
  EXPECT_EQ(renderWrite(*p.write).body["status"]["claimRef"]["uid"], "uid-c");
}

TEST_F(DevicePlanTest, NoRebindToAClaimReleasedMeanwhile) {
  in.view.listedBy = {&claim};
  in.rebindClaimRead = true;
  ExtendedResourceClaim released = claim;
  ASSERT_TRUE(releaseClaim(released, "pod gone").ok());
  in.rebindClaimLive = &released;
  EXPECT_FALSE(planDevice(in).write);
  in.rebindClaimLive = nullptr;
  EXPECT_FALSE(planDevice(in).write) << "deleted";
  ExtendedResourceClaim recreated = claim;
  recreated.meta.uid = "uid-c2";
  in.rebindClaimLive = &recreated;
  EXPECT_FALSE(planDevice(in).write) << "another claim of that name";
}

TEST_F(DevicePlanTest, FreedOrphanAndFirstStatusClearTheReleaseOrigin) {
  device.phaseWritten = false;
  device.releasedFrom = ClaimRef{"default", "old", "uid-old"};
  Plan p = planDevice(in);
  ASSERT_TRUE(p.write);
  EXPECT_EQ(p.change, Change::kDeviceInitialized);
  nlohmann::json status = renderWrite(*p.write).body["status"];
  EXPECT_EQ(status["conditions"][0]["reason"], "Available");  // the rest: conditions_test.cpp
  status.erase("conditions");
  EXPECT_EQ(status, nlohmann::json({{"phase", "Available"}}));

  device.phaseWritten = true;
  device.phase = DevicePhase::kBound;
  device.claimRef = ClaimRef{"default", "gone", "uid-gone"};
  in.view.claimLive = true;
  p = planDevice(in);
  ASSERT_TRUE(p.write);
  EXPECT_EQ(p.change, Change::kDeviceFreed);
  EXPECT_EQ(renderWrite(*p.write).body["status"]["reason"], "Orphaned");
  EXPECT_FALSE(renderWrite(*p.write).body["status"].contains("releasedFrom"));
  EXPECT_FALSE(renderWrite(*p.write).body["status"].contains("claimRef"));
}

TEST_F(DevicePlanTest, InvalidDeviceIsMarkedAndNeverRepaired) {
  device.invalid = "spec.properties: expected an object";
  device.phase = DevicePhase::kBound;
  device.claimRef = ClaimRef{"default", "gone", "uid-gone"};
  Plan p = planDevice(in);
  ASSERT_TRUE(p.write);
  EXPECT_TRUE(renderWrite(*p.write).mergePatch);
  EXPECT_EQ(p.change, Change::kMarkedInvalid);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].reason, "Invalid");
  EXPECT_EQ(p.events[0].about.kind, "ExtendedResource");
  device.reason = "Invalid";
  device.message = device.invalid;
  device.conditions = readConditions(renderWrite(*p.write).body["status"]);
  EXPECT_EQ(device.conditions, deviceConditions(device, {}, in.now))
      << "the mark's conditions are those of the marked status";
  in.view.claimLive = true;
  p = planDevice(in);
  EXPECT_FALSE(p.write);
  EXPECT_FALSE(p.verify);
}

TEST(PodPlan, WarnsOncePerProblem) {
  Pod pod = runningPod("uid-p");
  pod.meta.annotations[kClaimsAnnotation] = "[";
  pod.invalid = "not a list of claim names";
  PodPlan p = planPod(pod, "");
  ASSERT_TRUE(p.warning);
  EXPECT_EQ(p.warning->reason, "InvalidClaims");
  EXPECT_EQ(p.problem, pod.invalid);
  p = planPod(pod, pod.invalid);
  EXPECT_FALSE(p.warning) << "warned of already";
  EXPECT_EQ(p.problem, pod.invalid);
  pod.invalid = "another problem";
  EXPECT_TRUE(planPod(pod, "not a list of claim names").warning);
  pod.invalid.clear();
  p = planPod(pod, "another problem");
  EXPECT_FALSE(p.warning);
  EXPECT_EQ(p.problem, "") << "mended: the warning is forgotten";
}

TEST(StatusReasons, ParseWhatIsWritten) {
  for (auto r : {Reason::kBound, Reason::kReleased, Reason::kRecovered, Reason::kRebound,
                 Reason::kOrphaned, Reason::kInvalid, Reason::kLost, Reason::kDeviceUnhealthy}) {
    EXPECT_EQ(parseReason(toString(r)), r) << toString(r);
  }
  EXPECT_EQ(parseReason(""), Reason::kNone);
  EXPECT_EQ(parseReason("ExtendedResourceLost: d0, d1"), Reason::kOther)
      << "a reason carries no data";
  EXPECT_EQ(parseReason("released"), Reason::kOther) << "reasons are exact";
}

}  // namespace
}  // namespace ker

namespace ker {
namespace {

class ProtectionPlanTest : public ClaimPlanTest {
 protected:
  ProtectionPlanTest() { in.protect = true; }
};

TEST_F(ProtectionPlanTest, EveryClaimGetsTheFinalizerOnceNothingElseIsToBeWritten) {
  Plan p = planClaim(in);
  ASSERT_TRUE(p.write);
  EXPECT_EQ(p.change, Change::kProtected);
  EXPECT_TRUE(renderWrite(*p.write).mergePatch);
  EXPECT_EQ(renderWrite(*p.write).subresource, "")
      << "finalizers are metadata of the object itself";
  EXPECT_EQ(renderWrite(*p.write).body, nlohmann::json::parse(
                                            R"({"metadata": {"resourceVersion": "7",
                                   "finalizers": ["extendedresource.io/claim-protection"]}})"));
  claim.meta.finalizers = {"other", kClaimProtectionFinalizer};
  EXPECT_FALSE(planClaim(in).write) << "on already";

  claim.meta.finalizers.clear();
  holder.phase = "Succeeded";
  EXPECT_EQ(planClaim(in).change, Change::kReleased) << "the release first, the finalizer next";
}

TEST_F(ProtectionPlanTest, ADeletedClaimInUseWaitsAndSaysWhyOnce) {
  claim.meta.finalizers = {"other", kClaimProtectionFinalizer};
  claim.meta.deleting = true;
  Plan p = planClaim(in);
  ASSERT_TRUE(p.write) << "its pod runs on: the finalizer stays, and the status says why";
  EXPECT_EQ(p.change, Change::kDeletionWaiting);
  EXPECT_FALSE(renderWrite(*p.write).mergePatch);
  EXPECT_FALSE(renderWrite(*p.write).body["metadata"].contains("finalizers"));
  EXPECT_EQ(renderWrite(*p.write).body["status"]["phase"], "Bound") << "nothing else changes";
  const auto written = readConditions(renderWrite(*p.write).body["status"]);
  const Condition* allocated = findCondition(written, ConditionType::kAllocated);
  ASSERT_TRUE(allocated);
  EXPECT_EQ(allocated->status, ConditionStatus::kTrue);
  EXPECT_EQ(allocated->reason, Reason::kDeletionWaiting);
  EXPECT_NE(allocated->message.find("pod p no longer holds it"), std::string::npos)
      << allocated->message;
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].reason, "DeletionWaiting");
  EXPECT_NE(p.events[0].message.find("pod p"), std::string::npos) << p.events[0].message;
  claim.conditions = written;
  p = planClaim(in);
  EXPECT_FALSE(p.write) << "said once";
  EXPECT_TRUE(p.events.empty()) << "said once";

  ASSERT_TRUE(releaseClaim(claim, "pod gone").ok());  // released when its pod went
  p = planClaim(in);
  ASSERT_TRUE(p.write);
  EXPECT_EQ(p.change, Change::kUnprotected);
  EXPECT_EQ(renderWrite(*p.write).body["metadata"]["finalizers"], nlohmann::json({"other"}))
      << "only its own finalizer goes";
}

TEST_F(ProtectionPlanTest, AnotherStatusWriteOfADeletingClaimSaysWhyItWaitsOnce) {
  claim.meta.finalizers = {kClaimProtectionFinalizer};
  claim.meta.deleting = true;
  in.view.devices = {{"d0", nullptr}};
  in.view.devicesLive = true;
  Plan p = planClaim(in);
  ASSERT_TRUE(p.write);
  EXPECT_EQ(p.change, Change::kClaimLost) << "the Lost write is the one that says it";
  EXPECT_EQ(
      findCondition(readConditions(renderWrite(*p.write).body["status"]), ConditionType::kAllocated)
          ->reason,
      Reason::kDeletionWaiting);
  EXPECT_EQ(eventReasons(p),
            (std::vector<std::string>{"ExtendedResourceClaim/Lost", "Pod/ClaimLost",
                                      "ExtendedResourceClaim/DeletionWaiting"}));

  holder.phase = "Succeeded";
  claim.conditions.clear();
  p = planClaim(in);
  EXPECT_EQ(p.change, Change::kReleased);
  EXPECT_EQ(eventReasons(p),
            (std::vector<std::string>{"ExtendedResourceClaim/Released", "Pod/ClaimReleased"}))
      << "a release is no wait";
}

TEST_F(ProtectionPlanTest, TheInvalidMarkOfADeletingClaimSaysWhyItWaitsOnce) {
  claim.meta.finalizers = {kClaimProtectionFinalizer};
  claim.meta.deleting = true;
  claim.invalid = "spec.extendedResourceNum: expected an integer";
  Plan p = planClaim(in);
  ASSERT_TRUE(p.write);
  EXPECT_EQ(p.change, Change::kMarkedInvalid) << "the mark is the write that says it";
  EXPECT_EQ(eventReasons(p), (std::vector<std::string>{"ExtendedResourceClaim/Invalid",
                                                       "ExtendedResourceClaim/DeletionWaiting"}));
  EXPECT_NE(p.events.back().message.find("once pod p no longer holds it"), std::string::npos)
      << "the mark leaves its holder: " << p.events.back().message;

  claim.reason = "Invalid";
  claim.message = claim.invalid;
  claim.conditions = readConditions(renderWrite(*p.write).body["status"]);
  p = planClaim(in);
  EXPECT_FALSE(p.write) << "marked, and said once";
  EXPECT_TRUE(p.events.empty()) << "said once";
}

// The conditions a write carries, typed, for the plan's own decisions are exactly those its
// rendered body writes; a write of no status carries none.
void expectWriteWithItsConditions(const Plan& p, Change change) {
  ASSERT_TRUE(p.write);
  EXPECT_EQ(p.change, change);
  const nlohmann::json body = renderWrite(*p.write).body;
  const auto status = body.find("status");
  EXPECT_EQ(writtenConditions(*p.write),
            status == body.end() ? std::vector<Condition>{} : readConditions(*status))
      << body.dump();
}

TEST_F(ProtectionPlanTest, EveryClaimWriteCarriesTheConditionsItsBodyWrites) {
  expectWriteWithItsConditions(planClaim(in), Change::kProtected);
  claim.meta.finalizers = {kClaimProtectionFinalizer};
  claim.meta.deleting = true;
  expectWriteWithItsConditions(planClaim(in), Change::kDeletionWaiting);
  claim.meta.deleting = false;

  in.view.devices = {{"d0", nullptr}};
  in.view.devicesLive = true;
  expectWriteWithItsConditions(planClaim(in), Change::kClaimLost);
  in.view.devices = {{"d0", &d0}};
  claim.phase = ClaimPhase::kLost;
  claim.allocated.clear();
  claim.lost = {"d0"};
  expectWriteWithItsConditions(planClaim(in), Change::kClaimRecovered);
  claim = claimBoundTo("uid-p");
  claim.meta.finalizers = {kClaimProtectionFinalizer};

  holder.phase = "Succeeded";
  expectWriteWithItsConditions(planClaim(in), Change::kReleased);
  holder.phase = "Running";
  claim.invalid = "spec.extendedResourceNum: expected an integer";
  expectWriteWithItsConditions(planClaim(in), Change::kMarkedInvalid);
  claim.invalid.clear();
  claim.phaseWritten = false;
  ASSERT_TRUE(initializeClaim(claim).ok());
  expectWriteWithItsConditions(planClaim(in), Change::kClaimInitialized);
}

TEST_F(SharedClaimPlanTest, TheHoldersLeavingWriteCarriesTheConditionsItsBodyWrites) {
  holder.phase = "Succeeded";
  expectWriteWithItsConditions(planClaim(in), Change::kHoldersLeft);
}

TEST_F(ProtectionPlanTest, NoFinalizerIsAddedToADeletingClaim) {
  ASSERT_TRUE(releaseClaim(claim, "pod gone").ok());
  claim.meta.deleting = true;
  EXPECT_FALSE(planClaim(in).write) << "the API server refuses new finalizers then";
}

TEST_F(ProtectionPlanTest, WithoutProtectionNothingIsWritten) {
  in.protect = false;
  claim.meta.deleting = true;
  EXPECT_FALSE(planClaim(in).write);
  claim.meta.deleting = false;
  EXPECT_FALSE(planClaim(in).write) << "no finalizer put on";
}

// A finalizer left on while protection was on (or put on at creation) would hold a deletion
// that nothing takes it off for.
TEST_F(ProtectionPlanTest, WithoutProtectionADeletingClaimLosesTheFinalizerThoughInUse) {
  in.protect = false;
  claim.meta.finalizers = {"other", kClaimProtectionFinalizer};
  EXPECT_FALSE(planClaim(in).write) << "not deleting: left as it is";
  claim.meta.deleting = true;
  ASSERT_TRUE(claimInUse(claim));
  const Plan p = planClaim(in);
  ASSERT_TRUE(p.write);
  EXPECT_EQ(p.change, Change::kUnprotected);
  EXPECT_EQ(renderWrite(*p.write).body["metadata"]["finalizers"], nlohmann::json::array({"other"}));
  EXPECT_TRUE(p.events.empty()) << "no DeletionWaiting: nothing waits";
}

TEST_F(ProtectionPlanTest, ADeviceBeingDeletedIsLostToItsClaimButNotRecovered) {
  d0.meta.deleting = true;
  in.view.devicesLive = true;
  claim.meta.finalizers = {kClaimProtectionFinalizer};
  Plan p = planClaim(in);
  ASSERT_TRUE(p.write);
  EXPECT_EQ(p.change, Change::kClaimLost);
  EXPECT_NE(renderWrite(*p.write).body["status"]["message"].get<std::string>().find(
                "d0 is being deleted"),
            std::string::npos)
      << renderWrite(*p.write).body.dump();

  claim.phase = ClaimPhase::kLost;
  claim.allocated.clear();
  claim.lost = {"d0"};
  p = planClaim(in);
  EXPECT_FALSE(p.write) << "still Bound to the claim, but going: not taken back";
}

TEST_F(DevicePlanTest, EveryDeviceWriteCarriesTheConditionsItsBodyWrites) {
  device.phaseWritten = false;
  expectWriteWithItsConditions(planDevice(in), Change::kDeviceInitialized);
  device.phaseWritten = true;
  device.phase = DevicePhase::kBound;
  device.claimRef = ClaimRef{"default", "gone", "uid-gone"};
  in.view.claimLive = true;
  expectWriteWithItsConditions(planDevice(in), Change::kDeviceFreed);
  device.phase = DevicePhase::kAvailable;
  device.claimRef.reset();

  in.view.listedBy = {&claim};
  in.rebindClaimRead = true;
  in.rebindClaimLive = &claim;
  expectWriteWithItsConditions(planDevice(in), Change::kDeviceRebound);
  in.view.listedBy.clear();
  device.invalid = "spec.properties: expected an object";
  expectWriteWithItsConditions(planDevice(in), Change::kMarkedInvalid);
  device.invalid.clear();

  in.protect = true;
  expectWriteWithItsConditions(planDevice(in), Change::kProtected);
  device.meta.finalizers = {kDeviceProtectionFinalizer};
  device.meta.deleting = true;
  device.phase = DevicePhase::kBound;
  device.claimRef = ClaimRef{"default", "c", "uid-c"};
  in.view.claim = &claim;
  expectWriteWithItsConditions(planDevice(in), Change::kDeletionWaiting);
}

TEST_F(DevicePlanTest, ADeviceOfAnUnregisteredNodeIsParkedThenOfferedAgain) {
  device.meta.labels[kNodeLabel] = "n1";
  in.view.nodeRegistered = false;
  in.view.suspectSince = kT0 - 45s;
  Plan p = planDevice(in);
  ASSERT_TRUE(p.write);
  EXPECT_EQ(p.change, Change::kDeviceParked);
  nlohmann::json status = renderWrite(*p.write).body["status"];
  EXPECT_EQ(status["phase"], "Pending");
  EXPECT_EQ(status["reason"], "NodeNotRegistered");
  EXPECT_EQ(status["conditions"][0]["reason"], "NotOffered");
  expectWriteWithItsConditions(p, Change::kDeviceParked);

  device.phase = DevicePhase::kPending;
  device.reason = "NodeNotRegistered";
  in.view.nodeRegistered = true;
  p = planDevice(in);
  ASSERT_TRUE(p.write);
  status = renderWrite(*p.write).body["status"];
  EXPECT_EQ(status["phase"], "Available");
  EXPECT_FALSE(status.contains("reason")) << status.dump();
  expectWriteWithItsConditions(p, Change::kDeviceUnparked);
}

// Freed by its claim's release, a deleting device is no longer in use: its finalizer goes at
// once, without waiting for the write that says Available.
TEST_F(DevicePlanTest, ADeletingDeviceItsClaimsReleaseFreedLosesItsFinalizerAtOnce) {
  in.protect = true;
  device.meta.finalizers = {kDeviceProtectionFinalizer};
  device.meta.deleting = true;
  device.phase = DevicePhase::kBound;
  device.claimRef = ClaimRef{"default", "c", "uid-c"};
  device.allocation = 2;
  claim.allocation = 2;
  in.view.claim = &claim;
  in.view.freedWriteDelay = 10s;
  ASSERT_TRUE(deviceInUse(device, &claim)) << "its claim holds it";
  claim.phase = ClaimPhase::kPending;
  claim.allocated.clear();
  claim.podRef.reset();
  EXPECT_FALSE(deviceInUse(device, &claim));
  const Plan p = planDevice(in);
  ASSERT_TRUE(p.write);
  EXPECT_EQ(p.change, Change::kUnprotected);
}

TEST_F(DevicePlanTest, ADeviceKeepsItsFinalizerWhileBound) {
  in.protect = true;
  device.meta.finalizers = {kDeviceProtectionFinalizer};
  device.phase = DevicePhase::kBound;
  device.claimRef = ClaimRef{"default", "c", "uid-c"};
  in.view.claim = &claim;
  device.meta.deleting = true;
  device.conditions = {
      {ConditionType::kAllocated, ConditionStatus::kTrue, Reason::kDeletionWaiting, "said", "", 0}};
  EXPECT_FALSE(planDevice(in).write) << "in use";
  device.phase = DevicePhase::kAvailable;
  device.claimRef.reset();
  const Plan p = planDevice(in);
  ASSERT_TRUE(p.write);
  EXPECT_EQ(p.change, Change::kUnprotected);
  EXPECT_EQ(renderWrite(*p.write).body["metadata"]["finalizers"], nlohmann::json::array());

  device.meta.deleting = false;
  device.meta.finalizers.clear();
  EXPECT_EQ(planDevice(in).change, Change::kProtected);
}

TEST_F(DevicePlanTest, ADeviceDeletedWhileAllocatedSaysOnceWhatItWaitsFor) {
  in.protect = true;
  device.meta.uid = "uid-d0";
  device.meta.finalizers = {kDeviceProtectionFinalizer};
  device.meta.deleting = true;
  device.phase = DevicePhase::kBound;
  device.claimRef = ClaimRef{"default", "c", "uid-c"};
  claim.shareable = true;
  claim.podRef.reset();
  claim.sharedHolders = {PodRef{"p", "uid-p"}, PodRef{"q", "uid-q"}};
  in.view.claim = &claim;
  Plan p = planDevice(in);
  ASSERT_TRUE(p.write);
  EXPECT_EQ(p.change, Change::kDeletionWaiting);
  EXPECT_FALSE(renderWrite(*p.write).mergePatch)
      << "the status as it is, its conditions saying why";
  EXPECT_EQ(renderWrite(*p.write).body["status"]["phase"], "Bound");
  EXPECT_EQ(renderWrite(*p.write).body["status"]["claimRef"]["name"], "c");
  const auto written = readConditions(renderWrite(*p.write).body["status"]);
  const Condition* allocated = findCondition(written, ConditionType::kAllocated);
  ASSERT_TRUE(allocated);
  EXPECT_EQ(allocated->status, ConditionStatus::kTrue);
  EXPECT_EQ(allocated->reason, Reason::kDeletionWaiting);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].about.kind, "ExtendedResource");
  EXPECT_EQ(p.events[0].about.name, "d0");
  EXPECT_EQ(p.events[0].reason, "DeletionWaiting");
  EXPECT_NE(p.events[0].message.find("claim default/c (pods p, q)"), std::string::npos)
      << p.events[0].message;

  device.conditions = written;
  p = planDevice(in);
  EXPECT_FALSE(p.write) << "said once, whatever the controller remembers";
  EXPECT_TRUE(p.events.empty());

  // Someone else's status write took the condition away: said again.
  device.conditions.clear();
  claim.sharedHolders.clear();
  p = planDevice(in);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_NE(p.events[0].message.find("claim default/c is released"), std::string::npos)
      << "no pods named when the claim names none: " << p.events[0].message;

  in.protect = false;
  p = planDevice(in);
  ASSERT_TRUE(p.write) << "protection off: the finalizer does not keep it";
  EXPECT_EQ(p.change, Change::kUnprotected);
  EXPECT_TRUE(p.events.empty());
  in.protect = true;
  device.invalid = "spec.properties: expected an object";
  device.reason = "Invalid";
  device.message = device.invalid;
  p = planDevice(in);
  ASSERT_TRUE(p.write);
  EXPECT_EQ(p.change, Change::kMarkedInvalid) << "a mark that lacks its conditions is completed";
  EXPECT_EQ(eventReasons(p), std::vector<std::string>{"DeletionWaiting"}) << "that write says it";
  device.conditions = deviceConditions(device, {}, in.now);
  EXPECT_FALSE(planDevice(in).write) << "an invalid device's status is left alone";
}

}  // namespace
}  // namespace ker

#include "model/conditions.h"

#include <gtest/gtest.h>

#include "common/api_time.h"
#include "model/claim_transitions.h"

namespace ker {
namespace {

using json = nlohmann::json;
using std::chrono::hours;

const SystemTime kThen = SystemTime{} + hours(24 * 365 * 50);
const SystemTime kNow = kThen + hours(1);

ExtendedResourceClaim boundClaim() {
  ExtendedResourceClaim c;
  c.meta.ns = "ml";
  c.meta.name = "train";
  c.meta.generation = 2;
  c.phase = ClaimPhase::kBound;
  c.allocated = {"gpu-0", "gpu-1"};
  c.nodeName = "n1";
  c.podRef = PodRef{"trainer", "u1"};
  return c;
}

TEST(ClaimConditions, BoundIsAllocatedAndNotLost) {
  const auto cs = claimConditions(boundClaim(), {}, kNow);
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_EQ(cs[0].type, ConditionType::kAllocated);
  EXPECT_EQ(cs[0].status, ConditionStatus::kTrue);
  EXPECT_EQ(cs[0].reason, Reason::kBound);
  EXPECT_EQ(cs[0].message, "for pod trainer on node n1: gpu-0, gpu-1");
  EXPECT_EQ(cs[0].lastTransitionTime, formatTime(kNow));
  EXPECT_EQ(cs[0].observedGeneration, 2);
  EXPECT_EQ(cs[1].type, ConditionType::kLost);
  EXPECT_EQ(cs[1].status, ConditionStatus::kFalse);
  EXPECT_EQ(cs[1].reason, Reason::kNoDevicesLost);
}

TEST(ClaimConditions, LostStaysAllocatedAndSaysWhatWasLost) {
  ExtendedResourceClaim c = boundClaim();
  c.phase = ClaimPhase::kLost;
  c.allocated = {"gpu-1"};
  c.lost = {"gpu-0"};
  const auto cs = claimConditions(c, {}, kNow);
  EXPECT_EQ(cs[0].status, ConditionStatus::kTrue);
  EXPECT_EQ(cs[1].status, ConditionStatus::kTrue);
  EXPECT_EQ(cs[1].reason, Reason::kDevicesLost);
  EXPECT_EQ(cs[1].message, "lost while pod trainer held them: gpu-0");
}

TEST(ClaimConditions, PendingWaitsOrSaysWhyItCannotBeAllocated) {
  ExtendedResourceClaim c;
  auto cs = claimConditions(c, {}, kNow);
  EXPECT_EQ(cs[0].status, ConditionStatus::kFalse);
  EXPECT_EQ(cs[0].reason, Reason::kPending);
  c.invalid = "spec.rawResourceName: required";
  cs = claimConditions(c, {}, kNow);
  EXPECT_EQ(cs[0].reason, Reason::kInvalid);
  EXPECT_EQ(cs[0].message, c.invalid);
}

TEST(ClaimConditions, TransitionTimeMovesOnlyWhenTheStatusFlips) {
  ExtendedResourceClaim c = boundClaim();
  const auto before = claimConditions(c, {}, kThen);
  // Lost: Allocated keeps its time (still True, new message), Lost flips.
  c.phase = ClaimPhase::kLost;
  c.lost = {"gpu-0"};
  c.allocated = {"gpu-1"};
  const auto lost = claimConditions(c, before, kNow);
  EXPECT_EQ(lost[0].lastTransitionTime, formatTime(kThen));
  EXPECT_EQ(lost[1].lastTransitionTime, formatTime(kNow));
  // Released: Allocated flips.
  ASSERT_TRUE(releaseClaim(c, "pod gone").ok());
  const auto released = claimConditions(c, lost, kNow + hours(1));
  EXPECT_EQ(released[0].lastTransitionTime, formatTime(kNow + hours(1)));
  EXPECT_EQ(released[1].lastTransitionTime, formatTime(kNow + hours(1)));
}

TEST(DeviceConditions, AllocatedFollowsThePhaseAndHealthTheAgentsReason) {
  ExtendedResource d;
  d.phase = DevicePhase::kBound;
  d.claimRef = ClaimRef{"ml", "train", "u"};
  auto cs = deviceConditions(d, {}, kNow);
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_EQ(cs[0].type, ConditionType::kAllocated);
  EXPECT_EQ(cs[0].status, ConditionStatus::kTrue);
  EXPECT_EQ(cs[0].message, "to claim ml/train");
  EXPECT_EQ(cs[1].type, ConditionType::kHealthy);
  EXPECT_EQ(cs[1].status, ConditionStatus::kTrue);

  d.phase = DevicePhase::kPending;
  d.claimRef.reset();
  d.reason = toString(Reason::kDeviceUnhealthy);
  d.message = "/dev/nvidia0 is missing";
  const auto unhealthy = deviceConditions(d, cs, kNow + hours(1));
  EXPECT_EQ(unhealthy[0].reason, Reason::kNotOffered);
  EXPECT_EQ(unhealthy[1].status, ConditionStatus::kFalse);
  EXPECT_EQ(unhealthy[1].reason, Reason::kDeviceUnhealthy);
  EXPECT_EQ(unhealthy[1].message, d.message);
  EXPECT_EQ(unhealthy[1].lastTransitionTime, formatTime(kNow + hours(1)));

  d.phase = DevicePhase::kAvailable;
  d.reason.clear();
  const auto healthy = deviceConditions(d, unhealthy, kNow + hours(2));
  EXPECT_EQ(healthy[0].reason, Reason::kAvailable);
  // Allocated was False while unhealthy too: its time stays.
  EXPECT_EQ(healthy[0].lastTransitionTime, formatTime(kNow + hours(1)));
  EXPECT_EQ(healthy[1].status, ConditionStatus::kTrue);
}

TEST(Conditions, ADeletingObjectInUseStaysAllocatedAndSaysItsDeletionWaits) {
  ExtendedResourceClaim c = boundClaim();
  const auto before = claimConditions(c, {}, kThen);
  c.meta.deleting = true;
  auto cs = claimConditions(c, before, kNow);
  EXPECT_EQ(cs[0].status, ConditionStatus::kTrue);
  EXPECT_EQ(cs[0].reason, Reason::kDeletionWaiting);
  EXPECT_EQ(
      cs[0].message,
      "for pod trainer on node n1: gpu-0, gpu-1; deleted once pod trainer no longer holds it");
  EXPECT_EQ(cs[0].lastTransitionTime, formatTime(kThen)) << "still True";
  ASSERT_TRUE(releaseClaim(c, "pod gone").ok());
  EXPECT_EQ(claimConditions(c, cs, kNow)[0].reason, Reason::kPending)
      << "released: nothing keeps it";

  ExtendedResource d;
  d.meta.deleting = true;
  d.phase = DevicePhase::kBound;
  d.claimRef = ClaimRef{"ml", "train", "u"};
  auto ds = deviceConditions(d, {}, kNow);
  EXPECT_EQ(ds[0].status, ConditionStatus::kTrue);
  EXPECT_EQ(ds[0].reason, Reason::kDeletionWaiting);
  EXPECT_EQ(ds[0].message, "to claim ml/train; deleted once the claim is released");
  d.phase = DevicePhase::kAvailable;
  d.claimRef.reset();
  EXPECT_EQ(deviceConditions(d, ds, kNow)[0].reason, Reason::kAvailable);
}

TEST(ConditionsJson, WritingReplacesOursAndKeepsOthers) {
  json status = json::parse(R"({"conditions": [
      {"type": "Ready", "status": "True", "reason": "Theirs", "lastTransitionTime": "x"},
      {"type": "Allocated", "status": "True", "reason": "Bound", "lastTransitionTime": "y"},
      {"type": "Lost", "status": "Maybe"}, 7]})");
  const auto read = readConditions(status);
  ASSERT_EQ(read.size(), 1u);  // Lost's status is not one of the three; 7 is no object
  EXPECT_EQ(read[0].lastTransitionTime, "y");
  writeConditions(status, claimConditions(ExtendedResourceClaim{}, read, kNow));
  const json& list = status["conditions"];
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0]["type"], "Allocated");
  EXPECT_EQ(list[0]["status"], "False");
  EXPECT_EQ(list[0]["reason"], "Pending");
  EXPECT_EQ(list[0]["lastTransitionTime"], formatTime(kNow));
  EXPECT_FALSE(list[0].contains("observedGeneration"));  // no generation known
  EXPECT_EQ(list[1]["type"], "Lost");
  EXPECT_EQ(list[2]["type"], "Ready");  // someone else's, kept
  EXPECT_EQ(readConditions(status), claimConditions(ExtendedResourceClaim{}, read, kNow));
}

TEST(ConditionsJson, EveryStatusWriteCarriesThem) {
  ExtendedResourceClaim c = boundClaim();
  json out = c.toJson(kNow);
  auto parsed = ExtendedResourceClaim::fromJson(out);
  EXPECT_EQ(parsed.conditions, claimConditions(c, {}, kNow));
  // The next write keeps the transition time of what did not flip.
  parsed.reason = "Bound";
  const auto again = ExtendedResourceClaim::fromJson(parsed.toJson(kNow + hours(1))).conditions;
  EXPECT_EQ(again[0].lastTransitionTime, formatTime(kNow));
}

}  // namespace
}  // namespace ker

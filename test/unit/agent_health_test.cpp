#include <gtest/gtest.h>

#include "agent/health.h"
#include "model/conditions.h"
#include "model/device_transitions.h"

namespace ker::agent {
namespace {

using namespace health_action;

const std::string kUnhealthyReason = toString(Reason::kDeviceUnhealthy);

// The device as the agent writes it for the action decided (MarkUnhealthy or MarkHealthy).
ExtendedResource withHealth(ExtendedResource device, bool healthy, const std::string& problem) {
  const Status changed = healthy ? markDeviceHealthy(device)
                                 : markDeviceUnhealthy(device, Reason::kDeviceUnhealthy, problem);
  EXPECT_TRUE(changed.ok()) << changed.message();
  return device;
}

ExtendedResource device(DevicePhase phase, bool claimed = false, std::string reason = "",
                        std::string message = "") {
  ExtendedResource d;
  d.meta.name = "d0";
  d.phase = phase;
  d.phaseWritten = true;
  if (claimed) {
    d.claimRef = ClaimRef{"ns", "c", "uid-c"};
  }
  d.reason = std::move(reason);
  d.message = std::move(message);
  return d;
}

HealthObservation sick(bool wasHealthy = true) {
  return {.healthy = false, .problem = "device node /dev/x is missing", .wasHealthy = wasHealthy};
}

TEST(HealthTest, AFreeUnhealthyDeviceIsTakenOutOfOffer) {
  auto a = decideHealth(device(DevicePhase::kAvailable), sick());
  ASSERT_TRUE(std::holds_alternative<MarkUnhealthy>(a));
  EXPECT_EQ(std::get<MarkUnhealthy>(a).message, "device node /dev/x is missing");
  // A device without a status yet reads as Available: it is not offered either.
  ExtendedResource fresh = device(DevicePhase::kAvailable);
  fresh.phaseWritten = false;
  EXPECT_TRUE(std::holds_alternative<MarkUnhealthy>(decideHealth(fresh, sick())));
}

TEST(HealthTest, OnlyTheAgentsOwnPendingIsUndone) {
  auto unhealthy = device(DevicePhase::kPending, false, kUnhealthyReason, "x");
  EXPECT_TRUE(std::holds_alternative<MarkHealthy>(decideHealth(unhealthy, {})));
  auto other = device(DevicePhase::kPending, false, "Maintenance", "by hand");
  EXPECT_TRUE(std::holds_alternative<Nothing>(decideHealth(other, {})));
  EXPECT_TRUE(std::holds_alternative<Nothing>(decideHealth(device(DevicePhase::kAvailable), {})));
}

TEST(HealthTest, TheMessageFollowsTheCurrentProblem) {
  auto stale = device(DevicePhase::kPending, false, kUnhealthyReason, "older problem");
  EXPECT_TRUE(std::holds_alternative<MarkUnhealthy>(decideHealth(stale, sick())));
  auto current =
      device(DevicePhase::kPending, false, kUnhealthyReason, "device node /dev/x is missing");
  EXPECT_TRUE(std::holds_alternative<Nothing>(decideHealth(current, sick())));
}

TEST(HealthTest, ABoundDeviceStaysWithItsPodSaysItIsUnhealthyAndWarnsOncePerTurn) {
  auto bound = device(DevicePhase::kBound, true);
  auto first = decideHealth(bound, sick(/*wasHealthy=*/true));
  ASSERT_TRUE(std::holds_alternative<MarkUnhealthy>(first));
  const auto& mark = std::get<MarkUnhealthy>(first);
  EXPECT_EQ(mark.message, "device node /dev/x is missing");
  ASSERT_TRUE(mark.warning);
  EXPECT_NE(mark.warning->find("d0"), std::string::npos);

  const ExtendedResource marked = withHealth(bound, false, mark.message);
  EXPECT_EQ(marked.phase, DevicePhase::kBound) << "its pod keeps it";
  EXPECT_EQ(marked.claimRef, bound.claimRef);
  EXPECT_EQ(marked.reason, kUnhealthyReason);
  const auto conditions = deviceConditions(marked, {}, {});
  ASSERT_EQ(conditions.size(), 2u);
  EXPECT_EQ(conditions[0].status, ConditionStatus::kTrue) << "still allocated";
  EXPECT_EQ(conditions[1].type, ConditionType::kHealthy);
  EXPECT_EQ(conditions[1].status, ConditionStatus::kFalse);
  EXPECT_EQ(conditions[1].reason, Reason::kDeviceUnhealthy);

  EXPECT_TRUE(std::holds_alternative<Nothing>(decideHealth(marked, sick(/*wasHealthy=*/false))))
      << "said once";
  EXPECT_TRUE(std::holds_alternative<WarnHolder>(decideHealth(marked, sick(/*wasHealthy=*/true))))
      << "a restarted agent warns again, without a write";
  auto other = marked;
  other.message = "older problem";
  auto again = decideHealth(other, sick(/*wasHealthy=*/false));
  ASSERT_TRUE(std::holds_alternative<MarkUnhealthy>(again)) << "the message follows the problem";
  EXPECT_FALSE(std::get<MarkUnhealthy>(again).warning);

  ASSERT_TRUE(std::holds_alternative<MarkHealthy>(decideHealth(marked, {})));
  const ExtendedResource healed = withHealth(marked, true, "");
  EXPECT_EQ(healed.phase, DevicePhase::kBound);
  EXPECT_EQ(healed.reason, "");
  EXPECT_EQ(deviceConditions(healed, {}, {})[1].status, ConditionStatus::kTrue);
  EXPECT_TRUE(std::holds_alternative<Nothing>(decideHealth(bound, {})));
}

TEST(HealthTest, EachMarkIsItsOwnReasonAndTheAgentUndoesAnyOfThem) {
  const HealthObservation unlisted{
      .healthy = false, .mark = Reason::kDeviceNotListed, .problem = "not in the node file"};
  auto first = decideHealth(device(DevicePhase::kBound, true), unlisted);
  ASSERT_TRUE(std::holds_alternative<MarkUnhealthy>(first));
  EXPECT_EQ(std::get<MarkUnhealthy>(first).mark, Reason::kDeviceNotListed);
  ASSERT_TRUE(std::get<MarkUnhealthy>(first).warning);
  EXPECT_EQ(*std::get<MarkUnhealthy>(first).warning, "device d0: not in the node file");

  ExtendedResource marked = device(DevicePhase::kBound, true);
  ASSERT_TRUE(markDeviceUnhealthy(marked, Reason::kDeviceNotListed, "not in the node file").ok());
  EXPECT_EQ(marked.reason, "DeviceNotListed");
  EXPECT_EQ(deviceConditions(marked, {}, {})[1].reason, Reason::kDeviceNotListed);
  EXPECT_TRUE(
      std::holds_alternative<Nothing>(decideHealth(marked, {.healthy = false,
                                                            .mark = Reason::kDeviceNotListed,
                                                            .problem = "not in the node file",
                                                            .wasHealthy = false})))
      << "written already";
  auto other = decideHealth(marked, sick(/*wasHealthy=*/false));
  ASSERT_TRUE(std::holds_alternative<MarkUnhealthy>(other)) << "another mark is written";
  EXPECT_EQ(std::get<MarkUnhealthy>(other).mark, Reason::kDeviceUnhealthy);

  ExtendedResource withheld = device(DevicePhase::kAvailable);
  ASSERT_TRUE(markDeviceUnhealthy(withheld, Reason::kNoNodeFile, "no node file").ok());
  EXPECT_EQ(withheld.phase, DevicePhase::kPending);
  ASSERT_TRUE(std::holds_alternative<MarkHealthy>(decideHealth(withheld, {})));
  ASSERT_TRUE(markDeviceHealthy(withheld).ok());
  EXPECT_EQ(withheld.phase, DevicePhase::kAvailable);
  EXPECT_EQ(withheld.reason, "");
}

TEST(HealthTest, OnlyTheAgentsMarksAreMarks) {
  ExtendedResource d = device(DevicePhase::kAvailable);
  EXPECT_FALSE(markDeviceUnhealthy(d, Reason::kOrphaned, "no").ok());
  EXPECT_EQ(d.phase, DevicePhase::kAvailable);
  EXPECT_EQ(d.reason, "");
}

TEST(HealthTest, AFreeDeviceIsTakenOutOfOfferAndBack) {
  const ExtendedResource out = withHealth(device(DevicePhase::kAvailable), false, "gone");
  EXPECT_EQ(out.phase, DevicePhase::kPending);
  EXPECT_EQ(out.message, "gone");
  EXPECT_EQ(deviceConditions(out, {}, {})[1].status, ConditionStatus::kFalse);
  const ExtendedResource back = withHealth(out, true, "");
  EXPECT_EQ(back.phase, DevicePhase::kAvailable);
  EXPECT_EQ(back.reason, "");
}

// Released while marked: free, but not offered until its agent finds it healthy again (or
// withdraws it), rather than Available for anyone in between.
TEST(HealthTest, AnUnhealthyDeviceFreedByItsClaimKeepsTheMarkAndIsNotOffered) {
  const ExtendedResource marked = withHealth(device(DevicePhase::kBound, true), false, "gone");
  ExtendedResource freed = marked;
  ASSERT_TRUE(freeDevice(freed, "released", marked.claimRef).ok());
  EXPECT_EQ(freed.phase, DevicePhase::kPending);
  EXPECT_FALSE(freed.claimRef);
  EXPECT_EQ(freed.reason, kUnhealthyReason);
  EXPECT_EQ(freed.message, "gone");
  EXPECT_EQ(freed.releasedFrom, marked.claimRef);
  const ExtendedResource back = withHealth(freed, true, "");
  EXPECT_EQ(back.phase, DevicePhase::kAvailable);

  ExtendedResource healthy = device(DevicePhase::kBound, true);
  ASSERT_TRUE(freeDevice(healthy, "released", healthy.claimRef).ok());
  EXPECT_EQ(healthy.phase, DevicePhase::kAvailable);
  EXPECT_EQ(healthy.reason, toString(Reason::kReleased));
}

// Freed by its claim's release and not yet written Available: marked (the mark keeps it from
// the next bind), and the released claim, which holds nothing, is not warned.
TEST(HealthTest, ADeviceFreedByItsClaimsReleaseIsMarkedWithoutWarningTheClaim) {
  auto freed = device(DevicePhase::kBound, true);
  freed.allocation = 2;
  const ClaimAllocation released{"uid-c", 2, /*holding=*/false};
  auto first = decideHealth(freed, sick(/*wasHealthy=*/true), released);
  ASSERT_TRUE(std::holds_alternative<MarkUnhealthy>(first));
  EXPECT_FALSE(std::get<MarkUnhealthy>(first).warning) << "nobody holds it";
  const ExtendedResource marked = withHealth(freed, false, std::get<MarkUnhealthy>(first).message);
  EXPECT_FALSE(offerable(marked, released));
  EXPECT_TRUE(std::holds_alternative<Nothing>(decideHealth(marked, sick(true), released)))
      << "a restarted agent has nobody to warn either";

  const ClaimAllocation holding{"uid-c", 2, /*holding=*/true};
  auto held = decideHealth(freed, sick(/*wasHealthy=*/true), holding);
  ASSERT_TRUE(std::holds_alternative<MarkUnhealthy>(held));
  EXPECT_TRUE(std::get<MarkUnhealthy>(held).warning) << "the claim still holds it";
}

TEST(HealthTest, InvalidOrDeletingDevicesAreLeftAlone) {
  auto invalid = device(DevicePhase::kAvailable);
  invalid.invalid = "spec.properties: expected an object";
  EXPECT_TRUE(std::holds_alternative<Nothing>(decideHealth(invalid, sick())));
  auto deleting = device(DevicePhase::kAvailable);
  deleting.meta.deleting = true;
  EXPECT_TRUE(std::holds_alternative<Nothing>(decideHealth(deleting, sick())));
}

}  // namespace
}  // namespace ker::agent

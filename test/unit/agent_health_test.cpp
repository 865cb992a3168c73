#include <gtest/gtest.h>

#include "agent/health.h"

namespace ker::agent {
namespace {

using namespace health_action;

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

TEST(HealthTest, ABoundDeviceStaysWithItsPodAndTheHolderIsWarnedOncePerTurn) {
  auto bound = device(DevicePhase::kBound, true);
  auto first = decideHealth(bound, sick(/*wasHealthy=*/true));
  ASSERT_TRUE(std::holds_alternative<WarnHolder>(first));
  EXPECT_NE(std::get<WarnHolder>(first).message.find("d0"), std::string::npos);
  EXPECT_TRUE(std::holds_alternative<Nothing>(decideHealth(bound, sick(/*wasHealthy=*/false))));
  EXPECT_TRUE(std::holds_alternative<Nothing>(decideHealth(bound, {})));
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

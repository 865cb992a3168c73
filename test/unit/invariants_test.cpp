#include "model/invariants.h"

#include <gtest/gtest.h>

#include "model/conditions.h"
#include "scheduler_fixtures.h"

namespace ker {
namespace {

using testing::claim;
using testing::device;

// A consistent cluster: pod p on n1 holds claim c with device d0; d1 is free.
class InvariantsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d0 = device("d0", "n1", {{"type", "k80"}});
    d0.phase = DevicePhase::kBound;
    d0.claimRef = ClaimRef{"default", "c", "uid-c"};
    s.devices = {d0, device("d1", "n1", {{"type", "k80"}})};
    auto c = claim("c", 1, {{"type", "k80"}});
    c.phase = ClaimPhase::kBound;
    c.allocated = {"d0"};
    c.nodeName = "n1";
    c.podRef = PodRef{"p", "uid-p"};
    s.claims = {c};
    Pod p;
    p.meta.name = "p";
    p.meta.ns = "default";
    p.meta.uid = "uid-p";
    p.nodeName = "n1";
    p.claims = {"c"};
    s.pods = {p};
    Node n;
    n.meta.name = "n1";
    s.nodes = {n};
  }

  // Claim `name` Bound on n1 to pod `holder`, allocated d0.
  static ExtendedResourceClaim boundToD0(const std::string& name, const PodRef& holder) {
    auto c = claim(name, 1, {{"type", "k80"}});
    c.meta.uid = "uid-" + name;
    c.phase = ClaimPhase::kBound;
    c.allocated = {"d0"};
    c.nodeName = "n1";
    c.podRef = holder;
    return c;
  }

  void expectViolation(const std::string& text) {
    auto v = checkInvariants(s);
    bool found = false;
    for (const auto& line : v) {
      found = found || line.find(text) != std::string::npos;
    }
    EXPECT_TRUE(found) << "no violation containing \"" << text << "\"; got " << v.size();
  }

  ClusterSnapshot s;
};

TEST_F(InvariantsTest, ConsistentClusterHasNoViolations) {
  EXPECT_TRUE(checkInvariants(s).empty());
}

// Released with its device still naming it: the device is free through the claim. Allocated to
// another claim while still naming this one, it is not (every bind writes the devices it takes).
TEST_F(InvariantsTest, ADeviceItsClaimsReleaseFreedIsNoViolationUntilAnotherClaimListsIt) {
  s.devices[0].allocation = 2;
  s.claims[0].allocation = 2;
  s.claims[0].phase = ClaimPhase::kPending;
  s.claims[0].allocated.clear();
  s.claims[0].nodeName.clear();
  s.claims[0].podRef.reset();
  s.pods.clear();
  EXPECT_TRUE(checkInvariants(s).empty());
  s.claims[0].allocation = 1;  // the device shows a bind the claim never got: mid-bind
  expectViolation("device d0 is Bound to claim default/c which does not list it");
  s.claims[0].allocation = 2;
  auto other = boundToD0("o", PodRef{"q", "uid-q"});
  other.allocation = 1;
  s.claims.push_back(other);
  expectViolation("claim default/o lists device d0 which is not Bound to it");
  expectViolation("device d0 is Bound to claim default/c which does not list it");
}

TEST_F(InvariantsTest, ConditionsThatDisagreeWithTheStatus) {
  // As written with the status: consistent.
  s.claims[0].conditions = claimConditions(s.claims[0], {}, {});
  s.devices[0].conditions = deviceConditions(s.devices[0], {}, {});
  EXPECT_TRUE(checkInvariants(s).empty());
  // Someone changed the phase without them.
  s.claims[0].phase = ClaimPhase::kLost;
  s.claims[0].lost = {"d9"};
  expectViolation("claim default/c has condition Lost False but its status says True");
  s.devices[0].conditions.pop_back();
  expectViolation("device d0 has condition Healthy missing but its status says True");
}

TEST_F(InvariantsTest, LostClaimKeepsItsRemainingDevicesBound) {
  s.claims[0].phase = ClaimPhase::kLost;
  s.claims[0].reason = "ExtendedResourceLost";
  EXPECT_TRUE(checkInvariants(s).empty());
  s.devices[0].claimRef = ClaimRef{"default", "other", "uid-other"};
  expectViolation("device d0 is Bound to claim default/other which does not list it");
}

TEST_F(InvariantsTest, ALostDeviceIsHeldForItsClaimOnly) {
  s.claims[0].phase = ClaimPhase::kLost;
  s.claims[0].allocated.clear();
  s.claims[0].lost = {"d0"};
  EXPECT_EQ(checkInvariants(s), std::vector<std::string>{})
      << "Bound back to it, not yet taken back";
  s.claims.push_back(boundToD0("c2", PodRef{"p", "uid-p"}));
  s.devices[0].claimRef = ClaimRef{"default", "c2", "uid-c2"};
  expectViolation(
      "device d0, lost by claim default/c while its pod runs, is Bound to claim "
      "default/c2");
}

TEST_F(InvariantsTest, PendingClaimListingLostDevices) {
  s.claims[0].phase = ClaimPhase::kPending;
  s.claims[0].allocated.clear();
  s.claims[0].lost = {"d9"};
  expectViolation("claim default/c is Pending but lists devices");
}

TEST_F(InvariantsTest, DeviceInTwoAllocations) {
  s.claims.push_back(boundToD0("c2", PodRef{"p", "uid-p"}));
  expectViolation("device d0 is allocated to both default/c and default/c2");
}

TEST_F(InvariantsTest, BoundDeviceWhoseClaimDoesNotListIt) {
  s.devices[1].phase = DevicePhase::kBound;
  s.devices[1].claimRef = ClaimRef{"default", "c", "uid-c"};
  expectViolation("device d1 is Bound to claim default/c which does not list it");
}

TEST_F(InvariantsTest, ClaimListsDeviceNotBoundToIt) {
  s.devices[0].phase = DevicePhase::kAvailable;
  s.devices[0].claimRef.reset();
  expectViolation("claim default/c lists device d0 which is not Bound to it");
}

TEST_F(InvariantsTest, AllocationMustSatisfyTheClaimAndNode) {
  s.devices[0].properties = {{"type", "p100"}};
  expectViolation("does not match the selector");
  SetUp();
  s.claims[0].nodeName = "n2";
  s.pods[0].nodeName = "n2";
  expectViolation("device d0 is not reachable from node n2");
  SetUp();
  s.claims[0].extendedResourceNum = 2;
  expectViolation("holds 1 devices, wants 2");
}

TEST_F(InvariantsTest, ClaimHeldByAGonePodOrFinishedPod) {
  s.pods[0].meta.uid = "someone-new";
  expectViolation("which no longer exists");
  SetUp();
  s.pods[0].phase = "Succeeded";
  expectViolation("held by finished pod p");
}

// Lost or not, a claim must not outlive its pod.
TEST_F(InvariantsTest, LostClaimHeldByAGonePodOrFinishedPod) {
  s.claims[0].phase = ClaimPhase::kLost;
  s.pods[0].meta.uid = "someone-new";
  expectViolation("claim default/c is held by pod p (uid uid-p) which no longer exists");
  SetUp();
  s.claims[0].phase = ClaimPhase::kLost;
  s.pods[0].phase = "Failed";
  expectViolation("held by finished pod p");
  SetUp();
  s.claims[0].phase = ClaimPhase::kLost;
  s.claims[0].podRef.reset();
  expectViolation("claim default/c is Lost without a podRef");
}

TEST_F(InvariantsTest, DeviceBoundToAnEarlierClaimOfTheSameName) {
  s.devices[0].claimRef->uid = "uid-c-before";
  expectViolation("device d0 is Bound to an earlier claim default/c (uid uid-c-before)");
}

TEST_F(InvariantsTest, ScheduledPodMustHoldItsClaimsOnItsNode) {
  s.pods[0].claims = {"c", "missing"};
  expectViolation("runs without its claim default/missing");
  SetUp();
  s.pods[0].nodeName = "n9";
  expectViolation("runs on n9 but its claim default/c is on n1");
}

// Claim c made shareable and held by p and a second pod q, both on n1.
class SharedInvariantsTest : public InvariantsTest {
 protected:
  void SetUp() override {
    InvariantsTest::SetUp();
    auto& c = s.claims[0];
    c.shareable = true;
    c.podRef.reset();
    c.sharedHolders = {PodRef{"p", "uid-p"}, PodRef{"q", "uid-q"}};
    Pod q = s.pods[0];
    q.meta.name = "q";
    q.meta.uid = "uid-q";
    s.pods.push_back(q);
  }
};

TEST_F(SharedInvariantsTest, HoldersOnTheClaimsNodeAreConsistent) {
  EXPECT_EQ(checkInvariants(s), std::vector<std::string>{});
}

TEST_F(SharedInvariantsTest, AHolderOnAnotherNodeIsAViolation) {
  s.pods[1].nodeName = "n2";
  expectViolation("claim default/c on node n1 is held by pod q on node n2");
}

TEST_F(SharedInvariantsTest, AHolderListedTwiceIsAViolation) {
  s.claims[0].sharedHolders.push_back(PodRef{"q", "uid-q"});
  expectViolation("claim default/c lists pod q (uid uid-q) as a holder twice");
}

TEST_F(SharedInvariantsTest, AGoneHolderIsAViolation) {
  s.pods.pop_back();
  expectViolation("claim default/c is held by pod q (uid uid-q) which no longer exists");
}

TEST_F(SharedInvariantsTest, MoreHoldersThanTheCapIsAViolation) {
  for (size_t i = 0; i < kMaxClaimHolders; ++i) {
    Pod extra = s.pods[0];
    extra.meta.name = "x" + std::to_string(i);
    extra.meta.uid = "uid-x" + std::to_string(i);
    s.pods.push_back(extra);
    s.claims[0].sharedHolders.push_back(PodRef{extra.meta.name, extra.meta.uid});
  }
  expectViolation("claim default/c has 34 holders, over 32");
}

TEST_F(SharedInvariantsTest, AClaimThatIsNotShareableHasOneHolder) {
  s.claims[0].shareable = false;
  expectViolation("claim default/c is not shareable but held by 2 pods");
  expectViolation("claim default/c is not shareable but lists holders");
}

}  // namespace
}  // namespace ker

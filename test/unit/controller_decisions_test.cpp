#include <gtest/gtest.h>

#include "controller/reconcile_decisions.h"
#include "model/device_transitions.h"

namespace ker {
namespace {

using namespace std::chrono_literals;

const SteadyTime kT0{std::chrono::hours(1000)};
const Millis kGrace = 2min;

NodeSelector onNode(const std::string& node) {
  return {{NodeSelectorTerm{{}, {{"metadata.name", SelectorOperator::kIn, {node}}}}}};
}

ExtendedResource boundDevice(const std::string& name, const std::string& claim,
                             const std::string& claimUid) {
  ExtendedResource d;
  d.meta.name = name;
  d.meta.uid = "uid-" + name;
  d.rawResourceName = "nvidia.com/gpu";
  d.nodeAffinity = onNode("n1");
  d.phase = DevicePhase::kBound;
  d.claimRef = ClaimRef{"default", claim, claimUid};
  d.phaseWritten = true;
  return d;
}

ExtendedResource availableDevice(const std::string& name) {
  ExtendedResource d;
  d.meta.name = name;
  d.rawResourceName = "nvidia.com/gpu";
  d.nodeAffinity = onNode("n1");
  d.phaseWritten = true;
  return d;
}

ExtendedResourceClaim boundClaim(std::vector<std::string> devices, const std::string& podUid) {
  ExtendedResourceClaim c;
  c.meta.name = "c";
  c.meta.ns = "default";
  c.meta.uid = "uid-c";
  c.rawResourceName = "nvidia.com/gpu";
  c.extendedResourceNum = static_cast<int64_t>(devices.size());
  c.phase = ClaimPhase::kBound;
  c.allocated = std::move(devices);
  c.nodeName = "n1";
  c.podRef = PodRef{"p", podUid};
  c.phaseWritten = true;
  return c;
}

Pod pod(const std::string& uid, const std::string& node, const std::string& phase = "Running") {
  Pod p;
  p.meta.name = "p";
  p.meta.ns = "default";
  p.meta.uid = uid;
  p.nodeName = node;
  p.phase = phase;
  p.claims = {"c"};
  return p;
}

// The action, by value: callers often pass a temporary Decision.
template <class A>
A as(const Decision& d) {
  const A* a = std::get_if<A>(&d.action);
  EXPECT_NE(a, nullptr) << "action index " << d.action.index();
  return a ? *a : A{};
}

// A running pod holding claim c with devices d0 and d1, all consistent.
class ClaimDecisionTest : public ::testing::Test {
 protected:
  ClaimDecisionTest()
      : d0(boundDevice("d0", "c", "uid-c")),
        d1(boundDevice("d1", "c", "uid-c")),
        claim(boundClaim({"d0", "d1"}, "uid-p")),
        holder(pod("uid-p", "n1")) {
    view.claim = &claim;
    view.holders = {{&holder, false}};
    view.devices = {{"d0", &d0}, {"d1", &d1}};
    view.now = kT0;
    view.grace = kGrace;
  }

  ExtendedResource d0, d1;
  ExtendedResourceClaim claim;
  Pod holder;
  ClaimView view;
};

TEST_F(ClaimDecisionTest, ConsistentClaimNeedsNothing) {
  auto d = decideClaim(view);
  as<action::Nothing>(d);
  EXPECT_FALSE(d.suspectSince);
}

TEST_F(ClaimDecisionTest, PendingClaimNeedsNothingWhateverTheHolder) {
  claim.phase = ClaimPhase::kPending;
  view.holders[0].pod = nullptr;
  view.holders[0].live = true;
  as<action::Nothing>(decideClaim(view));
}

TEST_F(ClaimDecisionTest, ADeletedClaimWarnsOnlyAHolderThatRunsOnWithItsDevices) {
  Pod running = pod("uid-p", "n1");
  EXPECT_TRUE(warnOfDeletedClaim(claim, &running));
  claim.phase = ClaimPhase::kLost;
  EXPECT_TRUE(warnOfDeletedClaim(claim, &running));
  claim.allocated.clear();  // lost them all: nothing is freed
  EXPECT_FALSE(warnOfDeletedClaim(claim, &running));
  claim = boundClaim({"d0"}, "uid-p");
  EXPECT_FALSE(warnOfDeletedClaim(claim, nullptr));
  Pod replaced = pod("uid-p2", "n1");
  EXPECT_FALSE(warnOfDeletedClaim(claim, &replaced));
  Pod finished = pod("uid-p", "n1", "Succeeded");
  EXPECT_FALSE(warnOfDeletedClaim(claim, &finished));
  Pod leaving = running;
  leaving.meta.deleting = true;
  EXPECT_FALSE(warnOfDeletedClaim(claim, &leaving));
  claim.phase = ClaimPhase::kPending;
  EXPECT_FALSE(warnOfDeletedClaim(claim, &running));
}

TEST_F(ClaimDecisionTest, WithoutStatusIsInitialized) {
  claim = ExtendedResourceClaim{};
  as<action::InitClaimStatus>(decideClaim(view));
  claim.phaseWritten = true;
  as<action::Nothing>(decideClaim(view));
}

// A claim made for a pod (its controller, named in its pod-UID label) gets its first status from
// its bind; one with a status written by hand, or made by someone else, is initialized.
TEST_F(ClaimDecisionTest, AClaimMadeForAPodWaitsForItsBindsFirstStatus) {
  claim = ExtendedResourceClaim{};
  claim.meta.labels[kPodUidLabel] = "uid-p";
  claim.meta.ownerReferences.push_back(
      {.apiVersion = "v1", .kind = "Pod", .name = "p", .uid = "uid-p", .controller = true});
  as<action::Nothing>(decideClaim(view));
  ExtendedResourceClaim handWritten = claim;
  handWritten.allocated = {"d0"};
  view.claim = &handWritten;
  as<action::InitClaimStatus>(decideClaim(view));
  ExtendedResourceClaim otherOwner = claim;
  otherOwner.meta.labels[kPodUidLabel] = "uid-q";
  view.claim = &otherOwner;
  as<action::InitClaimStatus>(decideClaim(view));
}

TEST_F(ClaimDecisionTest, GarbledPhaseIsUnreadableNotUninitialized) {
  claim.phaseWritten = true;
  claim.invalid = "status.phase: expected a string, got number";
  claim.statusReadable = false;
  as<action::Nothing>(decideClaim(view));
}

TEST_F(ClaimDecisionTest, ClaimWithAnUnreadableStatusIsLeftAlone) {
  claim.invalid = "status.podRef: expected an object";
  claim.statusReadable = false;
  view.holders[0].pod = nullptr;
  view.holders[0].live = true;
  as<action::Nothing>(decideClaim(view));
}

TEST_F(ClaimDecisionTest, ClaimInvalidInItsSpecAloneIsStillReleasedWhenItsPodGoes) {
  claim.invalid = "spec.metadataRequirements: values must be non-empty for In";
  as<action::Nothing>(decideClaim(view));
  view.holders[0].pod = nullptr;
  view.holders[0].live = true;
  EXPECT_EQ(as<action::ReleaseClaim>(decideClaim(view)).cause, ReleaseCause::kPodDeleted);
}

TEST_F(ClaimDecisionTest, HolderMissingFromCacheIsVerifiedLiveFirst) {
  view.holders[0].pod = nullptr;
  auto d = decideClaim(view);
  EXPECT_EQ(as<action::VerifyLive>(d).what, LiveRead::kHolderPod);
}

TEST_F(ClaimDecisionTest, HolderConfirmedGoneReleases) {
  view.holders[0].pod = nullptr;
  view.holders[0].live = true;
  auto d = decideClaim(view);
  const auto& r = as<action::ReleaseClaim>(d);
  EXPECT_EQ(r.cause, ReleaseCause::kPodDeleted);
  EXPECT_NE(r.message.find("default/p"), std::string::npos);
  EXPECT_FALSE(d.suspectSince);
}

TEST_F(ClaimDecisionTest, DifferentPodWithTheSameNameInCacheIsVerifiedLiveFirst) {
  Pod other = pod("uid-other", "n2");
  view.holders[0].pod = &other;
  EXPECT_EQ(as<action::VerifyLive>(decideClaim(view)).what, LiveRead::kHolderPod);
}

TEST_F(ClaimDecisionTest, DifferentPodWithTheSameNameLiveReleases) {
  Pod other = pod("uid-other", "n2");
  view.holders[0].pod = &other;
  view.holders[0].live = true;
  const auto& r = as<action::ReleaseClaim>(decideClaim(view));
  EXPECT_EQ(r.cause, ReleaseCause::kPodReplaced);
  EXPECT_NE(r.message.find("uid-other"), std::string::npos);
}

TEST_F(ClaimDecisionTest, LiveReadFindingTheHolderAliveKeepsTheClaim) {
  view.holders[0].live = true;
  as<action::Nothing>(decideClaim(view));
}

TEST_F(ClaimDecisionTest, PodRefWithoutUidMatchesByName) {
  claim.podRef->uid.clear();
  as<action::Nothing>(decideClaim(view));
}

TEST_F(ClaimDecisionTest, FinishedHolderReleasesWithoutALiveRead) {
  for (const char* phase : {"Succeeded", "Failed"}) {
    holder.phase = phase;
    const auto& r = as<action::ReleaseClaim>(decideClaim(view));
    EXPECT_EQ(r.cause, ReleaseCause::kPodFinished);
    EXPECT_NE(r.message.find(phase), std::string::npos);
  }
}

TEST_F(ClaimDecisionTest, TerminatingHolderKeepsItsClaimUntilGone) {
  holder.meta.deleting = true;
  as<action::Nothing>(decideClaim(view));
}

TEST_F(ClaimDecisionTest, LostClaimIsReleasedWhenItsHolderGoes) {
  claim.phase = ClaimPhase::kLost;
  view.holders[0].pod = nullptr;
  view.holders[0].live = true;
  EXPECT_EQ(as<action::ReleaseClaim>(decideClaim(view)).cause, ReleaseCause::kPodDeleted);
}

TEST_F(ClaimDecisionTest, UnscheduledHolderStartsTheGraceClock) {
  holder.nodeName.clear();
  auto d = decideClaim(view);
  EXPECT_EQ(as<action::WaitGrace>(d).remaining, kGrace);
  EXPECT_EQ(d.suspectSince, kT0);
}

TEST_F(ClaimDecisionTest, UnscheduledHolderWithinGraceWaitsTheRemainder) {
  holder.nodeName.clear();
  view.suspectSince = kT0 - 90s;
  auto d = decideClaim(view);
  EXPECT_EQ(as<action::WaitGrace>(d).remaining, 30s);
  EXPECT_EQ(d.suspectSince, kT0 - 90s);
}

TEST_F(ClaimDecisionTest, GraceRemainderRoundsUpSoTheRecheckIsNotEarly) {
  holder.nodeName.clear();
  view.suspectSince = kT0 - kGrace + 500us;
  EXPECT_EQ(as<action::WaitGrace>(decideClaim(view)).remaining, 1ms);
}

TEST_F(ClaimDecisionTest, UnscheduledHolderPastGraceIsVerifiedLive) {
  holder.nodeName.clear();
  view.suspectSince = kT0 - kGrace;
  auto d = decideClaim(view);
  EXPECT_EQ(as<action::VerifyLive>(d).what, LiveRead::kHolderPod);
  EXPECT_EQ(d.suspectSince, kT0 - kGrace);
}

TEST_F(ClaimDecisionTest, UnscheduledHolderPastGraceConfirmedLiveReleases) {
  holder.nodeName.clear();
  view.suspectSince = kT0 - kGrace - 1s;
  view.holders[0].live = true;
  auto d = decideClaim(view);
  const auto& r = as<action::ReleaseClaim>(d);
  EXPECT_EQ(r.cause, ReleaseCause::kNeverScheduled);
  EXPECT_NE(r.message.find("2m"), std::string::npos);
  EXPECT_FALSE(d.suspectSince);
}

TEST_F(ClaimDecisionTest, HolderThatGotANodeClearsTheGraceClock) {
  view.suspectSince = kT0 - 10min;
  auto d = decideClaim(view);
  as<action::Nothing>(d);
  EXPECT_FALSE(d.suspectSince);
}

TEST_F(ClaimDecisionTest, ClaimWithoutPodRefIsReleasedOnlyAfterGrace) {
  claim.podRef.reset();
  auto first = decideClaim(view);
  as<action::WaitGrace>(first);
  view.suspectSince = first.suspectSince;
  view.now = kT0 + kGrace;
  EXPECT_EQ(as<action::ReleaseClaim>(decideClaim(view)).cause, ReleaseCause::kNoHolder);
}

TEST_F(ClaimDecisionTest, DeviceMissingFromCacheIsVerifiedLive) {
  view.devices["d1"] = nullptr;
  auto d = decideClaim(view);
  const auto& v = as<action::VerifyLive>(d);
  EXPECT_EQ(v.what, LiveRead::kClaimDevices);
  EXPECT_EQ(v.devices, std::vector<std::string>{"d1"});
}

TEST_F(ClaimDecisionTest, DeviceConfirmedGoneMarksTheClaimLost) {
  view.devices["d1"] = nullptr;
  view.devicesLive = true;
  const auto& lost = as<action::MarkClaimLost>(decideClaim(view));
  EXPECT_EQ(lost.missing, std::vector<std::string>{"d1"});
  EXPECT_EQ(lost.message, "extended resource d1 was deleted while held by pod default/p");
}

TEST_F(ClaimDecisionTest, LostMessageSeparatesDeletedFromUnbound) {
  ExtendedResource taken = boundDevice("d0", "other", "uid-other");
  view.devices = {{"d0", &taken}, {"d1", nullptr}};
  view.devicesLive = true;
  EXPECT_EQ(as<action::MarkClaimLost>(decideClaim(view)).message,
            "extended resource d1 was deleted; extended resource d0 is no longer bound to this "
            "claim while held by pod default/p");
}

// Freed, but where the claim's pod cannot be using it (another node): not coming back.
TEST_F(ClaimDecisionTest, DevicesBoundElsewhereOrFreedCountAsLost) {
  ExtendedResource recreated = availableDevice("d0");
  recreated.nodeAffinity = onNode("n2");
  ExtendedResource stolen = boundDevice("d1", "c", "uid-old-c");
  view.devices = {{"d0", &recreated}, {"d1", &stolen}};
  view.devicesLive = true;
  const auto& lost = as<action::MarkClaimLost>(decideClaim(view));
  EXPECT_EQ(lost.missing, (std::vector<std::string>{"d0", "d1"}));
  EXPECT_NE(lost.message.find("d0, d1 are no longer bound"), std::string::npos);
}

TEST_F(ClaimDecisionTest, DeviceRefWithoutUidCountsAsBound) {
  d0.claimRef->uid.clear();
  as<action::Nothing>(decideClaim(view));
}

TEST_F(ClaimDecisionTest, LostClaimWhoseRemainingDevicesAreFineNeedsNothing) {
  claim.phase = ClaimPhase::kLost;
  claim.allocated = {"d0"};
  as<action::Nothing>(decideClaim(view));
}

TEST_F(ClaimDecisionTest, LostDeviceBoundToTheClaimAgainIsRecovered) {
  claim.phase = ClaimPhase::kLost;
  claim.allocated = {"d0"};
  claim.lost = {"d1", "d2"};
  ExtendedResource recreated = availableDevice("d2");
  view.devices["d2"] = &recreated;  // back, but not (yet) Bound to the claim
  const auto& back = as<action::RecoverClaim>(decideClaim(view));
  EXPECT_EQ(back.recovered, std::vector<std::string>{"d1"});
}

TEST_F(ClaimDecisionTest, LostDevicesStillGoneNeedNothing) {
  claim.phase = ClaimPhase::kLost;
  claim.allocated = {"d0"};
  claim.lost = {"d1"};
  view.devices["d1"] = nullptr;
  as<action::Nothing>(decideClaim(view));
  // A copy Bound to an earlier claim of the same name is not this claim's.
  ExtendedResource other = boundDevice("d1", "c", "uid-old-c");
  view.devices["d1"] = &other;
  as<action::Nothing>(decideClaim(view));
}

// Deleted and created again before the claim was seen to lose it: the device's reconcile binds
// it back, so the claim waits rather than go Lost, for the grace period at most.
TEST_F(ClaimDecisionTest, AListedDeviceAboutToBeBoundBackIsWaitedFor) {
  ExtendedResource recreated = availableDevice("d1");
  recreated.phaseWritten = false;
  view.devices["d1"] = &recreated;
  auto d = decideClaim(view);
  EXPECT_EQ(as<action::WaitGrace>(d).remaining, 1s);
  ASSERT_TRUE(d.suspectSince);
  view.suspectSince = kT0 - kGrace;
  view.devicesLive = true;
  EXPECT_EQ(as<action::MarkClaimLost>(decideClaim(view)).missing, std::vector<std::string>{"d1"});
  // One that cannot be the claim's (another node) is lost at once.
  view.suspectSince.reset();
  recreated.nodeAffinity = onNode("n2");
  as<action::MarkClaimLost>(decideClaim(view));
}

TEST_F(ClaimDecisionTest, HolderGoneReleasesALostClaimBeforeAnyRecovery) {
  claim.phase = ClaimPhase::kLost;
  claim.allocated = {"d0"};
  claim.lost = {"d1"};
  view.holders[0].pod = nullptr;
  view.holders[0].live = true;
  as<action::ReleaseClaim>(decideClaim(view));
}

TEST_F(ClaimDecisionTest, UnscheduledHolderIsNotMarkedLost) {
  // The holder's node decides first: devices matter only to a pod that runs.
  holder.nodeName.clear();
  view.devices["d1"] = nullptr;
  view.devicesLive = true;
  as<action::WaitGrace>(decideClaim(view));
}

// Device d0 Bound to claim c, which lists it.
class DeviceDecisionTest : public ::testing::Test {
 protected:
  DeviceDecisionTest() : device(boundDevice("d0", "c", "uid-c")), claim(boundClaim({"d0"}, "p")) {
    view.device = &device;
    view.claim = &claim;
    view.now = kT0;
    view.grace = kGrace;
  }

  ExtendedResource device;
  ExtendedResourceClaim claim;
  DeviceView view;
};

TEST_F(DeviceDecisionTest, ListedByItsClaimNeedsNothing) {
  auto d = decideDevice(view);
  as<action::Nothing>(d);
  EXPECT_FALSE(d.suspectSince);
}

// Free to every bind through its claim's release already: written Available once that has
// lasted the delay, without a live read, released from the claim.
TEST_F(DeviceDecisionTest, ADeviceItsClaimsReleaseFreedIsWrittenAvailableAfterTheDelay) {
  device.allocation = 4;
  claim.allocation = 4;
  claim.phase = ClaimPhase::kPending;
  claim.allocated.clear();
  claim.podRef.reset();
  view.freedWriteDelay = std::chrono::seconds(5);
  auto waiting = decideDevice(view);
  EXPECT_EQ(as<action::WaitGrace>(waiting).remaining, std::chrono::seconds(5));
  ASSERT_TRUE(waiting.suspectSince);
  view.suspectSince = waiting.suspectSince;
  view.now = kT0 + std::chrono::seconds(5);
  const auto& freed = as<action::FreeDevice>(decideDevice(view));
  EXPECT_EQ(freed.releasedFrom, (ClaimRef{"default", "c", "uid-c"}));
  EXPECT_EQ(freed.message, "claim default/c was released");

  claim.allocation = 3;  // mid-bind: the device shows the count the claim gets next
  view.suspectSince.reset();
  view.now = kT0;
  auto midBind = decideDevice(view);
  EXPECT_EQ(as<action::WaitGrace>(midBind).remaining, kGrace) << "the orphan grace, not the delay";
}

TEST_F(DeviceDecisionTest, ListedByALostClaimNeedsNothing) {
  claim.phase = ClaimPhase::kLost;
  as<action::Nothing>(decideDevice(view));
}

TEST_F(DeviceDecisionTest, WithoutStatusIsInitialized) {
  device.phaseWritten = false;
  as<action::InitDeviceStatus>(decideDevice(view));
}

TEST_F(DeviceDecisionTest, GarbledPhaseIsInvalidNotUninitialized) {
  device.phaseWritten = true;
  device.invalid = "status.phase: expected a string, got number";
  as<action::Nothing>(decideDevice(view));
}

TEST_F(DeviceDecisionTest, AvailableAndPendingDevicesNeedNothing) {
  for (auto phase : {DevicePhase::kAvailable, DevicePhase::kPending}) {
    device.phase = phase;
    device.claimRef.reset();
    view.claim = nullptr;
    view.claimLive = true;
    as<action::Nothing>(decideDevice(view));
  }
}

// Set Available by hand with its claimRef left: unusable until the claimRef goes. A Pending
// device is withheld on purpose and keeps whatever it says.
TEST_F(DeviceDecisionTest, AvailableDeviceStillNamingAClaimIsFreed) {
  device.phase = DevicePhase::kAvailable;
  device.phaseWritten = true;
  const auto d = decideDevice(view);
  EXPECT_EQ(as<action::FreeDevice>(d).message, "Available but still naming claim default/c");
  EXPECT_FALSE(d.suspectSince);
  device.phase = DevicePhase::kPending;
  device.phaseWritten = true;
  as<action::Nothing>(decideDevice(view));
}

// A device back under a name a live claim lists: recreated (no status yet) or set free by
// hand. Its pod may still use it, so it goes back to that claim, never to another pod.
TEST_F(DeviceDecisionTest, ReturningDeviceIsBoundBackToTheClaimListingIt) {
  claim.phase = ClaimPhase::kLost;
  claim.allocated.clear();
  claim.lost = {"d0"};
  ExtendedResourceClaim bystander = boundClaim({"d7"}, "p2");
  bystander.meta.name = "b";
  view.listedBy = {&bystander, &claim};
  device = availableDevice("d0");
  device.phaseWritten = false;  // recreated: no status
  view.claim = nullptr;
  EXPECT_EQ(as<action::RebindDevice>(decideDevice(view)).claim, &claim);
  device.phaseWritten = true;  // Available, no claimRef
  EXPECT_EQ(as<action::RebindDevice>(decideDevice(view)).claim, &claim);
  device.claimRef = ClaimRef{"default", "c", "uid-c"};  // set Available by hand
  device.phaseWritten = true;
  EXPECT_EQ(as<action::RebindDevice>(decideDevice(view)).claim, &claim);
  device.claimRef.reset();
  device.phaseWritten = true;
  // Bound claims too: recreated before the controller saw it gone, the claim never goes Lost.
  claim = boundClaim({"d0"}, "p");
  EXPECT_EQ(as<action::RebindDevice>(decideDevice(view)).claim, &claim);
}

// The device event of a release can come before the claim's: the claim in the cache still
// lists the device the release just freed.
TEST_F(DeviceDecisionTest, ADeviceThisClaimsReleaseFreedIsNotBoundBackOnAStaleCache) {
  device = availableDevice("d0");
  device.reason = toString(Reason::kReleased);
  device.releasedFrom = ClaimRef{"default", "c", "uid-c"};
  device.phaseWritten = true;
  view.claim = nullptr;
  view.listedBy = {&claim};
  as<action::Nothing>(decideDevice(view));
  device.releasedFrom = ClaimRef{"default", "other", "uid-other"};
  device.phaseWritten = true;
  as<action::RebindDevice>(decideDevice(view));
}

// A bind writes the device before the claim, and the two watches are separate streams: the
// controller may see the claim Bound while its device still reads Available. It waits for the
// device's own event rather than write over it from that stale copy.
TEST_F(DeviceDecisionTest, ADeviceABoundClaimListsWaitsTheRebindDelayBeforeItIsBoundBack) {
  claim = boundClaim({"d0"}, "p");
  device = availableDevice("d0");
  device.phaseWritten = true;
  view.claim = nullptr;
  view.listedBy = {&claim};
  view.rebindDelay = 2s;
  const Decision first = decideDevice(view);
  EXPECT_EQ(as<action::WaitGrace>(first).remaining, 2s);
  ASSERT_TRUE(first.suspectSince);
  EXPECT_EQ(*first.suspectSince, view.now);
  view.suspectSince = first.suspectSince;
  view.now += 1500ms;
  EXPECT_EQ(as<action::WaitGrace>(decideDevice(view)).remaining, 500ms);
  view.now += 500ms;
  EXPECT_EQ(as<action::RebindDevice>(decideDevice(view)).claim, &claim);
  // Once the device's event shows it Bound to the claim, nothing is left to do.
  view.claim = &claim;
  device.phase = DevicePhase::kBound;
  device.claimRef = ClaimRef{claim.meta.ns, claim.meta.name, claim.meta.uid};
  as<action::Nothing>(decideDevice(view));
}

TEST_F(DeviceDecisionTest, ReturningDeviceIsNotHeldForClaimsThatCannotOwnIt) {
  device = availableDevice("d0");
  device.phaseWritten = false;
  view.claim = nullptr;
  view.listedBy = {&claim};
  claim.phase = ClaimPhase::kPending;  // released (the cache may lag: it lists nothing then)
  as<action::InitDeviceStatus>(decideDevice(view));
  claim.phase = ClaimPhase::kLost;
  claim.podRef.reset();  // no holder to keep it for
  as<action::InitDeviceStatus>(decideDevice(view));
  claim = boundClaim({"d0"}, "p");
  claim.rawResourceName = "example.com/fpga";  // another device, whatever its name
  as<action::InitDeviceStatus>(decideDevice(view));
  claim = boundClaim({"d1"}, "p");  // does not list it
  as<action::InitDeviceStatus>(decideDevice(view));
  // Listed, but not what the claim could have been given on its node: another device under
  // that name.
  claim = boundClaim({"d0"}, "p");
  claim.metadataRequirements.matchLabels = {{"type", "k80"}};
  as<action::InitDeviceStatus>(decideDevice(view));
  device.properties = {{"type", "k80"}};
  EXPECT_EQ(as<action::RebindDevice>(decideDevice(view)).claim, &claim);
  claim.extendedResourceNames = std::vector<std::string>{"d5"};
  as<action::InitDeviceStatus>(decideDevice(view));
  claim.extendedResourceNames.reset();
  device.nodeAffinity = onNode("n2");
  as<action::InitDeviceStatus>(decideDevice(view));
  device.nodeAffinity.terms.push_back(
      {{{"zone", SelectorOperator::kIn, {"a"}}}, {}});  // labels: cannot tell
  EXPECT_EQ(as<action::RebindDevice>(decideDevice(view)).claim, &claim);
  device.meta.deleting = true;
  as<action::InitDeviceStatus>(decideDevice(view));
  device.meta.deleting = false;
  claim = boundClaim({"d0"}, "p");
  claim.statusReadable = false;
  as<action::InitDeviceStatus>(decideDevice(view));
  claim.statusReadable = true;
  device.phaseWritten = true;
  device.invalid = "spec.nodeAffinity: required";
  as<action::Nothing>(decideDevice(view));
}

// The claim was released between the live read that justified binding the device back and
// that write: no bind is in flight on it (the extender never writes that reason).
TEST_F(DeviceDecisionTest, DeviceBoundBackToAClaimReleasedMeanwhileIsFreedWithoutGrace) {
  claim.phase = ClaimPhase::kPending;
  claim.allocated.clear();
  device.reason = toString(Reason::kRebound);
  as<action::VerifyLive>(decideDevice(view));
  view.claimLive = true;
  const auto d = decideDevice(view);
  EXPECT_EQ(as<action::FreeDevice>(d).message,
            "claim default/c was released before it took the device back");
  EXPECT_FALSE(d.suspectSince);
  device.reason.clear();
  as<action::WaitGrace>(decideDevice(view));
}

TEST_F(DeviceDecisionTest, DeviceBoundBackToALostClaimIsNotAnOrphan) {
  claim.phase = ClaimPhase::kLost;
  claim.allocated.clear();
  claim.lost = {"d0"};
  auto d = decideDevice(view);
  as<action::Nothing>(d);
  EXPECT_FALSE(d.suspectSince);
  // A Bound claim with a lost list (written by hand) lists those names too, as the extender
  // and the rebind see it.
  claim.phase = ClaimPhase::kBound;
  as<action::Nothing>(decideDevice(view));
}

TEST_F(DeviceDecisionTest, InvalidDeviceWithAStatusIsLeftAlone) {
  device.invalid = "spec.nodeAffinity: expected an object";
  view.claim = nullptr;
  view.claimLive = true;
  as<action::Nothing>(decideDevice(view));
}

TEST_F(DeviceDecisionTest, ClaimMissingFromCacheIsVerifiedLive) {
  view.claim = nullptr;
  EXPECT_EQ(as<action::VerifyLive>(decideDevice(view)).what, LiveRead::kDeviceClaim);
}

TEST_F(DeviceDecisionTest, ClaimConfirmedGoneFreesAtOnce) {
  view.claim = nullptr;
  view.claimLive = true;
  auto d = decideDevice(view);
  EXPECT_NE(as<action::FreeDevice>(d).message.find("default/c"), std::string::npos);
  EXPECT_FALSE(d.suspectSince);
}

// The claim is gone but the pod it gave the device to runs on: the device stays with the pod
// (deleting a claim, or taking its finalizer off, hands nobody else a running pod's device).
TEST_F(DeviceDecisionTest, ClaimGoneKeepsTheDeviceWhileAHolderRuns) {
  device.holders = {{"p", "uid-p"}};
  const Pod running = pod("uid-p", "n1");
  view.claim = nullptr;
  view.claimLive = true;
  view.holders = {{&running, false}};
  view.holderRecheck = Millis(2000);
  auto d = decideDevice(view);
  const auto& wait = as<action::AwaitHolders>(d);
  EXPECT_EQ(wait.pods, std::vector<std::string>{"default/p"});
  EXPECT_EQ(wait.recheck, Millis(2000));
  // Being deleted is not gone: its containers may still run.
  Pod leaving = running;
  leaving.meta.deleting = true;
  view.holders = {{&leaving, true}};
  as<action::AwaitHolders>(decideDevice(view));
}

// A pod left on the device by a join that failed never got a node: with the claim gone it can
// never use the device, which is freed once a live read shows it still has no node.
TEST_F(DeviceDecisionTest, ClaimGoneFreesTheDeviceOfAHolderThatNeverGotANode) {
  device.holders = {{"p", "uid-p"}};
  const Pod unscheduled = pod("uid-p", "");
  view.claim = nullptr;
  view.claimLive = true;
  view.holders = {{&unscheduled, false}};
  const auto& verify = as<action::VerifyLive>(decideDevice(view));
  EXPECT_EQ(verify.holders, std::vector<std::string>{"p"}) << "the cache may lag its Binding";
  view.holders = {{&unscheduled, true}};
  as<action::FreeDevice>(decideDevice(view));
  const Pod bound = pod("uid-p", "n1");
  view.holders = {{&bound, true}};
  as<action::AwaitHolders>(decideDevice(view));
}

TEST_F(DeviceDecisionTest, ClaimGoneFreesTheDeviceOnceEveryHolderIsGoneOrFinished) {
  device.holders = {{"p", "uid-p"}, {"q", "uid-q"}, {"r", "uid-r"}};
  const Pod finished = pod("uid-p", "n1", "Succeeded");
  Pod replaced = pod("uid-other", "n1");
  replaced.meta.name = "q";
  view.claim = nullptr;
  view.claimLive = true;
  // The third holder is missing from the cache only: read live first.
  view.holders = {{&finished, false}, {&replaced, true}, {nullptr, false}};
  const auto& verify = as<action::VerifyLive>(decideDevice(view));
  EXPECT_EQ(verify.what, LiveRead::kHolderPod);
  EXPECT_EQ(verify.holders, std::vector<std::string>{"r"});
  view.holders[2] = {nullptr, true};
  auto d = decideDevice(view);
  EXPECT_EQ(as<action::FreeDevice>(d).message,
            "claim default/c (uid uid-c) no longer exists and no pod holds the device");
}

TEST(HolderStateTest, GoneOnlyWhenALiveReadOrAFinishedPodSaysSo) {
  const PodRef ref{"p", "uid-p"};
  Pod p = pod("uid-p", "n1");
  p.meta.name = "p";
  EXPECT_EQ(holderState(ref, {&p, false}), HolderState::kHolds);
  EXPECT_EQ(holderState(ref, {nullptr, false}), HolderState::kUnsure);
  EXPECT_EQ(holderState(ref, {nullptr, true}), HolderState::kDeleted);
  Pod other = pod("uid-other", "n1");
  other.meta.name = "p";
  EXPECT_EQ(holderState(ref, {&other, false}), HolderState::kUnsure);
  EXPECT_EQ(holderState(ref, {&other, true}), HolderState::kReplaced);
  p.phase = "Failed";
  EXPECT_EQ(holderState(ref, {&p, false}), HolderState::kFinished);
}

TEST_F(DeviceDecisionTest, RecreatedClaimWithTheSameNameIsVerifiedThenFreesAtOnce) {
  claim.meta.uid = "uid-new-c";
  as<action::VerifyLive>(decideDevice(view));
  view.claimLive = true;
  as<action::FreeDevice>(decideDevice(view));
}

TEST_F(DeviceDecisionTest, NotYetListedIsAMidBindTransientWithinGrace) {
  claim.phase = ClaimPhase::kPending;
  claim.allocated.clear();
  auto d = decideDevice(view);
  EXPECT_EQ(as<action::WaitGrace>(d).remaining, kGrace);
  EXPECT_EQ(d.suspectSince, kT0);

  view.suspectSince = kT0;
  view.now = kT0 + 1s;
  d = decideDevice(view);
  EXPECT_EQ(as<action::WaitGrace>(d).remaining, kGrace - 1s);
  EXPECT_EQ(d.suspectSince, kT0);
}

TEST_F(DeviceDecisionTest, NotListedPastGraceIsVerifiedLiveThenFreed) {
  claim.allocated = {"d9"};
  view.suspectSince = kT0 - kGrace;
  auto d = decideDevice(view);
  EXPECT_EQ(as<action::VerifyLive>(d).what, LiveRead::kDeviceClaim);
  EXPECT_EQ(d.suspectSince, kT0 - kGrace);
  view.claimLive = true;
  d = decideDevice(view);
  EXPECT_NE(as<action::FreeDevice>(d).message.find("does not list"), std::string::npos);
  EXPECT_FALSE(d.suspectSince);
}

TEST_F(DeviceDecisionTest, PendingClaimListingTheDeviceStillCountsAsNotListing) {
  claim.phase = ClaimPhase::kPending;
  view.suspectSince = kT0 - kGrace;
  view.claimLive = true;
  as<action::FreeDevice>(decideDevice(view));
}

TEST_F(DeviceDecisionTest, DeviceOfAClaimThisControllerReleasedIsFreedAtOnce) {
  claim.phase = ClaimPhase::kPending;
  claim.allocated.clear();
  view.releasedWithClaim = true;
  auto d = decideDevice(view);
  EXPECT_NE(as<action::FreeDevice>(d).message.find("released"), std::string::npos);
  EXPECT_FALSE(d.suspectSince);
}

TEST_F(DeviceDecisionTest, ReleasedWithClaimDoesNotOverrideAListing) {
  view.releasedWithClaim = true;
  as<action::Nothing>(decideDevice(view));
}

// A free device whose node has no Node object is parked once that has lasted the grace, a
// quick re-registration flaps nothing, and the Node coming back offers it again.
TEST_F(DeviceDecisionTest, AFreeDeviceOfAnUnregisteredNodeIsParkedAfterTheGrace) {
  device = availableDevice("d0");
  device.meta.labels[kNodeLabel] = "n1";
  view.claim = nullptr;
  view.nodeRegistered = false;
  auto d = decideDevice(view);
  EXPECT_EQ(as<action::WaitGrace>(d).remaining, kGrace);
  EXPECT_EQ(d.suspectSince, kT0);
  view.suspectSince = kT0 - kGrace + 1s;
  as<action::WaitGrace>(decideDevice(view));
  view.suspectSince = kT0 - kGrace;
  d = decideDevice(view);
  EXPECT_NE(as<action::ParkDevice>(d).message.find("node n1 has no Node object"),
            std::string::npos);
  EXPECT_FALSE(d.suspectSince);

  view.nodeRegistered = true;
  d = decideDevice(view);
  as<action::Nothing>(d);
  EXPECT_FALSE(d.suspectSince) << "registered again within the grace: the clock is forgotten";
  view.nodeRegistered.reset();  // Nodes not watched
  as<action::Nothing>(decideDevice(view));
}

TEST_F(DeviceDecisionTest, AParkedDeviceIsOfferedAgainOnceItsNodeRegisters) {
  device = availableDevice("d0");
  device.meta.labels[kNodeLabel] = "n1";
  view.claim = nullptr;
  ASSERT_TRUE(parkDeviceOffNode(device, "node n1 has no Node object").ok());
  view.nodeRegistered = false;
  as<action::Nothing>(decideDevice(view));
  view.nodeRegistered = true;
  as<action::UnparkDevice>(decideDevice(view));

  device.reason = toString(Reason::kDeviceUnhealthy);  // Pending for another reason: not ours
  as<action::Nothing>(decideDevice(view));
}

TEST_F(DeviceDecisionTest, ABoundDeviceStaysWithItsPodWhenItsNodeIsGone) {
  device.meta.labels[kNodeLabel] = "n1";
  view.nodeRegistered = false;
  view.suspectSince = kT0 - 1h;
  as<action::Nothing>(decideDevice(view));
}

TEST_F(DeviceDecisionTest, ListingResolvesTheSuspicion) {
  view.suspectSince = kT0 - 30s;
  auto d = decideDevice(view);
  as<action::Nothing>(d);
  EXPECT_FALSE(d.suspectSince);
}

TEST_F(DeviceDecisionTest, AClaimWithAnUnreadableStatusIsNeverGroundsToFree) {
  claim.invalid = "status.extendedResourceNames: expected an array";
  claim.statusReadable = false;
  claim.allocated.clear();
  view.suspectSince = kT0 - 1h;
  view.claimLive = true;
  as<action::Nothing>(decideDevice(view));
}

TEST_F(DeviceDecisionTest, BoundWithoutClaimRefIsFreedAfterGraceWithoutARead) {
  device.claimRef.reset();
  view.claim = nullptr;
  as<action::WaitGrace>(decideDevice(view));
  view.suspectSince = kT0 - kGrace;
  EXPECT_NE(as<action::FreeDevice>(decideDevice(view)).message.find("claimRef"), std::string::npos);
}

TEST_F(DeviceDecisionTest, ClaimRefWithoutUidMatchesByName) {
  device.claimRef->uid.clear();
  claim.meta.uid = "anything";
  as<action::Nothing>(decideDevice(view));
}

class NudgeTest : public ::testing::Test {
 protected:
  NudgeTest() {
    pending.meta.name = "c";
    pending.meta.ns = "default";
    pending.rawResourceName = "nvidia.com/gpu";
    view.rawResourceName = "nvidia.com/gpu";
    view.schedulerName = "extended-resource-scheduler";
    view.claims["default/c"] = &pending;
    view.triggeredAt = kT0 - 100ms;
    view.now = kT0;
    view.minInterval = 1s;
    view.limit = 10;
  }

  Pod& addPod(const std::string& name, const std::string& created, bool unschedulable = true) {
    auto p = std::make_unique<Pod>(pod("uid-" + name, ""));
    p->meta.name = name;
    p->meta.creationTimestamp = created;
    p->schedulerName = "extended-resource-scheduler";
    p->phase = "Pending";
    pods.push_back(std::move(p));
    view.pods.push_back({pods.back().get(), unschedulable});
    return *pods.back();
  }

  std::vector<std::string> names() {
    plan = podsToNudge(view);
    std::vector<std::string> out;
    for (const Pod* p : plan.pods) {
      out.push_back(p->meta.name);
    }
    return out;
  }

  ExtendedResourceClaim pending;
  std::vector<std::unique_ptr<Pod>> pods;
  NudgeView view;
  NudgePlan plan;
};

TEST_F(NudgeTest, PodsNamingASharedClaimTheyCanJoinAreNudgedForThatClaim) {
  addPod("a", "2026-01-01T00:00:01Z");
  pending.shareable = true;
  pending.phase = ClaimPhase::kBound;
  pending.sharedHolders = {PodRef{"holder", "uid-holder"}};
  EXPECT_TRUE(names().empty()) << "freed devices do not concern it";
  view.claimKey = "default/c";
  EXPECT_EQ(names(), std::vector<std::string>{"a"});
  pending.shareable = false;
  EXPECT_TRUE(names().empty()) << "held by another pod";
}

// A pod asking in its resources for a class's name has no claim until it is bound: it is nudged
// when devices its class draws from free up, and no longer once a claim is recorded for it.
TEST_F(NudgeTest, APodAskingForAClassesNameIsNudgedForTheDevicesTheClassDrawsFrom) {
  Pod& a = addPod("a", "2026-01-01T00:00:01Z");
  a.claims.clear();
  a.extendedRequests = {{"example.com/gpu", {{"cuda", 1, ContainerKind::kApp}}}};
  EXPECT_TRUE(names().empty()) << "no class serves the name";
  view.classResources = {{"example.com/gpu", "other.com/gpu"}};
  EXPECT_TRUE(names().empty()) << "the class draws from other devices";
  view.classResources = {{"example.com/gpu", "nvidia.com/gpu"}};
  EXPECT_EQ(names(), std::vector<std::string>{"a"});
  view.claimKey = "default/c";
  EXPECT_TRUE(names().empty()) << "a claim becoming usable concerns only pods naming it";
  view.claimKey.clear();
  a.resourceClaims = {{"example.com/gpu", "a-gpu-x"}};
  EXPECT_TRUE(names().empty()) << "recorded: its claim decides";
}

TEST_F(NudgeTest, PicksUnschedulablePodsOfOurSchedulerOldestFirst) {
  addPod("b", "2026-01-01T00:00:02Z");
  addPod("a", "2026-01-01T00:00:01Z");
  addPod("c", "2026-01-01T00:00:01Z");
  EXPECT_EQ(names(), (std::vector<std::string>{"a", "c", "b"}));
  EXPECT_FALSE(plan.again);
}

TEST_F(NudgeTest, SkipsPodsThatCannotUseTheDevices) {
  addPod("not-rejected", "1", false);
  addPod("scheduled", "2").nodeName = "n1";
  addPod("other-scheduler", "3").schedulerName = "default-scheduler";
  addPod("deleting", "4").meta.deleting = true;
  addPod("failed", "5").phase = "Failed";
  addPod("garbled", "6").invalid = "annotation: bad name";
  addPod("no-claims", "7").claims.clear();
  addPod("unknown-claim", "8").claims = {"missing"};
  EXPECT_TRUE(names().empty());
  EXPECT_FALSE(plan.again);
}

// --scheduler-name="" serves every profile, as in the extender (servedPod).
TEST_F(NudgeTest, AnEmptySchedulerNameServesEveryProfile) {
  addPod("other-scheduler", "1").schedulerName = "default-scheduler";
  view.schedulerName.clear();
  EXPECT_EQ(names(), std::vector<std::string>{"other-scheduler"});
}

TEST_F(NudgeTest, OnlyPodsWithAPendingClaimForThatResource) {
  addPod("p", "1");
  pending.rawResourceName = "example.com/fpga";
  EXPECT_TRUE(names().empty());
  pending.rawResourceName = "nvidia.com/gpu";
  pending.phase = ClaimPhase::kBound;
  EXPECT_TRUE(names().empty());
  pending.phase = ClaimPhase::kPending;
  EXPECT_EQ(names(), std::vector<std::string>{"p"});
}

// A claim that became usable concerns the pods naming it, not every waiter of its resource.
TEST_F(NudgeTest, AClaimTriggerPicksOnlyThePodsNamingThatClaim) {
  ExtendedResourceClaim fresh = pending;
  fresh.meta.name = "fresh";
  view.claims["default/fresh"] = &fresh;
  addPod("on-c", "1");
  addPod("on-fresh", "2").claims = {"fresh"};
  view.rawResourceName.clear();
  view.claimKey = "default/fresh";
  EXPECT_EQ(names(), std::vector<std::string>{"on-fresh"});
  fresh.phase = ClaimPhase::kBound;
  EXPECT_TRUE(names().empty());
}

TEST_F(NudgeTest, AnyOfSeveralClaimsQualifies) {
  ExtendedResourceClaim bound = pending;
  bound.meta.name = "other";
  bound.phase = ClaimPhase::kBound;
  view.claims["default/other"] = &bound;
  addPod("p", "1").claims = {"other", "c"};
  EXPECT_EQ(names(), std::vector<std::string>{"p"});
}

TEST_F(NudgeTest, PodsNudgedSinceTheTriggerAreDone) {
  addPod("p", "1");
  view.lastNudged["uid-p"] = view.triggeredAt;
  EXPECT_TRUE(names().empty());
  EXPECT_FALSE(plan.again) << "nothing left to do: no endless re-nudging";
}

TEST_F(NudgeTest, RecentlyNudgedPodsAreDeferredNotDropped) {
  addPod("p", "1");
  addPod("q", "2");
  view.lastNudged["uid-p"] = kT0 - 300ms;  // before the trigger, but recent
  EXPECT_EQ(names(), std::vector<std::string>{"q"});
  EXPECT_EQ(plan.again, 700ms);
  view.lastNudged["uid-p"] = kT0 - 1s;
  EXPECT_EQ(names(), (std::vector<std::string>{"p", "q"}));
  EXPECT_FALSE(plan.again);
}

TEST_F(NudgeTest, BoundedByTheLimitWithTheRestRightAfter) {
  for (int i = 0; i < 5; ++i) {
    addPod("p" + std::to_string(i), std::to_string(i));
  }
  view.limit = 2;
  EXPECT_EQ(names(), (std::vector<std::string>{"p0", "p1"}));
  EXPECT_EQ(plan.again, 0ms);
  view.lastNudged["uid-p0"] = kT0;
  view.lastNudged["uid-p1"] = kT0;
  EXPECT_EQ(names(), (std::vector<std::string>{"p2", "p3"}));
}

TEST(ReleaseCauseTest, Names) {
  EXPECT_STREQ(toString(ReleaseCause::kPodDeleted), "PodDeleted");
  EXPECT_STREQ(toString(ReleaseCause::kPodReplaced), "PodReplaced");
  EXPECT_STREQ(toString(ReleaseCause::kPodFinished), "PodFinished");
  EXPECT_STREQ(toString(ReleaseCause::kNeverScheduled), "NeverScheduled");
  EXPECT_STREQ(toString(ReleaseCause::kNoHolder), "NoHolder");
}

// Claim c, shareable, Bound with device d0 on n1 and held by three running pods a, b and e.
class SharedClaimDecisionTest : public ::testing::Test {
 protected:
  SharedClaimDecisionTest() : d0(boundDevice("d0", "c", "uid-c")), claim(boundClaim({"d0"}, "")) {
    claim.shareable = true;
    claim.podRef.reset();
    for (const char* name : {"a", "b", "e"}) {
      claim.sharedHolders.push_back(PodRef{name, std::string("uid-") + name});
      Pod p = pod(std::string("uid-") + name, "n1");
      p.meta.name = name;
      pods.push_back(p);
    }
    view.claim = &claim;
    for (const auto& p : pods) {
      view.holders.push_back({&p, false});
    }
    view.devices = {{"d0", &d0}};
    view.now = kT0;
    view.grace = kGrace;
  }

  ExtendedResource d0;
  ExtendedResourceClaim claim;
  std::vector<Pod> pods;
  ClaimView view;
};

TEST_F(SharedClaimDecisionTest, HoldersAllRunningNeedNothing) {
  as<action::Nothing>(decideClaim(view));
}

TEST_F(SharedClaimDecisionTest, HoldersThatGoLeaveWhileOthersKeepTheDevices) {
  pods[0].phase = "Succeeded";
  view.holders[2] = {nullptr, true};
  auto d = decideClaim(view);
  const auto& drop = as<action::DropHolders>(d);
  EXPECT_EQ(drop.gone, (std::vector<PodRef>{{"a", "uid-a"}, {"e", "uid-e"}}));
  EXPECT_EQ(drop.cause, ReleaseCause::kPodFinished);
}

TEST_F(SharedClaimDecisionTest, AHolderMissingFromTheCacheIsVerifiedLiveFirst) {
  view.holders[1].pod = nullptr;
  EXPECT_EQ(as<action::VerifyLive>(decideClaim(view)).what, LiveRead::kHolderPod);
}

TEST_F(SharedClaimDecisionTest, TheLastHolderGoingReleasesTheClaim) {
  for (auto& h : view.holders) {
    h = {nullptr, true};
  }
  const auto& r = as<action::ReleaseClaim>(decideClaim(view));
  EXPECT_EQ(r.cause, ReleaseCause::kPodDeleted);
  EXPECT_EQ(r.message, "every holder is gone: pod default/a (uid uid-a) no longer exists");
}

TEST_F(SharedClaimDecisionTest, AHolderNeverScheduledLeavesAfterTheGrace) {
  pods[1].nodeName.clear();
  auto first = decideClaim(view);
  as<action::WaitGrace>(first);
  view.suspectSince = first.suspectSince;
  view.now = kT0 + kGrace;
  view.holders[1].live = true;
  const auto& drop = as<action::DropHolders>(decideClaim(view));
  EXPECT_EQ(drop.gone, (std::vector<PodRef>{{"b", "uid-b"}}));
  EXPECT_EQ(drop.cause, ReleaseCause::kNeverScheduled);
}

TEST_F(SharedClaimDecisionTest, ALostDeviceIsLostUnderEveryHolder) {
  view.devices["d0"] = nullptr;
  view.devicesLive = true;
  const auto& lost = as<action::MarkClaimLost>(decideClaim(view));
  EXPECT_EQ(lost.message,
            "extended resource d0 was deleted while held by pods default/a, default/b, default/e");
}

TEST_F(SharedClaimDecisionTest, EachHolderIsAHolder) {
  for (const auto& p : pods) {
    EXPECT_TRUE(isHolder(p, claim)) << p.meta.name;
  }
  Pod stranger = pod("uid-x", "n1");
  stranger.meta.name = "x";
  EXPECT_FALSE(isHolder(stranger, claim));
}

TEST(Joinable, ASharedClaimIsJoinableWhileBoundWithRoom) {
  ExtendedResourceClaim c = boundClaim({"d0"}, "");
  c.podRef.reset();
  c.sharedHolders = {PodRef{"a", "uid-a"}};
  EXPECT_FALSE(joinable(c));  // not shareable
  c.shareable = true;
  EXPECT_TRUE(joinable(c));
  c.phase = ClaimPhase::kLost;
  EXPECT_FALSE(joinable(c));
  c.phase = ClaimPhase::kBound;
  c.sharedHolders.resize(kMaxClaimHolders, PodRef{"a", "uid-a"});
  EXPECT_FALSE(joinable(c));
}

}  // namespace
}  // namespace ker

#include <gtest/gtest.h>

#include "controller/controller_memory.h"
#include "controller/watch_triggers.h"
#include "controller/work_keys.h"

namespace ker {
namespace {

using namespace std::chrono_literals;

const SteadyTime kT0{std::chrono::hours(1000)};

TEST(WorkKeys, EveryKeyRoundTripsWhateverItsName) {
  const std::vector<WorkKey> keys = {
      ClaimKey{"default/c"},
      DeviceKey{"gpu:0/a"},
      PodKey{"ns/p"},
      NudgeKey{NudgeTarget::resource("nvidia.com/gpu"), false},
      NudgeKey{NudgeTarget::resource("nvidia.com/gpu"), true},
      NudgeKey{NudgeTarget::claim("default/claim:with:colons"), false},
      NudgeKey{NudgeTarget::claim("default/c"), true},
      DeviceKey{""},
      ClassParamsKey{},
  };
  std::set<std::string> encoded;
  for (const auto& key : keys) {
    const std::string text = KeyQueue::encode(key);
    EXPECT_TRUE(encoded.insert(text).second) << "two keys share " << text;
    EXPECT_EQ(KeyQueue::decode(text), key) << text;
  }
  EXPECT_FALSE(KeyQueue::decode(""));
  EXPECT_FALSE(KeyQueue::decode("xdefault/c"));
  EXPECT_FALSE(KeyQueue::decode("kname")) << "the class params key has no name";
}

TEST(WorkKeys, AResourceAndAClaimOfTheSameNameAreDifferentNudges) {
  EXPECT_NE(KeyQueue::encode(NudgeKey{NudgeTarget::resource("a/b"), false}),
            KeyQueue::encode(NudgeKey{NudgeTarget::claim("a/b"), false}));
  EXPECT_NE(KeyQueue::encode(ClaimKey{"a/b"}),
            KeyQueue::encode(NudgeKey{NudgeTarget::claim("a/b"), false}));
}

TEST(WorkKeys, KindsLabelTheMetrics) {
  EXPECT_STREQ(kindOf(ClaimKey{"a/b"}), "claim");
  EXPECT_STREQ(kindOf(DeviceKey{"d"}), "device");
  EXPECT_STREQ(kindOf(PodKey{"a/p"}), "pod");
  EXPECT_STREQ(kindOf(NudgeKey{NudgeTarget::resource("r"), false}), "nudge");
  EXPECT_STREQ(kindOf(NudgeKey{NudgeTarget::resource("r"), true}), "renudge");
  EXPECT_STREQ(kindOf(ClassParamsKey{}), "classparams");
}

TEST(KeyQueue, HandsOutTypedKeysOnce) {
  KeyQueue q;
  q.add(ClaimKey{"default/c"});
  q.add(ClaimKey{"default/c"});
  q.add(DeviceKey{"d0"});
  EXPECT_EQ(q.len(), 2u);
  auto first = q.get();
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, WorkKey{ClaimKey{"default/c"}});
  q.done(*first);
  auto second = q.get();
  ASSERT_TRUE(second);
  EXPECT_EQ(*second, WorkKey{DeviceKey{"d0"}});
  q.done(*second);
  q.shutDown();
  EXPECT_FALSE(q.get());
}

ExtendedResourceClaim pendingClaim() {
  ExtendedResourceClaim c;
  c.meta = {.name = "c", .ns = "default", .uid = "uid-c"};
  c.rawResourceName = "nvidia.com/gpu";
  c.phaseWritten = true;
  c.raw = nlohmann::json{{"spec", {{"rawResourceName", "nvidia.com/gpu"}}}};
  return c;
}

ExtendedResource availableDevice(const std::string& name) {
  ExtendedResource d;
  d.meta.name = name;
  d.rawResourceName = "nvidia.com/gpu";
  d.phaseWritten = true;
  return d;
}

const DeviceGetter kNoDevices = [](const std::string&) { return CachedDevice(); };

bool hasNudge(const Triggers& t, const NudgeTarget& target) {
  return std::find(t.nudges.begin(), t.nudges.end(), target) != t.nudges.end();
}

bool hasKey(const Triggers& t, const WorkKey& key) {
  return std::find(t.keys.begin(), t.keys.end(), key) != t.keys.end();
}

TEST(WatchTriggers, AClaimThatBecomesUsableNudgesThePodsNamingIt) {
  const auto c = pendingClaim();
  const auto nudge = NudgeTarget::claim("default/c");
  EXPECT_TRUE(hasNudge(claimChanged(nullptr, c, false, kNoDevices), nudge)) << "a new claim";
  EXPECT_FALSE(hasNudge(claimChanged(nullptr, c, true, kNoDevices), nudge))
      << "found by the first list: not news";
  EXPECT_FALSE(hasNudge(claimChanged(&c, c, false, kNoDevices), nudge)) << "no change";
  auto edited = c;
  edited.raw =
      nlohmann::json{{"spec", {{"rawResourceName", "nvidia.com/gpu"}, {"extendedResourceNum", 1}}}};
  EXPECT_TRUE(hasNudge(claimChanged(&c, edited, false, kNoDevices), nudge)) << "spec edited";
  auto lost = c;
  lost.phase = ClaimPhase::kLost;
  EXPECT_TRUE(hasNudge(claimChanged(&lost, c, false, kNoDevices), nudge)) << "released";
  EXPECT_TRUE(hasKey(claimChanged(&c, c, false, kNoDevices), ClaimKey{"default/c"}));
}

// The release frees the claim's devices with no device event: the pods waiting for that
// resource are nudged by the claim's.
TEST(WatchTriggers, AReleaseNudgesThePodsWaitingForItsResource) {
  auto released = pendingClaim();
  auto bound = released;
  bound.phase = ClaimPhase::kBound;
  bound.allocated = {"d0"};
  bound.podRef = PodRef{"p", "uid-p"};
  const auto nudge = NudgeTarget::resource(released.rawResourceName);
  EXPECT_TRUE(hasNudge(claimChanged(&bound, released, false, kNoDevices), nudge));
  EXPECT_FALSE(hasNudge(claimChanged(&released, bound, false, kNoDevices), nudge)) << "a bind";
  EXPECT_FALSE(hasNudge(claimChanged(&bound, bound, false, kNoDevices), nudge));
  auto recreated = released;
  recreated.meta.uid = "another";
  EXPECT_FALSE(hasNudge(claimChanged(&bound, recreated, false, kNoDevices), nudge))
      << "another claim of that name frees nothing (the controller writes the old devices)";
}

TEST(WatchTriggers, ASharedClaimThatPodsCanJoinNudgesThePodsNamingIt) {
  auto pending = pendingClaim();
  pending.shareable = true;
  auto bound = pending;
  bound.phase = ClaimPhase::kBound;
  bound.sharedHolders = {PodRef{"a", "uid-a"}};
  const auto nudge = NudgeTarget::claim("default/c");
  EXPECT_TRUE(hasNudge(claimChanged(&pending, bound, false, kNoDevices), nudge)) << "allocated";
  auto full = bound;
  full.sharedHolders.resize(kMaxClaimHolders, PodRef{"a", "uid-a"});
  EXPECT_FALSE(hasNudge(claimChanged(&bound, full, false, kNoDevices), nudge)) << "now full";
  EXPECT_TRUE(hasNudge(claimChanged(&full, bound, false, kNoDevices), nudge)) << "room again";
  auto joined = bound;
  joined.sharedHolders.push_back(PodRef{"b", "uid-b"});
  EXPECT_FALSE(hasNudge(claimChanged(&bound, joined, false, kNoDevices), nudge))
      << "joinable before and after";
}

TEST(WatchTriggers, ALostClaimLettingGoOfAnAvailableDeviceNudgesItsResource) {
  auto lost = pendingClaim();
  lost.phase = ClaimPhase::kLost;
  lost.podRef = PodRef{"p", "uid-p"};
  lost.lost = {"d9"};
  const auto d9 = std::make_shared<const ExtendedResource>(availableDevice("d9"));
  const DeviceGetter devices = [&](const std::string& n) {
    return n == "d9" ? d9 : CachedDevice();
  };
  const auto released = pendingClaim();
  const Triggers t = claimChanged(&lost, released, false, devices);
  EXPECT_TRUE(hasNudge(t, NudgeTarget::resource("nvidia.com/gpu")));
  EXPECT_TRUE(hasKey(t, DeviceKey{"d9"}));
  EXPECT_TRUE(hasNudge(claimDeleted(lost, {}, devices), NudgeTarget::resource("nvidia.com/gpu")));
}

TEST(WatchTriggers, ADeletedClaimLooksAtTheDevicesThatNameIt) {
  auto c = pendingClaim();
  c.phase = ClaimPhase::kBound;
  c.podRef = PodRef{"p", "uid-p"};
  c.allocated = {"d0"};
  const Triggers t = claimDeleted(c, {"d7"}, kNoDevices);
  EXPECT_TRUE(hasKey(t, ClaimKey{"default/c"}));
  EXPECT_TRUE(hasKey(t, DeviceKey{"d0"}));
  EXPECT_TRUE(hasKey(t, DeviceKey{"d7"})) << "written by a bind in flight";
}

TEST(WatchTriggers, ADeviceThatBecomesAvailableNudgesItsResource) {
  auto bound = availableDevice("d0");
  bound.phase = DevicePhase::kBound;
  bound.claimRef = ClaimRef{"default", "c", "uid-c"};
  const auto freed = availableDevice("d0");
  Triggers t = deviceChanged(&bound, freed);
  EXPECT_TRUE(hasNudge(t, NudgeTarget::resource("nvidia.com/gpu")));
  EXPECT_TRUE(hasKey(t, DeviceKey{"d0"}));
  EXPECT_TRUE(hasKey(t, ClaimKey{"default/c"})) << "the claim it left";
  EXPECT_TRUE(deviceChanged(&freed, freed).nudges.empty()) << "Available already";
  auto unwritten = availableDevice("d1");
  unwritten.phaseWritten = false;
  EXPECT_TRUE(deviceChanged(nullptr, unwritten).nudges.empty())
      << "its first status write is the event that counts";
}

TEST(WatchTriggers, ANodeRegisteredOrDeletedWakesTheDevicesLabelledWithIt) {
  auto mine = std::make_shared<ExtendedResource>(availableDevice("d0"));
  mine->meta.labels[kNodeLabel] = "n1";
  auto other = std::make_shared<ExtendedResource>(availableDevice("d1"));
  other->meta.labels[kNodeLabel] = "n2";
  auto unlabelled = std::make_shared<ExtendedResource>(availableDevice("d2"));
  Triggers t = nodeRegistrationChanged("n1", {mine, other, unlabelled});
  ASSERT_EQ(t.keys.size(), 1u);
  EXPECT_TRUE(hasKey(t, DeviceKey{"d0"}));

  ExtendedResource parked = *mine;
  parked.phase = DevicePhase::kPending;
  parked.reason = "NodeNotRegistered";
  EXPECT_TRUE(hasNudge(deviceChanged(&parked, *mine), NudgeTarget::resource("nvidia.com/gpu")))
      << "offered again: pods waiting for it are retried";
}

TEST(WatchTriggers, PodsWakeTheirClaimsAndOnlyAnnotatedOnesAreChecked) {
  Pod p;
  p.meta = {.name = "p", .ns = "default", .uid = "uid-p"};
  Triggers t = podChanged(p, {"default/c"}, false);
  EXPECT_TRUE(hasKey(t, ClaimKey{"default/c"}));
  EXPECT_FALSE(hasKey(t, PodKey{"default/p"}));
  EXPECT_TRUE(hasKey(podChanged(p, {}, true), PodKey{"default/p"})) << "deleted: forget it";
  p.meta.annotations[kClaimsAnnotation] = "c";
  EXPECT_TRUE(hasKey(podChanged(p, {}, false), PodKey{"default/p"}));
}

TEST(WatchTriggers, ALeaderStartingReconcilesWhatTheCachesHoldAndNudgesEachResourceOnce) {
  auto c = std::make_shared<ExtendedResourceClaim>(pendingClaim());
  auto d0 = std::make_shared<ExtendedResource>(availableDevice("d0"));
  auto d1 = std::make_shared<ExtendedResource>(availableDevice("d1"));
  auto named = std::make_shared<WatchedPod>();
  named->meta = {.name = "p", .ns = "default", .uid = "uid-p"};
  named->meta.annotations[kClaimsAnnotation] = "c";
  auto plain = std::make_shared<WatchedPod>();
  plain->meta = {.name = "q", .ns = "default", .uid = "uid-q"};
  const Triggers t = startedLeading({named, plain}, {c}, {d0, d1});
  EXPECT_TRUE(hasKey(t, ClaimKey{"default/c"}));
  EXPECT_TRUE(hasKey(t, DeviceKey{"d0"}));
  EXPECT_TRUE(hasKey(t, DeviceKey{"d1"}));
  EXPECT_TRUE(hasKey(t, PodKey{"default/p"}));
  EXPECT_FALSE(hasKey(t, PodKey{"default/q"})) << "names no claim, asks for nothing";
  EXPECT_EQ(t.nudges, std::vector<NudgeTarget>{NudgeTarget::resource("nvidia.com/gpu")});

  auto shared = std::make_shared<ExtendedResourceClaim>(pendingClaim());
  shared->meta.name = "s";
  shared->shareable = true;
  shared->phase = ClaimPhase::kBound;
  shared->allocated = {"d9"};
  shared->nodeName = "n1";
  shared->sharedHolders = {PodRef{"p", "uid-p"}};
  EXPECT_TRUE(hasNudge(startedLeading({}, {shared}, {}), NudgeTarget::claim("default/s")))
      << "pods parked to join it";
}

TEST(ControllerMemory, AStatusChangeRestartsTheGraceClock) {
  ControllerMemory m;
  m.setClaimSuspect("default/c", kT0, "Bound\nn1");
  EXPECT_EQ(m.claimSuspectSince("default/c", "Bound\nn1"), kT0);
  EXPECT_FALSE(m.claimSuspectSince("default/c", "Bound\nn2")) << "a sign of life";
  EXPECT_EQ(m.size(), 1u);
  m.setClaimSuspect("default/c", std::nullopt, "");
  EXPECT_EQ(m.size(), 0u);
}

TEST(ControllerMemory, WarningsBelongToOnePodUid) {
  ControllerMemory m;
  m.setWarnedPodProblem("default/p", "uid-1", "bad");
  EXPECT_EQ(m.warnedPodProblem("default/p", "uid-1"), "bad");
  EXPECT_EQ(m.warnedPodProblem("default/p", "uid-2"), "") << "a new pod of the same name";
  m.forgetPod("default/p");
  EXPECT_EQ(m.warnedPodProblem("default/p", "uid-1"), "");
}

TEST(ControllerMemory, ClaimNudgeTriggersAreForgottenResourceOnesKept) {
  ControllerMemory m;
  m.triggerNudge(NudgeTarget::claim("default/c"), kT0);
  m.triggerNudge(NudgeTarget::resource("r"), kT0);
  m.triggerNudge(NudgeTarget::resource("s"), kT0 + 10min);
  EXPECT_FALSE(m.nudgeTriggeredAt(NudgeTarget::claim("default/c")));
  EXPECT_EQ(m.nudgeTriggeredAt(NudgeTarget::resource("r")), kT0);
}

}  // namespace
}  // namespace ker

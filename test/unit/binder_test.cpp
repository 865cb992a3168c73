#include "scheduler/bind/binder.h"

#include <gtest/gtest.h>

#include <thread>
#include <utility>

#include "common/api_error.h"
#include "common/request_deadline.h"
#include "fake_api_client.h"
#include "model/made_claims.h"
#include "model/objects.h"
#include "model/resource_class.h"
#include "model/suitability.h"

namespace ker {
namespace {

using nlohmann::json;
using testing::FakeApiClient;
using Verb = FakeApiClient::Verb;

json deviceJson(const std::string& name, const std::string& node) {
  json requirement = {{"key", "metadata.name"}, {"operator", "In"}, {"values", {node}}};
  json term = {{"matchFields", json::array({requirement})}};
  json affinity = {{"required", {{"nodeSelectorTerms", json::array({term})}}}};
  return {{"apiVersion", kApiVersion},
          {"kind", "ExtendedResource"},
          {"metadata", {{"name", name}, {"uid", "uid-" + name}}},
          {"spec",
           {{"rawResourceName", "nvidia.com/gpu"},
            {"deviceID", name + "-id"},
            {"properties", {{"type", "k80"}}},
            {"nodeAffinity", affinity}}}};
}

json claimJson(const std::string& name) {
  return {{"apiVersion", kApiVersion},
          {"kind", "ExtendedResourceClaim"},
          {"metadata", {{"name", name}, {"namespace", "default"}, {"uid", "uid-" + name}}},
          {"spec",
           {{"rawResourceName", "nvidia.com/gpu"},
            {"extendedResourceNum", 1},
            {"metadataRequirements", {{"matchLabels", {{"type", "k80"}}}}}}}};
}

json podJson(const std::string& name, const std::string& claim) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "default"},
            {"uid", "uid-" + name},
            {"annotations", {{kClaimsAnnotation, claim}}}}},
          {"spec", {{"containers", {{{"name", "c"}, {"image", "x"}}}}}}};
}

// These tests are about what a bind writes: the check of who may ask for it
// (checkBindTrust, bind_trust_test.cpp) is off.
BinderOptions writesOnly(BinderOptions o = {}) {
  o.schedulerName = "";
  o.requireFilterChoice = false;
  return o;
}

class BinderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& name : {"d0", "d1"}) {
      index_.upsert(std::make_shared<const ExtendedResource>(ExtendedResource::fromJson(
          api_.seed(resources::kExtendedResources, deviceJson(name, "n1")))));
    }
    api_.seed(resources::kExtendedResourceClaims, claimJson("c"));
    api_.seed(resources::kPods, podJson("p", "c"));
  }

  // The fake assigns UIDs on create, as the API server does.
  std::string uidOf(const Resource& res, const std::string& ns, const std::string& name) {
    return (*api_.peek(res, ns, name))["metadata"]["uid"];
  }
  BindingArgs args(const std::string& pod = "p", const std::string& node = "n1") {
    return {pod, "default", uidOf(resources::kPods, "default", pod), node};
  }
  ExtendedResource device(const std::string& name) {
    return ExtendedResource::fromJson(*api_.peek(resources::kExtendedResources, "", name));
  }
  ExtendedResourceClaim claim(const std::string& name) {
    return ExtendedResourceClaim::fromJson(
        *api_.peek(resources::kExtendedResourceClaims, "default", name));
  }
  // Claim c as an earlier attempt left it: Bound to pod p on n1 with device d1.
  void bindClaimToPodWithD1() {
    auto c = claim("c");
    c.phase = ClaimPhase::kBound;
    c.allocated = {"d1"};
    c.nodeName = "n1";
    c.podRef = PodRef{"p", args().podUid};
    api_.updateStatus(resources::kExtendedResourceClaims, "default", c.toJson(SystemTime{}));
  }
  // The whole allocation of an earlier attempt: d1 Bound to claim c too, in the API and the
  // index.
  void bindClaimAndD1ToPod() {
    auto d = device("d1");
    d.phase = DevicePhase::kBound;
    d.claimRef = ClaimRef{"default", "c", claim("c").meta.uid};
    index_.upsert(std::make_shared<const ExtendedResource>(ExtendedResource::fromJson(
        api_.updateStatus(resources::kExtendedResources, "", d.toJson(SystemTime{})))));
    bindClaimToPodWithD1();
  }
  int writes() {
    return api_.calls(Verb::kUpdateStatus) + api_.calls(Verb::kUpdate) + api_.calls(Verb::kPatch) +
           api_.calls(Verb::kBind) + api_.calls(Verb::kCreate);
  }

  // Pod `name` of the extender's scheduler, naming claim c.
  void seedSchedulersPod(const std::string& name) {
    json pod = podJson(name, "c");
    pod["spec"]["schedulerName"] = kDefaultSchedulerName;
    api_.seed(resources::kPods, pod);
  }

  FakeApiClient api_;
  DeviceIndex index_;
  Binder binder_{api_, index_,
                 [](const std::string&) { return std::map<std::string, std::string>{}; },
                 writesOnly()};
  // With the check of who may ask for a bind (checkBindTrust) on, as the extender runs it.
  Binder guarded_{api_, index_,
                  [](const std::string&) { return std::map<std::string, std::string>{}; }};
};

TEST_F(BinderTest, AllocatesRecordsAndBindsInDevicePlusTwoWrites) {
  ASSERT_EQ(binder_.bind(args()).message(), "");

  auto c = claim("c");
  EXPECT_EQ(c.phase, ClaimPhase::kBound);
  ASSERT_EQ(c.allocated.size(), 1u);
  EXPECT_EQ(c.nodeName, "n1");
  EXPECT_EQ(c.podRef, (PodRef{"p", args().podUid}));
  auto d = device(c.allocated[0]);
  EXPECT_EQ(d.phase, DevicePhase::kBound);
  EXPECT_EQ(d.claimRef, (ClaimRef{"default", "c", c.meta.uid}));
  // The device names the pod it was given to, in the same write.
  EXPECT_EQ(d.holders, (std::vector<PodRef>{{"p", args().podUid}}));

  auto bindings = api_.bindings();
  ASSERT_EQ(bindings.size(), 1u);
  EXPECT_EQ(bindings[0].node, "n1");
  EXPECT_EQ(bindings[0].uid, args().podUid);
  auto allocation = json::parse(bindings[0].annotations.at(kAllocationAnnotation));
  EXPECT_EQ(allocation["c"][0]["name"], c.allocated[0]);
  EXPECT_EQ(allocation["c"][0]["deviceID"], c.allocated[0] + "-id");
  EXPECT_EQ(allocation["c"][0]["rawResourceName"], "nvidia.com/gpu");
  // The node agent must process the pod's containers: the runtime refuses them without it.
  EXPECT_EQ(bindings[0].annotations.at(kRequiredPluginsAnnotation),
            R"(["extended-resource-node-agent"])");
  // One write per device, one per claim, one Binding.
  EXPECT_EQ(writes(), 3);
  EXPECT_EQ(binder_.stats().apiWrites.load(), 3u);
}

// A bind call is only kube-scheduler's word: it writes for a pod of the extender's scheduler,
// on the node the extender's own filter chose, and for nothing else.
TEST_F(BinderTest, ABindWritesOnlyForAPodOfItsSchedulerOnTheNodeItsFilterChose) {
  seedSchedulersPod("q");
  auto filterChose = [&](const std::string& pod, const std::string& node) {
    index_.holdForFilter(node, {}, args(pod).podUid, std::chrono::steady_clock::now(),
                         DeviceIndex::kHoldTtl);
  };
  // No filter came (a restart, or a forged call).
  EXPECT_EQ(guarded_.bind(args("q")).message(),
            "the extender's filter holds no node for pod default/q (none came, it expired, or "
            "the extender restarted)");
  filterChose("q", "n1");
  EXPECT_EQ(guarded_.bind(args("q", "n2")).message(),
            "the extender's filter chose node n1 for pod default/q, not n2");
  // Pod p is of another scheduler (none named).
  filterChose("p", "n1");
  EXPECT_EQ(guarded_.bind(args("p")).message(),
            "pod default/p has schedulerName \"\": this extender binds only pods of "
            "\"extended-resource-scheduler\"");
  EXPECT_EQ(writes(), 0);
  EXPECT_FALSE(claim("c").podRef);

  // A refused call leaves the filter's hold, which kube-scheduler's own bind then uses.
  EXPECT_EQ(guarded_.bind(args("q")).message(), "");
  EXPECT_EQ(claim("c").podRef, (PodRef{"q", args("q").podUid}));
}

// kube-scheduler's binding cycle may wait long after the filter (a volume provisioned for the
// node in PreBind): the devices' hold has expired by then, but the bind is still the one the
// filter chose, and goes through; one the filter chose over kChoiceTtl ago does not.
TEST_F(BinderTest, ABindLongAfterItsFilterIsStillTheFiltersChoice) {
  seedSchedulersPod("q");
  const auto now = std::chrono::steady_clock::now();
  index_.holdForFilter("n1", {"d0"}, args("q").podUid,
                       now - DeviceIndex::kHoldTtl - std::chrono::minutes(1),
                       DeviceIndex::kHoldTtl);
  EXPECT_EQ(index_.filterHoldNode(args("q").podUid, now), "") << "the devices' hold is over";
  EXPECT_EQ(guarded_.bind(args("q", "n2")).message(),
            "the extender's filter chose node n1 for pod default/q, not n2");
  EXPECT_EQ(guarded_.bind(args("q")).message(), "");
  EXPECT_EQ(claim("c").podRef, (PodRef{"q", args("q").podUid}));
  index_.dropFilterHold(args("q").podUid);  // as when the watch shows the pod bound
  EXPECT_EQ(index_.filterChoice(args("q").podUid, now), "");

  seedSchedulersPod("r");
  index_.holdForFilter("n1", {}, args("r").podUid, now - DeviceIndex::kChoiceTtl,
                       DeviceIndex::kHoldTtl);
  EXPECT_EQ(index_.filterChoice(args("r").podUid, now), "");
}

// A call that names another pod, or one that does not exist, with the UID of a pod the filter
// chose, cannot confirm it is about that pod: it leaves the pod's hold (and whatever else the
// index keeps for the UID), so the pod's own bind still goes through.
TEST_F(BinderTest, ACallNamingAnotherPodWithAPodsUidLeavesThatPodsHold) {
  seedSchedulersPod("q");
  const std::string victim = args("q").podUid;
  index_.holdForFilter("n1", {}, victim, std::chrono::steady_clock::now(), DeviceIndex::kHoldTtl);

  std::string error = guarded_.bind({"p", "default", victim, "n1"}).message();
  EXPECT_NE(error.find("recreated"), std::string::npos) << error;
  error = guarded_.bind({"no-such-pod", "default", victim, "n1"}).message();
  EXPECT_NE(error.find("not found"), std::string::npos) << error;
  EXPECT_EQ(index_.filterHoldNode(victim, std::chrono::steady_clock::now()), "n1");
  EXPECT_EQ(writes(), 0);

  EXPECT_EQ(guarded_.bind(args("q")).message(), "");
  EXPECT_EQ(claim("c").podRef, (PodRef{"q", victim}));
}

// Claim s, shareable, allocated by pod sp's bind; pods sq and sr name it too.
class SharedClaimBinderTest : public BinderTest {
 protected:
  void SetUp() override {
    BinderTest::SetUp();
    json shared = claimJson("s");
    shared["spec"]["shareable"] = true;
    api_.seed(resources::kExtendedResourceClaims, shared);
    for (const auto& name : {"sp", "sq", "sr"}) {
      api_.seed(resources::kPods, podJson(name, "s"));
    }
    ASSERT_EQ(binder_.bind(args("sp")).message(), "");
  }
};

TEST_F(SharedClaimBinderTest, TheFirstPodAllocatesAndBecomesTheFirstHolder) {
  auto s = claim("s");
  EXPECT_EQ(s.phase, ClaimPhase::kBound);
  EXPECT_FALSE(s.podRef);
  EXPECT_EQ(s.holders(), (std::vector<PodRef>{{"sp", args("sp").podUid}}));
  ASSERT_EQ(s.allocated.size(), 1u);
}

// A joining pod is added to the claim's holders and to its devices' holders (so a device stays
// with every pod that has it even should the claim be deleted); the allocation is unchanged.
TEST_F(SharedClaimBinderTest, ALaterPodJoinsTheClaimsAndItsDevicesHolders) {
  const auto before = claim("s");
  const int writesBefore = writes();
  ASSERT_EQ(binder_.bind(args("sq")).message(), "");
  auto s = claim("s");
  const std::vector<PodRef> both{{"sp", args("sp").podUid}, {"sq", args("sq").podUid}};
  EXPECT_EQ(s.holders(), both);
  EXPECT_EQ(s.allocated, before.allocated);
  const auto d = device(before.allocated[0]);
  EXPECT_EQ(d.holders, both);
  EXPECT_EQ(d.phase, DevicePhase::kBound);
  EXPECT_EQ(d.claimRef->uid, before.meta.uid);
  // Each device, the claim and the Binding.
  EXPECT_EQ(writes() - writesBefore, static_cast<int>(before.allocated.size()) + 2);
  auto allocation = json::parse(api_.bindings().back().annotations.at(kAllocationAnnotation));
  EXPECT_EQ(allocation["s"][0]["name"], before.allocated[0]);
}

TEST_F(SharedClaimBinderTest, AJoinIsOnlyOnTheClaimsNode) {
  std::string error = binder_.bind(args("sq", "n2")).message();
  EXPECT_EQ(error, "shared claim default/s is allocated on node n1");
  EXPECT_EQ(claim("s").holders().size(), 1u);
}

TEST_F(SharedClaimBinderTest, AJoinThatLosesARaceIsDecidedAgainOnTheClaimAsItIsNow) {
  // sr joins between sq's read of the claim and its write: that write conflicts, and the
  // next attempt adds sq after sr rather than writing over sr.
  bool once = true;
  binder_.onPlannedForTesting([&] {
    if (std::exchange(once, false)) {
      auto s = claim("s");
      s.sharedHolders.push_back(PodRef{"sr", args("sr").podUid});
      api_.updateStatus(resources::kExtendedResourceClaims, "default", s.toJson(SystemTime{}));
    }
  });
  ASSERT_EQ(binder_.bind(args("sq")).message(), "");
  EXPECT_EQ(claim("s").holders(),
            (std::vector<PodRef>{
                {"sp", args("sp").podUid}, {"sr", args("sr").podUid}, {"sq", args("sq").podUid}}));
  EXPECT_GE(binder_.stats().conflicts.load(), 1u);
}

// sr joins (its devices, then the claim) between sq's read of the claim and sq's writes. sq's
// device write, decided on the claim without sr, must not drop sr from the devices: they name
// every pod the claim names at every moment, so that they would outlive the claim object while
// sr runs, even should sq's attempt never be decided again.
TEST_F(SharedClaimBinderTest, AJoinDecidedOnAnOlderClaimLeavesTheDevicesNamingEveryHolder) {
  const PodRef sr{"sr", args("sr").podUid};
  int plans = 0;
  std::vector<PodRef> afterFirstAttempt;
  binder_.onPlannedForTesting([&] {
    auto s = claim("s");
    if (++plans == 1) {
      for (const auto& name : s.allocated) {
        auto d = device(name);
        d.holders.push_back(sr);
        api_.updateStatus(resources::kExtendedResources, "", d.toJson(SystemTime{}));
      }
      s.sharedHolders.push_back(sr);
      api_.updateStatus(resources::kExtendedResourceClaims, "default", s.toJson(SystemTime{}));
    } else if (plans == 2) {
      afterFirstAttempt = device(s.allocated[0]).holders;
    }
  });
  ASSERT_EQ(binder_.bind(args("sq")).message(), "");
  ASSERT_EQ(plans, 2) << "the first attempt's claim write was to conflict";
  EXPECT_EQ(afterFirstAttempt,
            (std::vector<PodRef>{{"sp", args("sp").podUid}, sr, {"sq", args("sq").podUid}}));
  EXPECT_EQ(device(claim("s").allocated[0]).holders, claim("s").holders());
}

TEST_F(SharedClaimBinderTest, AFailedJoinTakesOnlyThatPodOutOfTheHolders) {
  api_.failNext(Verb::kBind, ApiError(ApiErrorKind::kForbidden, 403, "Forbidden", "no"), -1);
  EXPECT_NE(binder_.bind(args("sq")).message(), "");
  auto s = claim("s");
  EXPECT_EQ(s.phase, ClaimPhase::kBound);
  EXPECT_EQ(s.holders(), (std::vector<PodRef>{{"sp", args("sp").podUid}}));
  EXPECT_EQ(device(s.allocated[0]).phase, DevicePhase::kBound);
}

TEST_F(BinderTest, TheBindingKeepsThePodsOwnRequiredPlugins) {
  json pod = podJson("q", "c");
  pod["metadata"]["annotations"][kRequiredPluginsAnnotation] = R"(["other-plugin"])";
  api_.seed(resources::kPods, pod);
  ASSERT_EQ(binder_.bind(args("q")).message(), "");
  EXPECT_EQ(api_.bindings().at(0).annotations.at(kRequiredPluginsAnnotation),
            R"(["other-plugin","extended-resource-node-agent"])");
}

// A container's own required-plugins list takes precedence over the pod's in NRI: the Binding
// adds the agent to it too, so no container of a pod given devices can start without the agent.
TEST_F(BinderTest, TheBindingRequiresTheAgentForContainersWithListsOfTheirOwn) {
  json pod = podJson("q", "c");
  pod["metadata"]["annotations"]["required-plugins.noderesource.dev/container.app"] = "[]";
  api_.seed(resources::kPods, pod);
  ASSERT_EQ(binder_.bind(args("q")).message(), "");
  const auto written = api_.bindings().at(0).annotations;
  EXPECT_EQ(written.at("required-plugins.noderesource.dev/container.app"),
            R"(["extended-resource-node-agent"])");
  EXPECT_EQ(written.at(kRequiredPluginsAnnotation), R"(["extended-resource-node-agent"])");
}

TEST_F(BinderTest, APodGivenNoDevicesDoesNotRequireTheAgent) {
  json pod = podJson("bare", "c");
  pod["metadata"]["annotations"].erase(kClaimsAnnotation);
  api_.seed(resources::kPods, pod);
  ASSERT_EQ(binder_.bind(args("bare")).message(), "");
  EXPECT_EQ(api_.bindings().at(0).annotations.count(kRequiredPluginsAnnotation), 0u);
}

TEST_F(BinderTest, NoRequiredPluginIsNamedForNodesWithoutTheAgent) {
  Binder binder{api_, index_,
                [](const std::string&) { return std::map<std::string, std::string>{}; },
                writesOnly({.requiredPlugin = ""})};
  ASSERT_EQ(binder.bind(args()).message(), "");
  EXPECT_EQ(api_.bindings().at(0).annotations.count(kRequiredPluginsAnnotation), 0u);
}

TEST_F(BinderTest, ADeviceTakenBehindAStaleCacheIsRedecidedNotOverwritten) {
  // Another replica bound d0 and d1's cached resourceVersions are now stale; only d1 is free.
  auto taken = device("d0");
  taken.phase = DevicePhase::kBound;
  taken.claimRef = ClaimRef{"default", "other", "uid-other"};
  api_.updateStatus(resources::kExtendedResources, "", taken.toJson(SystemTime{}));

  ASSERT_EQ(binder_.bind(args()).message(), "");
  EXPECT_EQ(claim("c").allocated, (std::vector<std::string>{"d1"}));
  EXPECT_EQ(device("d0").claimRef, (ClaimRef{"default", "other", "uid-other"}));
  EXPECT_GE(binder_.stats().conflicts.load(), 1u);
}

TEST_F(BinderTest, AWatchUpdateBetweenPlanAndWriteIsNotWrittenOver) {
  // The interleaving the chaos soak caught: this replica plans on d0 while its cache shows it
  // Available; another replica's write of d0 then arrives by watch before this one writes.
  // The newer cached version carries the right resourceVersion, so writing over it would pass
  // the precondition and give d0 to two claims.
  bool landed = false;
  binder_.onPlannedForTesting([&] {
    if (landed) {
      return;
    }
    landed = true;
    auto taken = device("d0");
    taken.phase = DevicePhase::kBound;
    taken.claimRef = ClaimRef{"default", "other", "uid-other"};
    index_.upsert(std::make_shared<const ExtendedResource>(ExtendedResource::fromJson(
        api_.updateStatus(resources::kExtendedResources, "", taken.toJson(SystemTime{})))));
  });

  ASSERT_EQ(binder_.bind(args()).message(), "");
  ASSERT_TRUE(landed);
  EXPECT_EQ(device("d0").claimRef, (ClaimRef{"default", "other", "uid-other"}));
  EXPECT_EQ(claim("c").allocated, (std::vector<std::string>{"d1"}));
  EXPECT_EQ(device("d1").claimRef,
            (ClaimRef{"default", "c", uidOf(resources::kExtendedResourceClaims, "default", "c")}));
  EXPECT_GE(binder_.stats().conflicts.load(), 1u);
}

TEST_F(BinderTest, AFailedBindingUndoesEveryWriteAndReportsTheError) {
  api_.failNext(Verb::kBind, ApiError(ApiErrorKind::kForbidden, 403, "Forbidden", "no"), -1);
  std::string error = binder_.bind(args()).message();
  EXPECT_NE(error.find("no"), std::string::npos) << error;
  EXPECT_EQ(claim("c").phase, ClaimPhase::kPending);
  EXPECT_TRUE(claim("c").allocated.empty());
  EXPECT_FALSE(claim("c").podRef);
  for (const auto& name : {"d0", "d1"}) {
    EXPECT_TRUE(offerable(device(name), allocationOf(claim("c")))) << name << ": freed";
  }
  EXPECT_TRUE(api_.bindings().empty());
  EXPECT_EQ(index_.holdCount(), 0u);
  EXPECT_GE(binder_.stats().undos.load(), 1u);
}

// The Binding's reply is lost before anything says whether it was applied: it may still land,
// so nothing is undone; the next attempt finds the claim bound to the pod and reuses it.
TEST_F(BinderTest, ABindingOfUnknownOutcomeKeepsTheAllocationForTheRetry) {
  api_.failNext(Verb::kBind, ApiError(ApiErrorKind::kTimeout, 0, "", "cut off"));
  ASSERT_EQ(binder_.bind(args()).message(), "");
  const auto c = claim("c");
  ASSERT_EQ(c.allocated.size(), 1u);
  ASSERT_EQ(api_.bindings().size(), 1u);
  EXPECT_EQ(api_.bindings()[0].annotations.at(kAllocationAnnotation),
            allocationAnnotation({{"c", {&*index_.get(c.allocated[0])}}}));
  EXPECT_EQ(binder_.stats().undos, 0u);
  EXPECT_EQ(device(c.allocated[0]).claimRef, (ClaimRef{"default", "c", c.meta.uid}));
}

TEST_F(BinderTest, BindingsOfUnknownOutcomeLeaveTheAllocationWholeForTheController) {
  api_.failNext(Verb::kBind, ApiError(ApiErrorKind::kTransport, 0, "", "connection reset"), -1);
  const std::string error = binder_.bind(args()).message();
  EXPECT_NE(error.find("outcome is unknown"), std::string::npos) << error;
  EXPECT_EQ(binder_.stats().undos, 0u);
  const auto c = claim("c");
  EXPECT_EQ(c.phase, ClaimPhase::kBound);
  EXPECT_EQ(c.podRef, (PodRef{"p", args().podUid}));
  ASSERT_EQ(c.allocated.size(), 1u);
  EXPECT_EQ(device(c.allocated[0]).claimRef, (ClaimRef{"default", "c", c.meta.uid}));
  EXPECT_EQ(index_.holdCount(), 0u);
  EXPECT_EQ(index_.get(c.allocated[0])->phase, DevicePhase::kBound)
      << "filter must not offer the kept device while the watch catches up";
}

// kube-scheduler gave up on this replica's call and retried the bind on another, which found
// the claim bound to the pod and bound the pod with it: the claim and its devices are the
// bound pod's, and this replica's failed Binding must not take them back.
TEST_F(BinderTest, AFailedBindingLeavesWhatAnotherBindOfThePodBoundItWith) {
  binder_.onPlannedForTesting([&] {
    json pod = *api_.peek(resources::kPods, "default", "p");
    pod["spec"]["nodeName"] = "n2";
    pod["metadata"]["annotations"][kAllocationAnnotation] = R"({"c":["d0"]})";
    api_.update(resources::kPods, "default", pod);
  });
  const std::string error = binder_.bind(args()).message();
  EXPECT_NE(error.find("bound to node n2"), std::string::npos) << error;
  EXPECT_EQ(claim("c").phase, ClaimPhase::kBound);
  EXPECT_EQ(claim("c").allocated.size(), 1u);
  EXPECT_EQ(binder_.stats().undos.load(), 0u);

  // Bound without an allocation annotation (not by an extender): the claim is given back.
  api_.seed(resources::kExtendedResourceClaims, claimJson("c2"));
  api_.seed(resources::kPods, podJson("q", "c2"));
  binder_.onPlannedForTesting([&] {
    json pod = *api_.peek(resources::kPods, "default", "q");
    pod["spec"]["nodeName"] = "n2";
    api_.update(resources::kPods, "default", pod);
  });
  const std::string other = binder_.bind(args("q")).message();
  EXPECT_NE(other.find("already bound to node n2"), std::string::npos) << other;
  EXPECT_EQ(claim("c2").phase, ClaimPhase::kPending);
  EXPECT_TRUE(claim("c2").allocated.empty());
}

// kube-scheduler retried the bind while this replica's first call for the pod still ran: the
// retry must not reuse what the first call is writing, nor write anything itself.
TEST_F(BinderTest, ABindOfAPodStillBeingBoundHereFailsWithoutWriting) {
  bool once = false;
  std::string retried;
  int writesByRetry = -1;
  binder_.onPlannedForTesting([&] {
    if (std::exchange(once, true)) {
      return;
    }
    const int before = writes();
    retried = binder_.bind(args()).message();
    writesByRetry = writes() - before;
  });
  ASSERT_EQ(binder_.bind(args()).message(), "");
  EXPECT_NE(retried.find("still being bound"), std::string::npos) << retried;
  EXPECT_EQ(writesByRetry, 0);
  EXPECT_EQ(api_.bindings().size(), 1u);
  EXPECT_EQ(claim("c").phase, ClaimPhase::kBound);
  // Once the first call is done the pod may be bound again (a no-op now that it is bound).
  EXPECT_EQ(binder_.bind(args()).message(), "");
  EXPECT_EQ(api_.bindings().size(), 1u);
}

TEST_F(BinderTest, ARetriedBindReusesTheAllocationItAlreadyMade) {
  bindClaimAndD1ToPod();
  const int before = writes();

  ASSERT_EQ(binder_.bind(args()).message(), "");
  EXPECT_EQ(writes() - before, 2);  // the claim, rewritten so the call that bound it cannot undo it
  EXPECT_EQ(claim("c").bindRewrites, 1);
  auto allocation = json::parse(api_.bindings().at(0).annotations.at(kAllocationAnnotation));
  EXPECT_EQ(allocation["c"][0]["name"], "d1");
  EXPECT_EQ(device("d0").phase, DevicePhase::kAvailable);
}

// Each rewrite counts up, so no two leave the same status: two quick rewrites must not look
// to the controller like none.
TEST_F(BinderTest, EveryReuseOfAClaimLeavesItAStatusItNeverHadBefore) {
  bindClaimAndD1ToPod();
  auto c = claim("c");
  c.message = "bound by an earlier call";
  c.bindRewrites = 9;
  api_.updateStatus(resources::kExtendedResourceClaims, "default", c.toJson(SystemTime{}));
  const std::string before = claim("c").meta.resourceVersion;

  ASSERT_EQ(binder_.bind(args()).message(), "");
  EXPECT_EQ(claim("c").bindRewrites, 10);
  EXPECT_EQ(claim("c").message, "bound by an earlier call");
  EXPECT_NE(claim("c").meta.resourceVersion, before);
}

// A count left on a Pending claim (by a release that did not know the field) does not carry
// over: a claim bound afresh has no rewrites.
TEST_F(BinderTest, AClaimBoundAfreshHasNoRewrites) {
  auto c = claim("c");
  c.bindRewrites = 3;
  api_.updateStatus(resources::kExtendedResourceClaims, "default", c.toJson(SystemTime{}));
  ASSERT_EQ(binder_.bind(args()).message(), "");
  EXPECT_EQ(claim("c").phase, ClaimPhase::kBound);
  EXPECT_EQ(claim("c").bindRewrites, 0);
}

// The call that bound the claim undid it (its Binding failed) after this retry read it: the
// retry's rewrite of the claim conflicts, and the bind is decided again on what is left.
TEST_F(BinderTest, ARetryWhoseClaimWasUndoneMeanwhileBindsAfresh) {
  bindClaimAndD1ToPod();
  bool once = false;
  binder_.onPlannedForTesting([&] {
    if (std::exchange(once, true)) {
      return;
    }
    auto c = claim("c");
    c.phase = ClaimPhase::kPending;
    c.allocated.clear();
    c.nodeName.clear();
    c.podRef.reset();
    api_.updateStatus(resources::kExtendedResourceClaims, "default", c.toJson(SystemTime{}));
    auto freed = device("d1");
    freed.phase = DevicePhase::kAvailable;
    freed.claimRef.reset();
    api_.updateStatus(resources::kExtendedResources, "", freed.toJson(SystemTime{}));
  });

  ASSERT_EQ(binder_.bind(args()).message(), "");
  EXPECT_GE(binder_.stats().conflicts.load(), 1u);
  const auto c = claim("c");
  ASSERT_EQ(c.phase, ClaimPhase::kBound);
  ASSERT_EQ(c.allocated.size(), 1u);
  auto allocation = json::parse(api_.bindings().at(0).annotations.at(kAllocationAnnotation));
  EXPECT_EQ(allocation["c"][0]["name"], c.allocated[0]);
  for (const auto& name : {"d0", "d1"}) {
    const bool listed = name == c.allocated[0];
    EXPECT_EQ(device(name).phase, listed ? DevicePhase::kBound : DevicePhase::kAvailable) << name;
  }
}

TEST_F(BinderTest, AClaimWriteWhoseReplyIsLostIsUndoneWithItsDevices) {
  api_.loseNextStatusReplies(resources::kExtendedResourceClaims);
  ASSERT_EQ(binder_.bind(args()).message(), "");  // the retry allocates afresh and binds
  ASSERT_EQ(api_.bindings().size(), 1u);
  const auto c = claim("c");
  EXPECT_EQ(c.phase, ClaimPhase::kBound);
  ASSERT_EQ(c.allocated.size(), 1u);
  const auto d = device(c.allocated[0]);
  EXPECT_EQ(d.phase, DevicePhase::kBound);
  ASSERT_TRUE(d.claimRef);
  EXPECT_EQ(d.claimRef->uid, c.meta.uid);
  EXPECT_GE(binder_.stats().undos.load(), 1u);
}

// The first device write is applied but its reply lost: the undo reads the device and puts
// it back, so the device the retry does not allocate is not left Bound to the claim.
TEST_F(BinderTest, ADeviceWriteWhoseReplyIsLostIsUndone) {
  api_.loseNextStatusReplies(resources::kExtendedResources);
  ASSERT_EQ(binder_.bind(args()).message(), "");
  ASSERT_EQ(api_.bindings().size(), 1u);
  const auto c = claim("c");
  ASSERT_EQ(c.allocated.size(), 1u);
  for (const std::string name : {"d0", "d1"}) {
    const bool listed = name == c.allocated[0];
    EXPECT_EQ(device(name).phase, listed ? DevicePhase::kBound : DevicePhase::kAvailable) << name;
    EXPECT_EQ(device(name).claimRef.has_value(), listed) << name;
  }
  EXPECT_GE(binder_.stats().undos.load(), 1u);
}

TEST_F(BinderTest, AFailedBindLeavesNothingBoundEvenWhenAClaimReplyWasLost) {
  api_.loseNextStatusReplies(resources::kExtendedResourceClaims);
  api_.failNext(Verb::kBind, ApiError(ApiErrorKind::kForbidden, 403, "Forbidden", "no"), -1);
  EXPECT_NE(binder_.bind(args()).message(), "");
  EXPECT_TRUE(api_.bindings().empty());
  EXPECT_EQ(claim("c").phase, ClaimPhase::kPending);
  EXPECT_FALSE(claim("c").podRef);
  for (const auto& name : {"d0", "d1"}) {
    EXPECT_TRUE(offerable(device(name), allocationOf(claim("c")))) << name << ": freed";
  }
}

// The claim write of an earlier attempt was applied but its reply lost, so that attempt
// undid its device write: the claim says Bound to this pod, the device says Available.
TEST_F(BinderTest, ARetriedBindBindsAgainADeviceALostReplyPutBack) {
  bindClaimToPodWithD1();

  ASSERT_EQ(binder_.bind(args()).message(), "");
  EXPECT_EQ(device("d1").phase, DevicePhase::kBound);
  ASSERT_TRUE(device("d1").claimRef);
  EXPECT_EQ(device("d1").claimRef->uid, claim("c").meta.uid);
  EXPECT_EQ(device("d0").phase, DevicePhase::kAvailable);
  ASSERT_EQ(api_.bindings().size(), 1u);
  auto allocation = json::parse(api_.bindings().at(0).annotations.at(kAllocationAnnotation));
  EXPECT_EQ(allocation["c"][0]["name"], "d1");
}

// The retry binds d1 to the claim again, then its Binding fails: the claim it reused stays
// Bound to the pod and lists d1, so d1 must stay Bound to it too.
TEST_F(BinderTest, AFailedRetryKeepsTheDevicesItBoundAgainToAReusedClaim) {
  bindClaimToPodWithD1();
  api_.failNext(Verb::kBind, ApiError(ApiErrorKind::kForbidden, 403, "Forbidden", "no"), -1);

  EXPECT_NE(binder_.bind(args()).message(), "");
  EXPECT_TRUE(api_.bindings().empty());
  EXPECT_EQ(claim("c").phase, ClaimPhase::kBound);
  EXPECT_EQ(claim("c").allocated, std::vector<std::string>{"d1"});
  EXPECT_EQ(device("d1").phase, DevicePhase::kBound);
  ASSERT_TRUE(device("d1").claimRef);
  EXPECT_EQ(device("d1").claimRef->uid, claim("c").meta.uid);
  EXPECT_EQ(index_.holdCount(), 0u);
}

TEST_F(BinderTest, ARetriedBindWhoseDeviceWentToAnotherClaimIsNotBound) {
  api_.seed(resources::kExtendedResourceClaims, claimJson("other"));
  auto d = device("d1");
  d.phase = DevicePhase::kBound;
  d.claimRef = ClaimRef{"default", "other", claim("other").meta.uid};
  api_.updateStatus(resources::kExtendedResources, "", d.toJson(SystemTime{}));
  bindClaimToPodWithD1();

  const std::string error = binder_.bind(args()).message();
  EXPECT_NE(error.find("device d1 of claim default/c is no longer bound to it"), std::string::npos)
      << error;
  EXPECT_TRUE(api_.bindings().empty());
  EXPECT_EQ(device("d1").claimRef->name, "other");
  EXPECT_EQ(index_.holdCount(), 0u);
}

TEST_F(BinderTest, ARetriedBindOfAnAlreadyBoundPodSucceedsWithoutWriting) {
  ASSERT_EQ(binder_.bind(args()).message(), "");
  const int before = writes();
  EXPECT_EQ(binder_.bind(args()).message(), "");
  EXPECT_EQ(writes(), before);
  EXPECT_NE(binder_.bind(args("p", "n2")).message(), "");
}

TEST_F(BinderTest, ARecreatedPodIsNotBoundWithTheOldUid) {
  std::string error = binder_.bind({"p", "default", "uid-of-an-older-p", "n1"}).message();
  EXPECT_NE(error.find("recreated"), std::string::npos) << error;
  EXPECT_EQ(writes(), 0);
}

TEST_F(BinderTest, NoFreeDeviceOnTheNodeFailsWithTheFilterReason) {
  std::string error = binder_.bind(args("p", "n2")).message();
  EXPECT_EQ(error, "claim default/c: 0 of 1 free nvidia.com/gpu with type=k80 on this node");
  EXPECT_EQ(writes(), 0);
}

// A binder given the extender's caches, here copies the test takes of the API's objects.
class CachedBinderTest : public BinderTest {
 protected:
  void cachePod(const std::string& name) {
    pods_[objectKey("default", name)] =
        std::make_shared<const Pod>(Pod::fromJson(*api_.peek(resources::kPods, "default", name)));
  }
  void cacheClaim(const ExtendedResourceClaim& c) {
    claims_[objectKey(c.meta.ns, c.meta.name)] = std::make_shared<const ExtendedResourceClaim>(c);
  }
  template <typename Map>
  static typename Map::mapped_type find(const Map& m, const std::string& key) {
    auto it = m.find(key);
    return it == m.end() ? nullptr : it->second;
  }

  std::map<std::string, std::shared_ptr<const Pod>> pods_;
  std::map<std::string, ClaimPtr> claims_;
  Binder cached_{api_,
                 index_,
                 [](const std::string&) { return std::map<std::string, std::string>{}; },
                 writesOnly(),
                 {.pods = [this](const std::string& key) { return find(pods_, key); },
                  .claims = [this](const std::string& key) { return find(claims_, key); }}};
};

TEST_F(CachedBinderTest, ABindWhoseObjectsAreCachedReadsNothingAndMakesItsThreeWrites) {
  cachePod("p");
  cacheClaim(claim("c"));
  ASSERT_EQ(cached_.bind(args()).message(), "");
  EXPECT_EQ(api_.calls(Verb::kGet), 0);
  EXPECT_EQ(writes(), 3);
  EXPECT_EQ(claim("c").phase, ClaimPhase::kBound);
  EXPECT_EQ(api_.bindings().size(), 1u);
}

TEST_F(CachedBinderTest, WhatTheCachesLackIsReadLive) {
  ASSERT_EQ(cached_.bind(args()).message(), "");
  EXPECT_EQ(api_.calls(Verb::kGet), 2);  // the pod and its claim
  EXPECT_EQ(claim("c").phase, ClaimPhase::kBound);
}

// The cached claim is a version behind: its write is refused, the device written before it is
// put back, and the second attempt binds on the claim as the API has it.
TEST_F(CachedBinderTest, AStaleCachedClaimCostsAnUndoAndARetryNeverAWrongWrite) {
  cachePod("p");
  cacheClaim(claim("c"));
  // Any change moves the claim's resourceVersion past the cached one.
  json moved = *api_.peek(resources::kExtendedResourceClaims, "default", "c");
  moved["metadata"]["labels"]["touched"] = "yes";
  api_.update(resources::kExtendedResourceClaims, "default", moved);
  ASSERT_NE(claim("c").meta.resourceVersion, claims_.at("default/c")->meta.resourceVersion);
  ASSERT_EQ(cached_.bind(args()).message(), "");
  auto c = claim("c");
  EXPECT_EQ(c.phase, ClaimPhase::kBound);
  ASSERT_EQ(c.allocated.size(), 1u);
  EXPECT_EQ(device(c.allocated[0]).claimRef, (ClaimRef{"default", "c", c.meta.uid}));
  EXPECT_EQ(cached_.stats().undos.load(), 1u);
  EXPECT_EQ(cached_.stats().conflicts.load(), 1u);
  for (const auto& name : {"d0", "d1"}) {
    if (name != c.allocated[0]) {
      EXPECT_EQ(device(name).phase, DevicePhase::kAvailable) << name;
    }
  }
}

// A cached pod that is not the one to bind (recreated, or bound meanwhile) decides nothing:
// the live pod does.
TEST_F(CachedBinderTest, ACachedPodOfAnotherUidIsReadLive) {
  auto other = Pod::fromJson(*api_.peek(resources::kPods, "default", "p"));
  other.meta.uid = "uid-of-a-newer-p";
  pods_[objectKey("default", "p")] = std::make_shared<const Pod>(other);
  cacheClaim(claim("c"));
  ASSERT_EQ(cached_.bind(args()).message(), "");
  EXPECT_EQ(api_.calls(Verb::kGet), 1);
}

// Cached claims that would refuse the bind (here a claim not yet seen as it is now) are not
// trusted with a refusal: the next attempt decides on live claims.
TEST_F(CachedBinderTest, ARefusalOnCachedClaimsIsDecidedAgainOnLiveOnes) {
  cachePod("p");
  auto stale = claim("c");
  stale.phase = ClaimPhase::kLost;
  cacheClaim(stale);
  ASSERT_EQ(cached_.bind(args()).message(), "");
  EXPECT_EQ(claim("c").phase, ClaimPhase::kBound);
  EXPECT_EQ(writes(), 3);
}

TEST_F(CachedBinderTest, ABindThatCannotFitFailsOnLiveStateWithTheFilterReason) {
  cachePod("p");
  cacheClaim(claim("c"));
  EXPECT_EQ(cached_.bind(args("p", "n2")).message(),
            "claim default/c: 0 of 1 free nvidia.com/gpu with type=k80 on this node");
  EXPECT_EQ(writes(), 0);
}

// The bind's failures carry a code the caller can decide on; the message stays the one the
// scheduler shows.
TEST_F(BinderTest, FailuresCarryTheirCode) {
  EXPECT_EQ(binder_.bind({"p", "default", "uid-of-an-older-p", "n1"}).code(),
            StatusCode::kNotFound);
  const Status noFit = binder_.bind(args("p", "n2"));
  EXPECT_EQ(noFit.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(noFit.message(),
            "claim default/c: 0 of 1 free nvidia.com/gpu with type=k80 on this node");
  ASSERT_TRUE(binder_.bind(args()).ok());
  EXPECT_EQ(binder_.bind(args("p", "n2")).code(), StatusCode::kConflict);
}

// Two extender replicas, each with its own cache, race for the only device: the API's
// resourceVersion check lets exactly one win, and the loser leaves nothing behind.
// Fails every Binding with 403 after running `before` once.
class RefusingBindings : public FakeApiClient {
 public:
  std::function<void()> before;
  void bindPod(const std::string&, const std::string&, const std::string&, const std::string&,
               const std::map<std::string, std::string>& = {}) override {
    if (auto fn = std::exchange(before, nullptr)) {
      fn();
    }
    throw ApiError(ApiErrorKind::kForbidden, 403, "Forbidden", "bindings refused");
  }
};

// Another replica rewrote the claim this call had bound, to bind the pod with it, before this
// call's Binding failed: the undo cannot put the claim back and leaves it its device.
TEST(BinderRace, AnUndoLeavesAClaimAnotherBindRewroteWithItsDevice) {
  RefusingBindings api;
  DeviceIndex index;
  for (const auto& name : {"d0", "d1"}) {
    index.upsert(std::make_shared<const ExtendedResource>(ExtendedResource::fromJson(
        api.seed(resources::kExtendedResources, deviceJson(name, "n1")))));
  }
  api.seed(resources::kExtendedResourceClaims, claimJson("c"));
  const json pod = api.seed(resources::kPods, podJson("p", "c"));
  auto claim = [&] {
    return ExtendedResourceClaim::fromJson(
        *api.peek(resources::kExtendedResourceClaims, "default", "c"));
  };
  api.before = [&] {
    auto c = claim();
    c.bindRewrites++;
    api.updateStatus(resources::kExtendedResourceClaims, "default", c.toJson(SystemTime{}));
  };
  Binder binder(
      api, index, [](const std::string&) { return std::map<std::string, std::string>{}; },
      writesOnly());

  EXPECT_NE(binder.bind({"p", "default", pod["metadata"]["uid"], "n1"})
                .message()
                .find("bindings refused"),
            std::string::npos);
  const auto c = claim();
  ASSERT_EQ(c.phase, ClaimPhase::kBound);
  ASSERT_EQ(c.allocated.size(), 1u);
  const auto d =
      ExtendedResource::fromJson(*api.peek(resources::kExtendedResources, "", c.allocated[0]));
  EXPECT_EQ(d.phase, DevicePhase::kBound);
  ASSERT_TRUE(d.claimRef);
  EXPECT_EQ(d.claimRef->uid, c.meta.uid);
}

TEST(BinderRace, TwoReplicasNeverGiveOneDeviceToTwoClaims) {
  for (int round = 0; round < 20; ++round) {
    FakeApiClient api;
    auto dev = ExtendedResource::fromJson(
        api.seed(resources::kExtendedResources, deviceJson("only", "n1")));
    api.seed(resources::kExtendedResourceClaims, claimJson("c1"));
    api.seed(resources::kExtendedResourceClaims, claimJson("c2"));
    api.seed(resources::kPods, podJson("p1", "c1"));
    api.seed(resources::kPods, podJson("p2", "c2"));
    auto noLabels = [](const std::string&) { return std::map<std::string, std::string>{}; };
    DeviceIndex index1, index2;
    index1.upsert(std::make_shared<const ExtendedResource>(dev));
    index2.upsert(std::make_shared<const ExtendedResource>(dev));
    Binder b1(api, index1, noLabels, writesOnly()), b2(api, index2, noLabels, writesOnly());
    std::string e1, e2;
    auto uid = [&](const std::string& pod) -> std::string {
      return (*api.peek(resources::kPods, "default", pod))["metadata"]["uid"];
    };
    std::thread t1([&, u = uid("p1")] { e1 = b1.bind({"p1", "default", u, "n1"}).message(); });
    std::thread t2([&, u = uid("p2")] { e2 = b2.bind({"p2", "default", u, "n1"}).message(); });
    t1.join();
    t2.join();

    ASSERT_NE(e1.empty(), e2.empty()) << "round " << round << ": '" << e1 << "' / '" << e2 << "'";
    const std::string winner = e1.empty() ? "c1" : "c2";
    const std::string loser = e1.empty() ? "c2" : "c1";
    auto d = ExtendedResource::fromJson(*api.peek(resources::kExtendedResources, "", "only"));
    EXPECT_EQ(d.claimRef->name, winner);
    auto lost = ExtendedResourceClaim::fromJson(
        *api.peek(resources::kExtendedResourceClaims, "default", loser));
    EXPECT_EQ(lost.phase, ClaimPhase::kPending);
    EXPECT_TRUE(lost.allocated.empty());
    EXPECT_EQ(api.bindings().size(), 1u);
  }
}

// Runs afterStatusWrite once each status write has been applied: a test moves its clock
// there, as a bind that stalls (a frozen process, API calls timing out in a row) would see it.
class StallingApi : public FakeApiClient {
 public:
  std::function<void(const Resource&)> afterStatusWrite;
  // Whether each status write ran under a RequestDeadline, in order.
  std::vector<bool> fenced;
  nlohmann::json updateStatus(const Resource& res, const std::string& ns,
                              const nlohmann::json& obj) override {
    fenced.push_back(RequestDeadline::remaining().has_value());
    try {
      auto written = FakeApiClient::updateStatus(res, ns, obj);
      afterStatusWrite(res);
      return written;
    } catch (const ApiError&) {
      afterStatusWrite(res);  // a write that failed slowly
      throw;
    }
  }
};

class BinderDeadlineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& name : {"d0", "d1"}) {
      index.upsert(std::make_shared<const ExtendedResource>(ExtendedResource::fromJson(
          api.seed(resources::kExtendedResources, deviceJson(name, "n1")))));
    }
    api.seed(resources::kExtendedResourceClaims, claimJson("c"));
    podUid = api.seed(resources::kPods, podJson("p", "c"))["metadata"]["uid"];
  }
  // Each status write of `res` takes `stall`; the bind's deadline is 30s.
  std::string bindStalling(const Resource& res, std::chrono::milliseconds stall) {
    api.afterStatusWrite = [&, stall](const Resource& written) {
      if (written.plural == res.plural) {
        now += stall;
      }
    };
    Binder binder(
        api, index, [](const std::string&) { return std::map<std::string, std::string>{}; },
        writesOnly({.deadline = std::chrono::seconds(30), .clock = [this] { return now; }}));
    return binder.bind({"p", "default", podUid, "n1"}).message();
  }
  void expectNothingLeftAllocated() {
    const auto c = ExtendedResourceClaim::fromJson(
        *api.peek(resources::kExtendedResourceClaims, "default", "c"));
    EXPECT_EQ(c.phase, ClaimPhase::kPending);
    EXPECT_TRUE(c.allocated.empty());
    for (const auto& name : {"d0", "d1"}) {
      const auto d = ExtendedResource::fromJson(*api.peek(resources::kExtendedResources, "", name));
      EXPECT_TRUE(offerable(d, allocationOf(c))) << name << ": freed";
    }
    EXPECT_TRUE(api.bindings().empty());
    EXPECT_EQ(index.holdCount(), 0u);
  }

  StallingApi api;
  DeviceIndex index;
  std::string podUid;
  std::chrono::steady_clock::time_point now{};
};

TEST_F(BinderDeadlineTest, AStallAfterTheDeviceWriteStopsTheClaimWriteAndUndoes) {
  const std::string error = bindStalling(resources::kExtendedResources, std::chrono::seconds(31));
  EXPECT_NE(error.find("deadline"), std::string::npos) << error;
  EXPECT_EQ(error.rfind("gave up", 0), std::string::npos) << "failed, not retried: " << error;
  EXPECT_EQ(api.calls(Verb::kBind), 0);
  expectNothingLeftAllocated();
  EXPECT_EQ(api.fenced, (std::vector<bool>{true, false}))
      << "the device write ran under the deadline, its undo without";
}

TEST_F(BinderDeadlineTest, AStallAfterTheClaimWriteStopsTheBindingAndUndoes) {
  const std::string error =
      bindStalling(resources::kExtendedResourceClaims, std::chrono::seconds(31));
  EXPECT_NE(error.find("deadline"), std::string::npos) << error;
  EXPECT_EQ(error.rfind("gave up", 0), std::string::npos) << "failed, not retried: " << error;
  EXPECT_EQ(api.calls(Verb::kBind), 0);
  expectNothingLeftAllocated();
}

// The device write started in time but was cut off at the deadline: the bind fails at once
// instead of trying again.
TEST_F(BinderDeadlineTest, AWriteCutOffAtTheDeadlineFailsTheBindWithoutRetrying) {
  api.failNext(Verb::kUpdateStatus, ApiError(ApiErrorKind::kTimeout, 0, "", "cut off"));
  const std::string error = bindStalling(resources::kExtendedResources, std::chrono::seconds(31));
  EXPECT_NE(error.find("deadline has passed"), std::string::npos) << error;
  EXPECT_EQ(error.rfind("gave up", 0), std::string::npos) << error;
  EXPECT_EQ(api.calls(Verb::kBind), 0);
  expectNothingLeftAllocated();
}

TEST_F(BinderDeadlineTest, ASlowBindWhoseWritesAllStartInTimeCompletes) {
  EXPECT_EQ(bindStalling(resources::kExtendedResourceClaims, std::chrono::seconds(30)), "");
  ASSERT_EQ(api.bindings().size(), 1u);
  EXPECT_EQ(
      ExtendedResourceClaim::fromJson(*api.peek(resources::kExtendedResourceClaims, "default", "c"))
          .phase,
      ClaimPhase::kBound);
}

// Pods that ask in their resources for example.com/gpu, which a class serves with the k80s.
class ClassBinderTest : public CachedBinderTest {
 protected:
  ClassBinderTest() {
    class_ = std::make_shared<const ExtendedResourceClass>(ExtendedResourceClass::fromJson(
        {{"metadata", {{"name", "gpu"}, {"creationTimestamp", "2026-01-01T00:00:00Z"}}},
         {"spec",
          {{"extendedResourceName", "example.com/gpu"},
           {"rawResourceName", "nvidia.com/gpu"},
           {"metadataRequirements", {{"matchLabels", {{"type", "k80"}}}}}}}}));
  }
  // Pod `name`, cached, whose container asks for one example.com/gpu.
  Pod seedAsking(const std::string& name) {
    json pod = podJson(name, "");
    pod["metadata"].erase("annotations");
    pod["spec"]["containers"][0]["resources"] = {{"limits", {{"example.com/gpu", "1"}}}};
    api_.seed(resources::kPods, pod);
    cachePod(name);
    return Pod::fromJson(*api_.peek(resources::kPods, "default", name));
  }
  ClassRequest request(const Pod& pod) {
    return classRequests(pod.extendedRequests, ClassTable({class_})).at("example.com/gpu");
  }

  ClassPtr class_;
  Binder classes_{api_,
                  index_,
                  [](const std::string&) { return std::map<std::string, std::string>{}; },
                  writesOnly(),
                  {.pods = [this](const std::string& key) { return find(pods_, key); },
                   .claims = [this](const std::string& key) { return find(claims_, key); },
                   .classes = [this] { return std::vector<ClassPtr>{class_}; }}};
};

// The claim is made by the bind, before its devices (which name it by UID), and recorded on the
// pod by the Binding: one write more than a bind of a claim made before, and no read.
TEST_F(ClassBinderTest, AClassRequestsClaimIsMadeAtBindAndRecordedByTheBinding) {
  const Pod pod = seedAsking("q");
  const std::string name = classClaimName(pod, request(pod));
  ASSERT_EQ(classes_.bind(args("q")).message(), "");
  EXPECT_EQ(api_.calls(Verb::kGet), 0);
  EXPECT_EQ(api_.calls(Verb::kCreate), 1);
  EXPECT_EQ(writes(), 4);
  const auto made = claim(name);
  EXPECT_EQ(made.phase, ClaimPhase::kBound);
  EXPECT_EQ(made.meta.controllerUid(), pod.meta.uid);
  EXPECT_EQ(classClaimProblem(pod, request(pod), made), "");
  ASSERT_EQ(made.allocated.size(), 1u);
  EXPECT_EQ(device(made.allocated[0]).claimRef, (ClaimRef{"default", name, made.meta.uid}));
  ASSERT_EQ(api_.bindings().size(), 1u);
  EXPECT_EQ(api_.bindings()[0].annotations.at(kGeneratedClaimsAnnotation),
            generatedClaimsValue({{"example.com/gpu", name}}));
}

// Made meanwhile (by a bind whose reply was lost, or an older controller): the create is refused,
// and the next attempt binds the claim as the API has it.
TEST_F(ClassBinderTest, AClaimMadeMeanwhileIsBoundAsItIs) {
  const Pod pod = seedAsking("q");
  const json seeded = api_.seed(resources::kExtendedResourceClaims,
                                claimFromClass(pod, request(pod), /*protect=*/true));
  ASSERT_EQ(classes_.bind(args("q")).message(), "");
  const auto c = claim(seeded["metadata"]["name"]);
  EXPECT_EQ(c.meta.uid, seeded["metadata"]["uid"]);
  EXPECT_EQ(c.phase, ClaimPhase::kBound);
  EXPECT_EQ(api_.list(resources::kExtendedResourceClaims, "default", {})["items"].size(), 2u)
      << "c and the one made meanwhile; no second claim for the pod";
  EXPECT_EQ(classes_.stats().conflicts.load(), 1u);
}

// A claim under the name the pod's request gets that asks anything else than the class (made by
// the pod's owner, who may create claims owned by their pod) is refused, and nothing is written.
TEST_F(ClassBinderTest, AClaimUnderItsNameThatAsksOtherDevicesIsRefused) {
  const Pod pod = seedAsking("q");
  json other = claimFromClass(pod, request(pod), true);
  other["spec"]["metadataRequirements"] = json::object();
  api_.seed(resources::kExtendedResourceClaims, other);
  const Status st = classes_.bind(args("q"));
  EXPECT_NE(st.message().find("does not ask what class gpu"), std::string::npos) << st.message();
  EXPECT_EQ(api_.calls(Verb::kUpdateStatus), 0);
  EXPECT_TRUE(api_.bindings().empty());
  for (const auto& d : {"d0", "d1"}) {
    EXPECT_EQ(device(d).phase, DevicePhase::kAvailable) << d;
  }
}

}  // namespace
}  // namespace ker

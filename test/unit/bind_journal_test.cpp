#include "scheduler/bind/bind_journal.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "fake_api_client.h"
#include "model/claim_transitions.h"
#include "model/device_transitions.h"
#include "model/objects.h"
#include "model/suitability.h"

namespace ker {
namespace {

using nlohmann::json;
using testing::FakeApiClient;
using Verb = FakeApiClient::Verb;

// Records the status writes in order, as "<plural>/<name>".
class RecordingApi : public FakeApiClient {
 public:
  std::vector<std::string> statusWrites;
  json updateStatus(const Resource& res, const std::string& ns, const json& obj) override {
    statusWrites.push_back(res.plural + "/" + obj["metadata"]["name"].get<std::string>());
    return FakeApiClient::updateStatus(res, ns, obj);
  }
};

class BindJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const std::string name : {"d0", "d1"}) {
      api_.seed(resources::kExtendedResources, {{"apiVersion", kApiVersion},
                                                {"kind", "ExtendedResource"},
                                                {"metadata", {{"name", name}}},
                                                {"spec", {{"rawResourceName", "nvidia.com/gpu"}}}});
    }
    for (const std::string name : {"c1", "c2"}) {
      api_.seed(resources::kExtendedResourceClaims,
                {{"apiVersion", kApiVersion},
                 {"kind", "ExtendedResourceClaim"},
                 {"metadata", {{"name", name}, {"namespace", "default"}}},
                 {"spec", {{"rawResourceName", "nvidia.com/gpu"}}}});
    }
  }

  ExtendedResource device(const std::string& name) {
    return ExtendedResource::fromJson(*api_.peek(resources::kExtendedResources, "", name));
  }
  ExtendedResourceClaim claim(const std::string& name) {
    return ExtendedResourceClaim::fromJson(
        *api_.peek(resources::kExtendedResourceClaims, "default", name));
  }
  // The device given to the claim for pod p (or for `holders`), as the API stored it.
  ExtendedResource bindDevice(const std::string& name, const std::string& claimName,
                              std::vector<PodRef> holders = {{"p", "uid-p"}}) {
    const auto c = claim(claimName);
    ExtendedResource d = device(name);
    EXPECT_TRUE(ker::bindDevice(d, ClaimRef{"default", claimName, c.meta.uid}, c.allocation + 1,
                                std::move(holders))
                    .ok());
    return ExtendedResource::fromJson(api_.FakeApiClient::updateStatus(
        resources::kExtendedResources, "", d.toJson(SystemTime{})));
  }
  // The claim bound to pod p with devices, as the API stored it.
  ExtendedResourceClaim bindClaim(const std::string& name, std::vector<std::string> devices) {
    auto c = claim(name);
    c.phase = ClaimPhase::kBound;
    c.allocated = std::move(devices);
    c.podRef = PodRef{"p", "uid-p"};
    return ExtendedResourceClaim::fromJson(api_.FakeApiClient::updateStatus(
        resources::kExtendedResourceClaims, "default", c.toJson(SystemTime{})));
  }

  RecordingApi api_;
  DeviceIndex index_;
  BindJournal journal_{"uid-p"};
};

TEST_F(BindJournalTest, UndoPutsBackEveryClaimThenEveryDeviceNewestFirst) {
  journal_.deviceSent("d0", claim("c1").meta.uid);
  journal_.applied(bindDevice("d0", "c1"));
  journal_.claimSent(claim("c1"), {"d0"});
  journal_.applied(bindClaim("c1", {"d0"}));
  journal_.deviceSent("d1", claim("c2").meta.uid);
  journal_.applied(bindDevice("d1", "c2"));
  journal_.claimSent(claim("c2"), {"d1"});
  journal_.applied(bindClaim("c2", {"d1"}));
  EXPECT_EQ(journal_.devices().size(), 2u);

  EXPECT_EQ(journal_.undo(api_, index_, SystemTime{}), 4u);
  EXPECT_EQ(api_.statusWrites,
            (std::vector<std::string>{"extendedresourceclaims/c2", "extendedresourceclaims/c1",
                                      "extendedresources/d1", "extendedresources/d0"}));
  for (const std::string name : {"c1", "c2"}) {
    EXPECT_EQ(claim(name).phase, ClaimPhase::kPending) << name;
    EXPECT_FALSE(claim(name).podRef) << name;
  }
  for (const std::string name : {"d0", "d1"}) {
    EXPECT_EQ(device(name).phase, DevicePhase::kAvailable) << name;
    ASSERT_TRUE(index_.get(name)) << name;
    EXPECT_EQ(index_.get(name)->phase, DevicePhase::kAvailable) << name;
  }
}

// A bind's claim write counts the claim's allocations up, and its devices name that count: put
// back to Pending, the claim frees them by itself (freedByClaim), so the undo writes the claim
// alone and reads nothing.
TEST_F(BindJournalTest, DevicesTheClaimsUndoFreesAreNotWrittenAgain) {
  journal_.deviceSent("d0", claim("c1").meta.uid);
  journal_.applied(bindDevice("d0", "c1"));
  ExtendedResourceClaim bound = claim("c1");
  journal_.claimSent(bound, {"d0"});
  ASSERT_TRUE(ker::bindClaim(bound, PodRef{"p", "uid-p"}, "n1", {"d0"}).ok());
  journal_.applied(ExtendedResourceClaim::fromJson(api_.FakeApiClient::updateStatus(
      resources::kExtendedResourceClaims, "default", bound.toJson(SystemTime{}))));
  const int gets = api_.calls(Verb::kGet);

  EXPECT_EQ(journal_.undo(api_, index_, SystemTime{}), 1u);
  EXPECT_EQ(api_.statusWrites, (std::vector<std::string>{"extendedresourceclaims/c1"}));
  EXPECT_EQ(api_.calls(Verb::kGet), gets);
  const ExtendedResourceClaim undone = claim("c1");
  EXPECT_EQ(undone.phase, ClaimPhase::kPending);
  EXPECT_TRUE(offerable(device("d0"), allocationOf(undone))) << "freed through its claim";
}

// A write with no answer may have landed: the undo reads it back and puts it back if it did.
TEST_F(BindJournalTest, AnUnconfirmedWriteIsReadBackAndUndoneOnlyIfItLanded) {
  journal_.deviceSent("d0", claim("c1").meta.uid);
  bindDevice("d0", "c1");  // applied, the reply lost
  EXPECT_TRUE(journal_.devices().empty());
  EXPECT_EQ(journal_.undo(api_, index_, SystemTime{}), 1u);
  EXPECT_EQ(device("d0").phase, DevicePhase::kAvailable);

  BindJournal notLanded("uid-p");
  notLanded.claimSent(claim("c2"), {"d1"});
  const int gets = api_.calls(Verb::kGet);
  EXPECT_EQ(notLanded.undo(api_, index_, SystemTime{}), 0u);
  EXPECT_EQ(api_.calls(Verb::kGet), gets + 1);
}

// Pods p and q name claim c1, and two extender replicas bind them at once. q's bind takes d0;
// p's write of d0, unanswered, never landed (it would have conflicted). Read back, d0 names c1,
// but for q: it is not this call's write, and undoing it would free q's device.
TEST_F(BindJournalTest, AnotherPodsWriteThroughTheSameClaimIsNotTakenForThisCalls) {
  journal_.deviceSent("d0", claim("c1").meta.uid);
  bindDevice("d0", "c1", {{"q", "uid-q"}});
  EXPECT_EQ(journal_.undo(api_, index_, SystemTime{}), 0u);
  EXPECT_EQ(device("d0").phase, DevicePhase::kBound);
  EXPECT_EQ(device("d0").holders, (std::vector<PodRef>{{"q", "uid-q"}}));
}

// Two calls bind the same pod: the other one's device and claim writes land, this one's device
// write gets no answer. Read back, the device names the same claim; the claim holds it for the
// pod, so the undo leaves it (freeing it would give it to a second pod).
TEST_F(BindJournalTest, ADeviceTheClaimHoldsForThePodThroughAnotherCallIsKept) {
  journal_.deviceSent("d0", claim("c1").meta.uid);
  bindDevice("d0", "c1");
  bindClaim("c1", {"d0"});
  EXPECT_EQ(journal_.undo(api_, index_, SystemTime{}), 0u);
  EXPECT_EQ(device("d0").phase, DevicePhase::kBound);
  EXPECT_EQ(claim("c1").phase, ClaimPhase::kBound);
}

// Replica A binds p: its write of d0 is applied, its claim write lands without an answer.
// Replica B, leading now, finds c1 bound to p and rewrites it to bind p itself (reuseClaim),
// then binds p. Read back, c1 is bound to p with d0 as A wrote it, but B counted its rewrite:
// A's undo leaves c1 and d0 with p, where putting them back would free what p runs with.
TEST_F(BindJournalTest, AClaimAnotherCallRewroteForThePodIsNotTakenForThisCalls) {
  journal_.deviceSent("d0", claim("c1").meta.uid);
  journal_.applied(bindDevice("d0", "c1"));
  journal_.claimSent(claim("c1"), {"d0"});
  ExtendedResourceClaim landed = bindClaim("c1", {"d0"});
  ASSERT_TRUE(rewriteClaimBind(landed, "uid-p").ok());
  api_.FakeApiClient::updateStatus(resources::kExtendedResourceClaims, "default",
                                   landed.toJson(SystemTime{}));

  EXPECT_EQ(journal_.undo(api_, index_, SystemTime{}), 0u);
  EXPECT_EQ(claim("c1").phase, ClaimPhase::kBound);
  EXPECT_EQ(device("d0").phase, DevicePhase::kBound);

  // Without the rewrite the claim read back is this call's, and goes back with its device.
  BindJournal alone("uid-p");
  alone.deviceSent("d1", claim("c2").meta.uid);
  alone.applied(bindDevice("d1", "c2"));
  alone.claimSent(claim("c2"), {"d1"});
  bindClaim("c2", {"d1"});
  EXPECT_EQ(alone.undo(api_, index_, SystemTime{}), 2u);
  EXPECT_EQ(claim("c2").phase, ClaimPhase::kPending);
  EXPECT_EQ(device("d1").phase, DevicePhase::kAvailable);
}

TEST_F(BindJournalTest, ARefusedWriteIsForgotten) {
  journal_.claimSent(claim("c1"), {"d0"});
  journal_.refused();
  EXPECT_EQ(journal_.undo(api_, index_, SystemTime{}), 0u);
  EXPECT_EQ(api_.calls(Verb::kGet), 0);
  EXPECT_TRUE(api_.statusWrites.empty());
}

// A claim reused, its rewrite unanswered, keeps the device bound to it again.
TEST_F(BindJournalTest, AReusedClaimKeepsItsDevices) {
  bindClaim("c1", {"d0"});
  journal_.rebound(bindDevice("d0", "c1"));
  journal_.reuseSent(claim("c1").meta.uid);
  EXPECT_EQ(journal_.undo(api_, index_, SystemTime{}), 0u);
  EXPECT_EQ(device("d0").phase, DevicePhase::kBound);
  EXPECT_EQ(claim("c1").phase, ClaimPhase::kBound);
}

// Another call rewrote the claim after this attempt bound it: the claim's undo conflicts, and
// its device stays with it.
TEST_F(BindJournalTest, AClaimThatCannotBePutBackKeepsItsDevices) {
  journal_.deviceSent("d0", claim("c1").meta.uid);
  journal_.applied(bindDevice("d0", "c1"));
  journal_.claimSent(claim("c1"), {"d0"});
  journal_.applied(bindClaim("c1", {"d0"}));
  auto rewritten = claim("c1");
  rewritten.bindRewrites = 1;
  api_.FakeApiClient::updateStatus(resources::kExtendedResourceClaims, "default",
                                   rewritten.toJson(SystemTime{}));

  EXPECT_EQ(journal_.undo(api_, index_, SystemTime{}), 0u);
  EXPECT_EQ(claim("c1").phase, ClaimPhase::kBound);
  EXPECT_EQ(device("d0").phase, DevicePhase::kBound);
}

}  // namespace
}  // namespace ker

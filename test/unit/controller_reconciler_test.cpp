#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <regex>
#include <set>
#include <utility>

#include "common/api_error.h"
#include "controller/reconciler.h"
#include "fake_api_client.h"
#include "model/claim_transitions.h"
#include "model/device_transitions.h"
#include "model/objects.h"
#include "model/suitability.h"

namespace ker {
namespace {

using namespace std::chrono_literals;
using testing::FakeApiClient;
using json = nlohmann::json;

const SteadyTime kT0{std::chrono::hours(1000)};
const std::string kGpu = "nvidia.com/gpu";

// Fails the next `failDeviceWrites` status writes of devices only, so a release can get past
// its claim write and then fail on a device.
class FlakyApi : public FakeApiClient {
 public:
  json updateStatus(const Resource& res, const std::string& ns, const json& obj) override {
    if (res.plural == "extendedresources" && failDeviceWrites > 0) {
      --failDeviceWrites;
      throw ApiError(ApiErrorKind::kServerError, 500, "InternalError", "etcd hiccup");
    }
    json written = FakeApiClient::updateStatus(res, ns, obj);
    if (res.plural == "extendedresourceclaims" && afterClaimWrite) {
      std::exchange(afterClaimWrite, nullptr)();
    }
    return written;
  }
  std::atomic<int> failDeviceWrites{0};
  std::function<void()> afterClaimWrite;  // once, after the next claim status write
};

// The caches as plain maps, loaded from the fake API on demand so tests control the lag.
class MapCaches : public ControllerCaches {
 public:
  std::vector<CachedPod> pods() const override {
    std::vector<CachedPod> out;
    for (const auto& [k, p] : podMap) {
      out.push_back(p);
    }
    return out;
  }
  bool podDeleted(const std::string& uid) const override { return deletedPods.count(uid) > 0; }
  CachedTemplate claimTemplate(const std::string& key) const override {
    return find(templates, key);
  }
  CachedClaim watchedClaim(const std::string& key) const override { return find(claims, key); }
  CachedDevice watchedDevice(const std::string& name) const override { return find(devices, name); }
  CachedPod watchedPod(const std::string& key) const override { return find(podMap, key); }
  std::vector<CachedClaim> watchedClaimsListing(const std::string& device) const override {
    std::vector<CachedClaim> out;
    for (const auto& [key, c] : claims) {
      const auto listed = c->listedDevices();
      if (std::find(listed.begin(), listed.end(), device) != listed.end()) {
        out.push_back(c);
      }
    }
    return out;
  }

  void load(FakeApiClient& api) {
    claims.clear();
    devices.clear();
    podMap.clear();
    // Each list is held in a variable: iterating a temporary's member would dangle.
    const json claimList = api.list(resources::kExtendedResourceClaims, "", {});
    for (const auto& o : claimList["items"]) {
      auto c = std::make_shared<const ExtendedResourceClaim>(ExtendedResourceClaim::fromJson(o));
      claims[objectKey(c->meta.ns, c->meta.name)] = c;
    }
    const json deviceList = api.list(resources::kExtendedResources, "", {});
    for (const auto& o : deviceList["items"]) {
      auto d = std::make_shared<const ExtendedResource>(ExtendedResource::fromJson(o));
      devices[d->meta.name] = d;
    }
    const json podList = api.list(resources::kPods, "", {});
    for (const auto& o : podList["items"]) {
      auto p = std::make_shared<const WatchedPod>(WatchedPod::fromJson(o));
      podMap[objectKey(p->meta.ns, p->meta.name)] = p;
    }
  }

  std::map<std::string, CachedClaim> claims;
  std::map<std::string, CachedDevice> devices;
  std::map<std::string, CachedPod> podMap;
  std::map<std::string, CachedTemplate> templates;  // not reloaded by load()
  std::set<std::string> deletedPods;                // pod UIDs whose deletion the watch delivered

 private:
  template <class M>
  static typename M::mapped_type find(const M& m, const std::string& key) {
    auto it = m.find(key);
    return it == m.end() ? nullptr : it->second;
  }
};

json podJson(const std::string& name, const std::string& node,
             const std::string& phase = "Running") {
  json p = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name}, {"namespace", "default"}, {"annotations", {{kClaimsAnnotation, "c"}}}}},
      {"spec", {{"schedulerName", "extended-resource-scheduler"}}},
      {"status", {{"phase", phase}}}};
  if (!node.empty()) {
    p["spec"]["nodeName"] = node;
  }
  return p;
}

json deviceJson(const std::string& name) {
  static const json kOnN1 = json::parse(R"({"required": {"nodeSelectorTerms": [
      {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}})");
  return {
      {"apiVersion", kApiVersion},
      {"kind", "ExtendedResource"},
      {"metadata", {{"name", name}}},
      {"spec", {{"rawResourceName", kGpu}, {"deviceID", name + "-id"}, {"nodeAffinity", kOnN1}}},
      {"status", {{"phase", "Available"}}}};
}

class ReconcilerTest : public ::testing::Test {
 protected:
  ReconcilerTest() {
    events.start();
    ReconcilerOptions o;
    o.orphanGrace = 2min;
    o.clock = [this] { return now; };
    reconciler = std::make_unique<Reconciler>(api, caches, executor, &metrics, o);
  }

  // Pod p on n1 holding claim c, which holds d0 and d1; d2 is free. Caches loaded.
  void seedBoundCluster(const std::string& podPhase = "Running", const std::string& node = "n1") {
    podUid = api.seed(resources::kPods, podJson("p", node, podPhase))["metadata"]["uid"];
    json c = {{"apiVersion", kApiVersion},
              {"kind", "ExtendedResourceClaim"},
              {"metadata", {{"name", "c"}, {"namespace", "default"}}},
              {"spec", {{"rawResourceName", kGpu}, {"extendedResourceNum", 2}}},
              {"status",
               {{"phase", "Bound"},
                {"extendedResourceNames", {"d0", "d1"}},
                {"nodeName", node.empty() ? "n1" : node},
                {"podRef", {{"name", "p"}, {"uid", podUid}}}}}};
    claimUid = api.seed(resources::kExtendedResourceClaims, c)["metadata"]["uid"];
    for (const char* name : {"d0", "d1"}) {
      seedBoundDevice(name);
    }
    api.seed(resources::kExtendedResources, deviceJson("d2"));
    caches.load(api);
  }

  void seedBoundDevice(const std::string& name) {
    json d = deviceJson(name);
    d["status"] = {{"phase", "Bound"},
                   {"claimRef", {{"namespace", "default"}, {"name", "c"}, {"uid", claimUid}}}};
    api.seed(resources::kExtendedResources, d);
  }

  // Claim c made shareable, held by these pods (status.holders instead of podRef).
  void shareWithHolders(const json& holders) {
    auto c = claim();
    c["spec"]["shareable"] = true;
    c = api.update(resources::kExtendedResourceClaims, "default", c);
    c["status"].erase("podRef");
    c["status"]["holders"] = holders;
    api.updateStatus(resources::kExtendedResourceClaims, "default", c);
  }

  // Pod p deleted, and the caches loaded with the watch's delete event seen.
  void deletePodSeenByTheWatch() {
    api.remove(resources::kPods, "default", "p");
    caches.load(api);
    caches.deletedPods.insert(podUid);
  }

  // seedBoundCluster, then c Lost with d0 left and d1 and "gone" lost; d1 is Bound to it
  // again, not yet taken back.
  void seedLostClaimWithD1Back() {
    seedBoundCluster();
    auto c = claim();
    c["status"]["phase"] = "Lost";
    c["status"]["extendedResourceNames"] = {"d0"};
    c["status"]["lostExtendedResourceNames"] = {"d1", "gone"};
    api.updateStatus(resources::kExtendedResourceClaims, "default", c);
  }

  // A Pending claim c with nothing allocated, and device d0 Bound to it: a bind in flight.
  void seedMidBind() {
    json c = {{"apiVersion", kApiVersion},
              {"kind", "ExtendedResourceClaim"},
              {"metadata", {{"name", "c"}, {"namespace", "default"}}},
              {"spec", {{"rawResourceName", kGpu}}}};
    claimUid = api.seed(resources::kExtendedResourceClaims, c)["metadata"]["uid"];
    seedBoundDevice("d0");
    caches.load(api);
  }

  json claim() { return api.peek(resources::kExtendedResourceClaims, "default", "c").value(); }
  json device(const std::string& name) {
    return api.peek(resources::kExtendedResources, "", name).value();
  }

  void expectReleased() {
    auto s = claim()["status"];
    EXPECT_EQ(s["phase"], "Pending");
    EXPECT_FALSE(s.contains("extendedResourceNames"));
    EXPECT_FALSE(s.contains("nodeName"));
    EXPECT_FALSE(s.contains("podRef"));
    EXPECT_EQ(s["reason"], "Released");
    for (const char* name : {"d0", "d1"}) {
      EXPECT_EQ(device(name)["status"]["phase"], "Available") << name;
      EXPECT_FALSE(device(name)["status"].contains("claimRef")) << name;
    }
  }

  // Events are written asynchronously: both the snapshot and the comparison wait for the
  // recorder, so an event of an earlier step never looks like a write of a later one.
  std::string settledResourceVersion() {
    EXPECT_TRUE(events.flush(5s));
    return api.resourceVersion();
  }

  void expectUntouched(const std::string& rvBefore) {
    EXPECT_EQ(settledResourceVersion(), rvBefore) << "nothing may be written";
  }

  std::vector<json> eventsFor(const std::string& kind) {
    EXPECT_TRUE(events.flush(5s));
    std::vector<json> out;
    const json list = api.list(resources::kEvents, "default", {});
    for (const auto& e : list["items"]) {
      if (e["involvedObject"]["kind"] == kind) {
        out.push_back(e);
      }
    }
    return out;
  }

  double counter(metrics::CounterFamily& f, std::vector<std::string> labels) {
    return f.labels(labels).value();
  }

  FlakyApi api;
  MapCaches caches;
  metrics::Registry registry;
  ControllerMetrics metrics{registry};
  EventRecorder events{api, {}};
  std::atomic<bool> leader{true};
  Executor executor{api, &events, &metrics, [this] { return leader.load(); }};
  SteadyTime now = kT0;
  std::unique_ptr<Reconciler> reconciler;
  std::string podUid;
  std::string claimUid;
};

using Status = ReconcileResult::Status;

TEST_F(ReconcilerTest, ConsistentClusterIsLeftAsIs) {
  seedBoundCluster();
  const auto rv = settledResourceVersion();
  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  for (const char* d : {"d0", "d1", "d2"}) {
    EXPECT_EQ(reconciler->reconcileDevice(d).status, Status::kDone);
  }
  expectUntouched(rv);
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kGet), 0) << "a consistent cache needs no live read";
}

TEST_F(ReconcilerTest, DeletedPodReleasesTheClaimAndFreesItsDevices) {
  seedBoundCluster();
  api.remove(resources::kPods, "default", "p");
  caches.load(api);
  auto r = reconciler->reconcileClaim("default/c");
  EXPECT_EQ(r.status, Status::kDone) << r.error;
  EXPECT_TRUE(r.devicesToRetry.empty());
  expectReleased();
  EXPECT_EQ(device("d0")["status"]["reason"], "Released");
  EXPECT_EQ(counter(metrics.releases, {"PodDeleted"}), 1);
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kGet), 1) << "one live GET confirms the pod is gone";

  auto claimEvents = eventsFor("ExtendedResourceClaim");
  ASSERT_EQ(claimEvents.size(), 1u);
  EXPECT_EQ(claimEvents[0]["reason"], "Released");
  auto podEvents = eventsFor("Pod");
  ASSERT_EQ(podEvents.size(), 1u) << "the deleted holder gets one too";
  EXPECT_EQ(podEvents[0]["reason"], "ClaimReleased");
  EXPECT_EQ(podEvents[0]["involvedObject"]["name"], "p");
  EXPECT_EQ(podEvents[0]["involvedObject"]["uid"], podUid);
}

// Bound by a bind that counted (status.allocation on the claim and its devices): the release
// writes the claim alone, which frees the devices for every bind; each device's own reconcile
// writes it Available once the delay has passed.
TEST_F(ReconcilerTest, ACountedReleaseWritesTheClaimAloneAndTheDevicesLater) {
  seedBoundCluster();
  auto c = claim();
  c["status"]["allocation"] = 3;
  api.updateStatus(resources::kExtendedResourceClaims, "default", c);
  for (const char* name : {"d0", "d1"}) {
    auto d = device(name);
    d["status"]["allocation"] = 3;
    api.updateStatus(resources::kExtendedResources, "", d);
  }
  api.remove(resources::kPods, "default", "p");
  caches.load(api);
  const auto before = api.calls(FakeApiClient::Verb::kUpdateStatus);
  auto r = reconciler->reconcileClaim("default/c");
  EXPECT_EQ(r.status, Status::kDone) << r.error;
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kUpdateStatus) - before, 1) << "the claim only";
  EXPECT_EQ(claim()["status"]["phase"], "Pending");
  EXPECT_EQ(claim()["status"]["allocation"], 3) << "a release keeps the count";
  caches.load(api);
  for (const char* name : {"d0", "d1"}) {
    EXPECT_EQ(device(name)["status"]["phase"], "Bound") << name;
    EXPECT_TRUE(freedByClaim(ExtendedResource::fromJson(device(name)),
                             allocationOf(ExtendedResourceClaim::fromJson(claim()))));
    r = reconciler->reconcileDevice(name);
    EXPECT_EQ(r.status, Status::kDone) << r.error;
    EXPECT_TRUE(r.requeueAfter) << "waits out the delay";
  }
  now += ReconcilerOptions{}.freedDeviceWriteDelay;
  for (const char* name : {"d0", "d1"}) {
    r = reconciler->reconcileDevice(name);
    EXPECT_EQ(r.status, Status::kDone) << r.error;
  }
  expectReleased();
  EXPECT_EQ(device("d0")["status"]["reason"], "Released");
  EXPECT_EQ(device("d0")["status"]["releasedFrom"]["uid"], claimUid);
  EXPECT_FALSE(device("d0")["status"].contains("allocation"));
}

TEST_F(ReconcilerTest, ASharedClaimLosesOnlyTheHolderThatWentUntilTheLastGoes) {
  seedBoundCluster();
  const std::string qUid =
      api.seed(resources::kPods, podJson("q", "n1", "Running"))["metadata"]["uid"];
  auto c = claim();
  c["spec"]["shareable"] = true;
  c = api.update(resources::kExtendedResourceClaims, "default", c);
  c["status"].erase("podRef");
  c["status"]["holders"] = {{{"name", "p"}, {"uid", podUid}}, {{"name", "q"}, {"uid", qUid}}};
  api.updateStatus(resources::kExtendedResourceClaims, "default", c);
  api.remove(resources::kPods, "default", "p");
  caches.load(api);

  auto r = reconciler->reconcileClaim("default/c");
  EXPECT_EQ(r.status, Status::kDone) << r.error;
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kGet), 1) << "only the missing holder is read live";
  auto s = claim()["status"];
  EXPECT_EQ(s["phase"], "Bound");
  EXPECT_EQ(s["holders"], json::parse(R"([{"name": "q", "uid": ")" + qUid + R"("}])"));
  for (const char* name : {"d0", "d1"}) {
    EXPECT_EQ(device(name)["status"]["phase"], "Bound") << name;
  }
  EXPECT_EQ(counter(metrics.releases, {"PodDeleted"}), 1);

  api.remove(resources::kPods, "default", "q");
  caches.load(api);
  r = reconciler->reconcileClaim("default/c");
  EXPECT_EQ(r.status, Status::kDone) << r.error;
  expectReleased();
  EXPECT_FALSE(claim()["status"].contains("holders"));
}

// A shared claim released as the cache shows it (p, its one holder, gone) while q joined: q's
// device write came first, and the claim was deleted before the release's write. Nothing but
// the devices' own holders guards the frees then: d0, naming q, stays Bound for q (its own
// reconcile waits for q); d1, naming only p, is freed.
TEST_F(ReconcilerTest, ADeviceOfADeletedClaimNamingAPodThatJoinedIsNotFreed) {
  seedBoundCluster();
  shareWithHolders({{{"name", "p"}, {"uid", podUid}}});
  const std::string qUid =
      api.seed(resources::kPods, podJson("q", "n1", "Running"))["metadata"]["uid"];
  for (const auto& [name, holders] :
       {std::pair<std::string, json>{
            "d0", {{{"name", "p"}, {"uid", podUid}}, {{"name", "q"}, {"uid", qUid}}}},
        {"d1", {{{"name", "p"}, {"uid", podUid}}}}}) {
    auto d = device(name);
    d["status"]["holders"] = holders;
    api.updateStatus(resources::kExtendedResources, "", d);
  }
  deletePodSeenByTheWatch();
  api.remove(resources::kExtendedResourceClaims, "default", "c");

  auto r = reconciler->reconcileClaim("default/c");
  EXPECT_EQ(r.status, Status::kDone) << r.error;
  EXPECT_EQ(device("d0")["status"]["phase"], "Bound") << "freed under q, which still runs";
  EXPECT_EQ(device("d1")["status"]["phase"], "Available");
}

// The claim is written Pending, and before its devices are freed a new pod's bind takes the
// claim again with d0 (same claim UID, the new pod its holder): the free of d0 leaves it to the
// new holder, and d1, naming no one but the released pod, is freed.
TEST_F(ReconcilerTest, ADeviceBoundAgainBetweenTheReleaseAndItsFreeIsNotFreed) {
  seedBoundCluster();
  for (const char* name : {"d0", "d1"}) {
    auto d = device(name);
    d["status"]["holders"] = {{{"name", "p"}, {"uid", podUid}}};
    api.updateStatus(resources::kExtendedResources, "", d);
  }
  const std::string p2Uid =
      api.seed(resources::kPods, podJson("p2", "n1", "Pending"))["metadata"]["uid"];
  deletePodSeenByTheWatch();
  api.afterClaimWrite = [&] {
    auto d = device("d0");
    d["status"]["holders"] = {{{"name", "p2"}, {"uid", p2Uid}}};
    // The watch may already show the new bind when the free comes to d0.
    caches.devices["d0"] = std::make_shared<const ExtendedResource>(
        ExtendedResource::fromJson(api.updateStatus(resources::kExtendedResources, "", d)));
  };

  auto r = reconciler->reconcileClaim("default/c");
  EXPECT_EQ(r.status, Status::kDone) << r.error;
  EXPECT_EQ(claim()["status"]["phase"], "Pending");
  EXPECT_EQ(device("d0")["status"]["phase"], "Bound") << "p2's now";
  EXPECT_EQ(device("d1")["status"]["phase"], "Available");
}

// A shared claim's devices keep every pod that joined (joinDevice), also those that left the
// claim since: when the last holder goes, the devices are freed with the claim, not left for the
// orphan grace.
TEST_F(ReconcilerTest, ASharedClaimsDevicesNamingPodsThatLeftEarlierAreFreedWithIt) {
  seedBoundCluster();
  shareWithHolders({{{"name", "p"}, {"uid", podUid}}});
  for (const char* name : {"d0", "d1"}) {
    auto d = device(name);
    d["status"]["holders"] = {{{"name", "left-1"}, {"uid", "uid-left-1"}},
                              {{"name", "p"}, {"uid", podUid}},
                              {{"name", "left-2"}, {"uid", "uid-left-2"}}};
    api.updateStatus(resources::kExtendedResources, "", d);
  }
  deletePodSeenByTheWatch();

  auto r = reconciler->reconcileClaim("default/c");
  EXPECT_EQ(r.status, Status::kDone) << r.error;
  expectReleased();
}

TEST_F(ReconcilerTest, PodDeletionSeenByTheWatchNeedsNoLiveRead) {
  seedBoundCluster();
  deletePodSeenByTheWatch();
  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  expectReleased();
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kGet), 0);
  EXPECT_EQ(counter(metrics.releases, {"PodDeleted"}), 1);
}

TEST_F(ReconcilerTest, DeletionOfAnotherPodUidStillNeedsALiveRead) {
  seedBoundCluster();
  caches.podMap.clear();
  caches.deletedPods.insert("uid-of-some-other-pod");
  const auto rv = settledResourceVersion();
  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  expectUntouched(rv);
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kGet), 1);
}

TEST_F(ReconcilerTest, ClaimDeletedWithItsPodIsDoneAndItsDevicesAreFreed) {
  seedBoundCluster();
  api.remove(resources::kPods, "default", "p");
  caches.load(api);
  api.remove(resources::kExtendedResourceClaims, "default", "c");  // the cache still has it
  auto r = reconciler->reconcileClaim("default/c");
  EXPECT_EQ(r.status, Status::kDone) << r.error;
  EXPECT_TRUE(r.devicesToRetry.empty());
  EXPECT_FALSE(r.requeueAfter);
  for (const char* name : {"d0", "d1"}) {
    EXPECT_EQ(device(name)["status"]["phase"], "Available") << name;
    EXPECT_FALSE(device(name)["status"].contains("claimRef")) << name;
    EXPECT_EQ(device(name)["status"]["reason"], "Orphaned") << name;
  }
  EXPECT_EQ(counter(metrics.releases, {"PodDeleted"}), 0) << "nothing was released";
  EXPECT_TRUE(eventsFor("ExtendedResourceClaim").empty());
  EXPECT_EQ(reconciler->remembered(), 0u);
}

TEST_F(ReconcilerTest, ClaimDeletedBeforeItCouldBeMarkedLostIsDone) {
  seedBoundCluster();
  api.remove(resources::kExtendedResources, "", "d1");
  caches.load(api);
  api.remove(resources::kExtendedResourceClaims, "default", "c");
  auto r = reconciler->reconcileClaim("default/c");
  EXPECT_EQ(r.status, Status::kDone) << r.error;
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kUpdateStatus), 1) << "one attempt, no retry";
}

TEST_F(ReconcilerTest, DeviceDeletedBeforeItsStatusWasWrittenIsDone) {
  json d = deviceJson("fresh");
  d.erase("status");
  api.seed(resources::kExtendedResources, d);
  caches.load(api);
  api.remove(resources::kExtendedResources, "", "fresh");
  EXPECT_EQ(reconciler->reconcileDevice("fresh").status, Status::kDone);
}

TEST_F(ReconcilerTest, ReleaseIsIdempotent) {
  seedBoundCluster();
  api.remove(resources::kPods, "default", "p");
  caches.load(api);
  reconciler->reconcileClaim("default/c");
  caches.load(api);
  const auto rv = settledResourceVersion();
  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  for (const char* d : {"d0", "d1"}) {
    EXPECT_EQ(reconciler->reconcileDevice(d).status, Status::kDone);
  }
  expectUntouched(rv);
}

TEST_F(ReconcilerTest, AReleaseTheCacheDoesNotShowYetIsNotDecidedAgain) {
  seedBoundCluster();
  api.remove(resources::kPods, "default", "p");
  caches.load(api);
  ASSERT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  expectReleased();
  // The caches still show the claim and its devices Bound to the deleted pod.
  const auto rv = settledResourceVersion();
  const int reads = api.calls(FakeApiClient::Verb::kGet);
  auto r = reconciler->reconcileClaim("default/c");
  EXPECT_EQ(r.status, Status::kDone) << r.error;
  for (const char* d : {"d0", "d1"}) {
    r = reconciler->reconcileDevice(d);
    EXPECT_EQ(r.status, Status::kDone) << d << ": " << r.error;
  }
  expectUntouched(rv);
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kGet), reads) << "decided on the writes, not read again";
  EXPECT_EQ(caches.assumed(), 3u);
  caches.load(api);  // the watch catches up
  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  for (const char* d : {"d0", "d1"}) {
    EXPECT_EQ(reconciler->reconcileDevice(d).status, Status::kDone);
  }
  EXPECT_EQ(caches.assumed(), 0u);
  expectUntouched(rv);
}

TEST_F(ReconcilerTest, APodsClaimsRecordTheCacheDoesNotShowYetIsNotWrittenAgain) {
  caches.templates["default/gpu-tmpl"] =
      std::make_shared<const ExtendedResourceClaimTemplate>(ExtendedResourceClaimTemplate::fromJson(
          json{{"metadata", {{"name", "gpu-tmpl"}, {"namespace", "default"}}},
               {"spec", {{"spec", {{"rawResourceName", kGpu}}}}}}));
  json pod = podJson("w", "", "Pending");
  pod["metadata"]["annotations"] = {{kClaimTemplatesAnnotation, "gpu=gpu-tmpl"}};
  api.seed(resources::kPods, pod);
  caches.load(api);
  auto r = reconciler->reconcilePod("default/w");
  ASSERT_EQ(r.status, Status::kDone) << r.error;
  const auto recorded =
      api.peek(resources::kPods, "default", "w").value()["metadata"]["annotations"];
  ASSERT_TRUE(recorded.contains(kGeneratedClaimsAnnotation)) << recorded;
  // The caches show neither the claim nor the record: a sync of the pod from its older copy.
  const auto rv = settledResourceVersion();
  const int creates = api.calls(FakeApiClient::Verb::kCreate);
  const int patches = api.calls(FakeApiClient::Verb::kPatch);
  r = reconciler->reconcilePod("default/w");
  EXPECT_EQ(r.status, Status::kDone) << r.error;
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kCreate), creates);
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kPatch), patches);
  expectUntouched(rv);
}

TEST_F(ReconcilerTest, PodMissingOnlyFromTheCacheKeepsItsClaim) {
  seedBoundCluster();
  caches.podMap.clear();
  const auto rv = settledResourceVersion();
  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  expectUntouched(rv);
  EXPECT_EQ(counter(metrics.releases, {"PodDeleted"}), 0);
  EXPECT_EQ(metrics.liveReads.value(), 1);
}

TEST_F(ReconcilerTest, RecreatedPodWithTheSameNameDoesNotHoldTheClaim) {
  seedBoundCluster();
  api.remove(resources::kPods, "default", "p");
  api.seed(resources::kPods, podJson("p", "n2"));
  caches.load(api);
  reconciler->reconcileClaim("default/c");
  expectReleased();
  EXPECT_EQ(counter(metrics.releases, {"PodReplaced"}), 1);
}

TEST_F(ReconcilerTest, StaleCacheShowingAnotherPodDefersToTheLiveHolder) {
  seedBoundCluster();
  json old = podJson("p", "n2");
  old["metadata"]["uid"] = "uid-of-an-older-pod";
  caches.podMap["default/p"] = std::make_shared<const WatchedPod>(WatchedPod::fromJson(old));
  const auto rv = settledResourceVersion();
  reconciler->reconcileClaim("default/c");
  expectUntouched(rv);
}

TEST_F(ReconcilerTest, FinishedPodReleasesWithoutALiveRead) {
  seedBoundCluster("Succeeded");
  reconciler->reconcileClaim("default/c");
  expectReleased();
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kGet), 0);
  EXPECT_EQ(counter(metrics.releases, {"PodFinished"}), 1);
}

TEST_F(ReconcilerTest, TerminatingPodKeepsItsClaim) {
  seedBoundCluster();
  auto p = api.peek(resources::kPods, "default", "p").value();
  p["metadata"]["finalizers"] = {"example.com/hold"};
  api.update(resources::kPods, "default", p);
  api.remove(resources::kPods, "default", "p");
  caches.load(api);
  ASSERT_TRUE(caches.podMap["default/p"]->meta.deleting);
  const auto rv = settledResourceVersion();
  reconciler->reconcileClaim("default/c");
  expectUntouched(rv);
}

TEST_F(ReconcilerTest, LiveReadFailureRetriesWithoutWriting) {
  seedBoundCluster();
  caches.podMap.clear();
  api.failNext(FakeApiClient::Verb::kGet,
               ApiError(ApiErrorKind::kTransport, 0, "", "connection reset"));
  const auto rv = settledResourceVersion();
  auto r = reconciler->reconcileClaim("default/c");
  EXPECT_EQ(r.status, Status::kRetry);
  EXPECT_FALSE(r.error.isConflict());
  expectUntouched(rv);
}

TEST_F(ReconcilerTest, ConflictOnTheClaimIsRetriedOnFreshState) {
  seedBoundCluster();
  api.remove(resources::kPods, "default", "p");
  caches.load(api);
  auto c = claim();
  c["status"]["message"] = "touched by someone else";
  api.updateStatus(resources::kExtendedResourceClaims, "default", c);  // the cache is stale now

  auto r = reconciler->reconcileClaim("default/c");
  EXPECT_EQ(r.status, Status::kRetry);
  EXPECT_TRUE(r.error.isConflict());
  EXPECT_EQ(device("d0")["status"]["phase"], "Bound") << "devices wait for the claim";

  caches.load(api);
  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  expectReleased();
}

TEST_F(ReconcilerTest, ReleaseKeepsFieldsItDoesNotOwn) {
  seedBoundCluster();
  auto c = claim();
  c["status"]["futureField"] = "keep me";
  api.updateStatus(resources::kExtendedResourceClaims, "default", c);
  auto d = device("d0");
  d["status"]["health"] = "ok";
  api.updateStatus(resources::kExtendedResources, "", d);
  const json spec = claim()["spec"];
  api.remove(resources::kPods, "default", "p");
  caches.load(api);
  reconciler->reconcileClaim("default/c");
  expectReleased();
  EXPECT_EQ(claim()["status"]["futureField"], "keep me");
  EXPECT_EQ(claim()["spec"], spec);
  EXPECT_EQ(device("d0")["status"]["health"], "ok");
}

TEST_F(ReconcilerTest, ConflictingDeviceWriteDuringReleaseIsRetriedOnALiveRead) {
  seedBoundCluster();
  api.remove(resources::kPods, "default", "p");
  caches.load(api);
  auto d = device("d0");
  d["status"]["message"] = "health check";
  api.updateStatus(resources::kExtendedResources, "", d);  // d0 is stale in the cache now
  auto r = reconciler->reconcileClaim("default/c");
  EXPECT_EQ(r.status, Status::kDone);
  EXPECT_TRUE(r.devicesToRetry.empty());
  expectReleased();
}

TEST_F(ReconcilerTest, DeviceBoundAfterTheCacheWasFilledIsFreedToo) {
  seedBoundCluster();
  api.remove(resources::kPods, "default", "p");
  caches.load(api);
  // The cache missed the extender's write of d1: the release reads it live.
  auto stale = device("d1");
  stale["status"] = {{"phase", "Available"}};
  caches.devices["d1"] =
      std::make_shared<const ExtendedResource>(ExtendedResource::fromJson(stale));
  reconciler->reconcileClaim("default/c");
  expectReleased();
}

TEST_F(ReconcilerTest, DeviceLeftBoundByAFailedWriteIsFreedWithoutGrace) {
  seedBoundCluster();
  api.remove(resources::kPods, "default", "p");
  caches.load(api);
  api.failDeviceWrites = 1;
  auto r = reconciler->reconcileClaim("default/c");
  EXPECT_EQ(r.status, Status::kDone);
  EXPECT_EQ(r.devicesToRetry, std::vector<std::string>{"d0"});
  EXPECT_EQ(claim()["status"]["phase"], "Pending");
  EXPECT_EQ(device("d0")["status"]["phase"], "Bound");
  EXPECT_EQ(device("d1")["status"]["phase"], "Available");

  caches.load(api);
  r = reconciler->reconcileDevice("d0");
  EXPECT_EQ(r.status, Status::kDone);
  EXPECT_FALSE(r.requeueAfter) << "no grace: this controller released its claim";
  expectReleased();
  EXPECT_EQ(reconciler->remembered(), 0u);
}

// The claim write landed but its reply was lost (or leadership ended right after it): the
// devices it left Bound to the released claim are freed at once, not after the grace.
TEST_F(ReconcilerTest, DevicesOfAReleaseCutShortAfterItsClaimWriteAreFreedWithoutGrace) {
  seedBoundCluster();
  api.remove(resources::kPods, "default", "p");
  caches.load(api);
  api.loseNextStatusReplies(resources::kExtendedResourceClaims);
  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kRetry);
  EXPECT_EQ(claim()["status"]["phase"], "Pending");
  EXPECT_EQ(device("d0")["status"]["phase"], "Bound");

  caches.load(api);
  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  for (const char* name : {"d0", "d1"}) {
    const auto r = reconciler->reconcileDevice(name);
    EXPECT_EQ(r.status, Status::kDone);
    EXPECT_FALSE(r.requeueAfter) << name << ": no grace, this controller released its claim";
  }
  expectReleased();
  caches.load(api);
  for (const char* name : {"d0", "d1"}) {
    reconciler->reconcileDevice(name);
  }
  EXPECT_EQ(reconciler->remembered(), 0u);
}

// The failed free's reply was lost after it landed, and a bind for a new pod took the device
// again for the same, reused claim: the device is Bound to that claim's UID once more but not
// yet listed by it. It is mid-bind, so it waits out the grace like any other.
TEST_F(ReconcilerTest, ADeviceWrittenAgainAfterAFailedFreeWaitsOutTheGrace) {
  seedBoundCluster();
  api.remove(resources::kPods, "default", "p");
  caches.load(api);
  api.failDeviceWrites = 1;
  ASSERT_EQ(reconciler->reconcileClaim("default/c").devicesToRetry, std::vector<std::string>{"d0"});
  auto d0 = device("d0");
  d0["status"]["message"] = "taken again by a bind for claim c";
  api.updateStatus(resources::kExtendedResources, "", d0);

  caches.load(api);
  const auto r = reconciler->reconcileDevice("d0");
  EXPECT_EQ(r.status, Status::kDone);
  EXPECT_TRUE(r.requeueAfter) << "within the grace period";
  EXPECT_EQ(device("d0")["status"]["phase"], "Bound");
  EXPECT_EQ(device("d0")["status"]["claimRef"]["uid"], claim()["metadata"]["uid"]);
}

// Its pod still runs and may use it: set Available by hand, it goes back to the claim.
TEST_F(ReconcilerTest, DeviceSetAvailableByHandUnderARunningPodIsBoundBack) {
  seedBoundCluster();
  for (bool keepRef : {true, false}) {
    auto d0 = device("d0");
    d0["status"]["phase"] = "Available";
    if (!keepRef) {
      d0["status"].erase("claimRef");
    }
    api.updateStatus(resources::kExtendedResources, "", d0);
    caches.load(api);
    EXPECT_EQ(reconciler->reconcileDevice("d0").requeueAfter, ReconcilerOptions{}.rebindDelay);
    EXPECT_EQ(device("d0")["status"]["phase"], "Available") << "a bind in flight looks the same";
    now += ReconcilerOptions{}.rebindDelay;
    EXPECT_EQ(reconciler->reconcileDevice("d0").status, Status::kDone);
    EXPECT_EQ(device("d0")["status"]["phase"], "Bound") << keepRef;
    EXPECT_EQ(device("d0")["status"]["claimRef"]["uid"], claimUid);
    caches.load(api);
    const auto rv = settledResourceVersion();
    reconciler->reconcileClaim("default/c");
    expectUntouched(rv);
  }
}

// Released first: a claimRef naming a claim that no longer lists the device is cleared.
TEST_F(ReconcilerTest, DeviceSetAvailableByHandAfterItsReleaseLosesItsClaimRef) {
  seedBoundCluster();
  auto c = claim();
  c["status"] = {{"phase", "Pending"}};
  api.updateStatus(resources::kExtendedResourceClaims, "default", c);
  auto d0 = device("d0");
  d0["status"]["phase"] = "Available";
  api.updateStatus(resources::kExtendedResources, "", d0);
  caches.load(api);
  EXPECT_EQ(reconciler->reconcileDevice("d0").status, Status::kDone);
  EXPECT_EQ(device("d0")["status"]["phase"], "Available");
  EXPECT_FALSE(device("d0")["status"].contains("claimRef"));
}

TEST_F(ReconcilerTest, ALostClaimListsEveryLostDeviceAndItsMessageNamesThem) {
  seedBoundCluster();
  auto c = claim();
  c["status"]["extendedResourceNames"] = {"d0", "d1", "x1", "x2", "x3", "x4"};
  api.updateStatus(resources::kExtendedResourceClaims, "default", c);
  caches.load(api);
  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  EXPECT_EQ(claim()["status"]["reason"], "ExtendedResourceLost");
  EXPECT_EQ(claim()["status"]["lostExtendedResourceNames"], json({"x1", "x2", "x3", "x4"}));
  EXPECT_NE(claim()["status"]["message"].get<std::string>().find("x1, x2, x3, x4 were deleted"),
            std::string::npos)
      << claim()["status"]["message"];
}

TEST_F(ReconcilerTest, DeletedDeviceMarksTheClaimLost) {
  seedBoundCluster();
  api.remove(resources::kExtendedResources, "", "d1");
  caches.load(api);
  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  auto s = claim()["status"];
  EXPECT_EQ(s["phase"], "Lost");
  EXPECT_EQ(s["extendedResourceNames"], json({"d0"}));
  EXPECT_EQ(s["podRef"]["uid"], podUid) << "the pod still holds what is left";
  EXPECT_EQ(s["reason"], "ExtendedResourceLost");
  EXPECT_EQ(s["lostExtendedResourceNames"], json({"d1"}));
  EXPECT_NE(s["message"].get<std::string>().find("d1 was deleted"), std::string::npos);
  EXPECT_EQ(device("d0")["status"]["phase"], "Bound");
  auto lost = eventsFor("ExtendedResourceClaim");
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0]["reason"], "Lost");
  EXPECT_EQ(lost[0]["type"], "Warning");

  // Once the pod goes, what is left is released.
  api.remove(resources::kPods, "default", "p");
  caches.load(api);
  reconciler->reconcileClaim("default/c");
  EXPECT_EQ(claim()["status"]["phase"], "Pending");
  EXPECT_EQ(device("d0")["status"]["phase"], "Available");
}

// The same device back under its name while the pod still runs (re-registered, say): it goes
// back to the claim, never to a second pod, and the claim is whole again.
TEST_F(ReconcilerTest, DeletedDeviceRecreatedGoesBackToItsLostClaim) {
  seedBoundCluster();
  api.remove(resources::kExtendedResources, "", "d1");
  caches.load(api);
  reconciler->reconcileClaim("default/c");
  EXPECT_EQ(claim()["status"]["lostExtendedResourceNames"], json({"d1"}));

  json recreated = deviceJson("d1");
  recreated.erase("status");
  api.seed(resources::kExtendedResources, recreated);
  caches.load(api);
  // It waits a moment first: a bind in flight shows the same state until the device's event.
  const auto before = settledResourceVersion();
  const ReconcileResult waiting = reconciler->reconcileDevice("d1");
  EXPECT_EQ(waiting.status, Status::kDone);
  EXPECT_EQ(waiting.requeueAfter, ReconcilerOptions{}.rebindDelay);
  expectUntouched(before);
  now += ReconcilerOptions{}.rebindDelay;
  EXPECT_EQ(reconciler->reconcileDevice("d1").status, Status::kDone);
  auto d1 = device("d1")["status"];
  EXPECT_EQ(d1["phase"], "Bound");
  EXPECT_EQ(d1["claimRef"], json({{"namespace", "default"}, {"name", "c"}, {"uid", claimUid}}));
  EXPECT_EQ(d1["reason"], "Rebound");

  caches.load(api);
  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  auto s = claim()["status"];
  EXPECT_EQ(s["phase"], "Bound");
  EXPECT_EQ(s["extendedResourceNames"], json({"d0", "d1"}));
  EXPECT_FALSE(s.contains("lostExtendedResourceNames"));
  EXPECT_EQ(s["reason"], "Recovered");
  EXPECT_EQ(s["podRef"]["uid"], podUid);
  auto events = eventsFor("ExtendedResourceClaim");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1]["reason"], "Recovered");
  auto podEvents = eventsFor("Pod");
  ASSERT_EQ(podEvents.size(), 2u);
  EXPECT_EQ(podEvents[1]["reason"], "ClaimRecovered");
  EXPECT_EQ(podEvents[1]["involvedObject"]["uid"], podUid);
  EXPECT_EQ(counter(metrics.repairs, {"device_rebound"}), 1);
  EXPECT_EQ(counter(metrics.repairs, {"claim_recovered"}), 1);
  const auto rv = settledResourceVersion();
  caches.load(api);
  reconciler->reconcileClaim("default/c");
  reconciler->reconcileDevice("d1");
  expectUntouched(rv);
}

// Recreated before the controller saw it gone: bound back after the rebind delay, the claim
// never Lost.
TEST_F(ReconcilerTest, DeviceRecreatedUnderABoundClaimIsBoundBackToIt) {
  seedBoundCluster();
  api.remove(resources::kExtendedResources, "", "d1");
  json recreated = deviceJson("d1");
  recreated.erase("status");
  api.seed(resources::kExtendedResources, recreated);
  caches.load(api);
  EXPECT_EQ(reconciler->reconcileDevice("d1").requeueAfter, ReconcilerOptions{}.rebindDelay);
  now += ReconcilerOptions{}.rebindDelay;
  reconciler->reconcileDevice("d1");
  EXPECT_EQ(device("d1")["status"]["phase"], "Bound");
  caches.load(api);
  const auto rv = settledResourceVersion();
  reconciler->reconcileClaim("default/c");
  expectUntouched(rv);
  EXPECT_EQ(claim()["status"]["phase"], "Bound");
}

// The cache still shows the claim Lost, but another process (the leader before this one)
// released it: the device is not bound to a claim that no longer wants it (it would sit out the
// orphan grace), and is initialized once the cache catches up.
TEST_F(ReconcilerTest, RecreatedDeviceIsNotBoundBackToAClaimReleasedMeanwhile) {
  seedBoundCluster();
  api.remove(resources::kExtendedResources, "", "d1");
  caches.load(api);
  reconciler->reconcileClaim("default/c");
  json recreated = deviceJson("d1");
  recreated.erase("status");
  api.seed(resources::kExtendedResources, recreated);
  caches.load(api);
  ASSERT_EQ(claim()["status"]["phase"], "Lost");
  auto released = ExtendedResourceClaim::fromJson(claim());
  ASSERT_TRUE(releaseClaim(released, "pod gone").ok());
  api.updateStatus(resources::kExtendedResourceClaims, "default",
                   released.toJson(std::chrono::system_clock::now()));
  caches.devices["d1"] = std::make_shared<const ExtendedResource>(
      ExtendedResource::fromJson(device("d1")));  // the claim stays stale in the cache
  EXPECT_EQ(reconciler->reconcileDevice("d1").status, Status::kDone);
  EXPECT_FALSE(device("d1").contains("status"));
  caches.load(api);
  reconciler->reconcileDevice("d1");
  EXPECT_EQ(device("d1")["status"]["phase"], "Available");
}

TEST_F(ReconcilerTest, AClaimThatGetsSomeLostDevicesBackStaysLostForTheRest) {
  seedLostClaimWithD1Back();
  caches.load(api);
  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  auto s = claim()["status"];
  EXPECT_EQ(s["phase"], "Lost");
  EXPECT_EQ(s["extendedResourceNames"], json({"d0", "d1"}));
  EXPECT_EQ(s["lostExtendedResourceNames"], json({"gone"}));
  EXPECT_EQ(s["reason"], "ExtendedResourceLost");
  EXPECT_EQ(s["message"],
            "extended resource d1 came back and is bound to the claim again; still lost: gone");
}

TEST_F(ReconcilerTest, ReleasingALostClaimFreesTheDevicesItGotBack) {
  seedLostClaimWithD1Back();
  deletePodSeenByTheWatch();
  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  expectReleased();
  EXPECT_FALSE(claim()["status"].contains("lostExtendedResourceNames"));
}

TEST_F(ReconcilerTest, DeviceMissingOnlyFromTheCacheIsNotLost) {
  seedBoundCluster();
  caches.devices.erase("d1");
  const auto rv = settledResourceVersion();
  reconciler->reconcileClaim("default/c");
  expectUntouched(rv);
}

TEST_F(ReconcilerTest, DeletedClaimFreesItsDevices) {
  seedBoundCluster();
  api.remove(resources::kExtendedResourceClaims, "default", "c");
  caches.load(api);
  for (const char* name : {"d0", "d1"}) {
    auto r = reconciler->reconcileDevice(name);
    EXPECT_EQ(r.status, Status::kDone);
    EXPECT_FALSE(r.requeueAfter) << "a deleted claim needs no grace";
    EXPECT_EQ(device(name)["status"]["phase"], "Available");
    EXPECT_EQ(device(name)["status"]["reason"], "Orphaned");
  }
  EXPECT_EQ(counter(metrics.repairs, {"device_freed"}), 2);
}

TEST_F(ReconcilerTest, ClaimRecreatedUnderTheSameNameFreesTheOldOnesDevices) {
  seedBoundCluster();
  auto c = claim();
  api.remove(resources::kExtendedResourceClaims, "default", "c");
  c["metadata"].erase("uid");
  c["metadata"].erase("resourceVersion");
  c.erase("status");
  api.seed(resources::kExtendedResourceClaims, c);
  caches.load(api);
  reconciler->reconcileDevice("d0");
  EXPECT_EQ(device("d0")["status"]["phase"], "Available");
}

TEST_F(ReconcilerTest, ClaimMissingOnlyFromTheCacheKeepsItsDevice) {
  seedBoundCluster();
  caches.claims.clear();
  const auto rv = settledResourceVersion();
  EXPECT_EQ(reconciler->reconcileDevice("d0").status, Status::kDone);
  expectUntouched(rv);
}

TEST_F(ReconcilerTest, MidBindDeviceIsLeftAloneUntilTheGracePeriodPasses) {
  seedMidBind();
  const auto rv = settledResourceVersion();
  auto r = reconciler->reconcileDevice("d0");
  EXPECT_EQ(r.status, Status::kDone);
  EXPECT_EQ(r.requeueAfter, 45s) << "--device-orphan-grace-period, below --orphan-grace-period";
  now += 30s;
  EXPECT_EQ(reconciler->reconcileDevice("d0").requeueAfter, 15s);
  expectUntouched(rv);

  now += 15s;
  r = reconciler->reconcileDevice("d0");
  EXPECT_FALSE(r.requeueAfter);
  EXPECT_EQ(device("d0")["status"]["phase"], "Available");
  EXPECT_NE(device("d0")["status"]["message"].get<std::string>().find("does not list"),
            std::string::npos);
  EXPECT_EQ(reconciler->remembered(), 0u);
}

TEST_F(ReconcilerTest, MidBindThatCompletesIsNeverTouched) {
  seedMidBind();
  reconciler->reconcileDevice("d0");
  auto c = claim();
  c["status"] = {{"phase", "Bound"},
                 {"extendedResourceNames", {"d0"}},
                 {"nodeName", "n1"},
                 {"podRef", {{"name", "p"}, {"uid", "uid-p"}}}};
  api.updateStatus(resources::kExtendedResourceClaims, "default", c);
  caches.load(api);
  now += 1s;
  const auto rv = settledResourceVersion();
  auto r = reconciler->reconcileDevice("d0");
  EXPECT_FALSE(r.requeueAfter);
  EXPECT_EQ(reconciler->remembered(), 0u) << "the grace clock is forgotten";
  now += 10min;
  reconciler->reconcileDevice("d0");
  expectUntouched(rv);
}

TEST_F(ReconcilerTest, OrphanIsReadLiveBeforeBeingFreed) {
  seedMidBind();
  reconciler->reconcileDevice("d0");
  // The bind completed, but the claim cache missed it.
  auto c = claim();
  c["status"] = {{"phase", "Bound"}, {"extendedResourceNames", {"d0"}}, {"nodeName", "n1"}};
  api.updateStatus(resources::kExtendedResourceClaims, "default", c);
  now += 3min;
  const auto rv = settledResourceVersion();
  EXPECT_EQ(reconciler->reconcileDevice("d0").status, Status::kDone);
  expectUntouched(rv);
}

TEST_F(ReconcilerTest, ClaimOfAPodThatNeverGotANodeIsReleasedAfterGrace) {
  seedBoundCluster("Pending", "");
  const auto rv = settledResourceVersion();
  EXPECT_EQ(reconciler->reconcileClaim("default/c").requeueAfter, 2min);
  now += 2min;
  // The cache still says unbound; a live read is taken before releasing.
  reconciler->reconcileClaim("default/c");
  expectReleased();
  EXPECT_EQ(counter(metrics.releases, {"NeverScheduled"}), 1);
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kGet), 1);
  EXPECT_NE(rv, api.resourceVersion());
}

// A retried bind rewrites the claim it reuses just before the grace runs out, and its
// Binding is still on the way: the rewrite is a sign of life and starts the grace again.
TEST_F(ReconcilerTest, ARewriteOfASuspectClaimStartsItsGraceAgain) {
  seedBoundCluster("Pending", "");
  reconciler->reconcileClaim("default/c");
  now += 2min - 1s;
  auto c = claim();
  c["status"]["message"] = "allocated to pod p on node n1 (bind retried)";
  api.updateStatus(resources::kExtendedResourceClaims, "default", c);
  caches.load(api);
  const auto rv = settledResourceVersion();
  EXPECT_EQ(reconciler->reconcileClaim("default/c").requeueAfter, 2min);
  now += 2s;
  EXPECT_EQ(reconciler->reconcileClaim("default/c").requeueAfter, 2min - 2s);
  expectUntouched(rv);
  now += 2min;
  reconciler->reconcileClaim("default/c");
  expectReleased();
}

// The rewrite as the binder makes it: only the claim's count of bind rewrites moves.
TEST_F(ReconcilerTest, ACountedRewriteOfASuspectClaimStartsItsGraceAgain) {
  seedBoundCluster("Pending", "");
  reconciler->reconcileClaim("default/c");
  now += 2min - 1s;
  auto c = claim();
  c["status"]["bindRewrites"] = 1;
  api.updateStatus(resources::kExtendedResourceClaims, "default", c);
  caches.load(api);
  const auto rv = settledResourceVersion();
  EXPECT_EQ(reconciler->reconcileClaim("default/c").requeueAfter, 2min);
  expectUntouched(rv);
}

// Likewise a device a retried bind wrote again.
TEST_F(ReconcilerTest, ARewriteOfASuspectDeviceStartsItsGraceAgain) {
  seedMidBind();
  reconciler->reconcileDevice("d0");
  now += 45s - 1s;
  auto d = device("d0");
  d["status"]["message"] = "bound again";
  api.updateStatus(resources::kExtendedResources, "", d);
  caches.load(api);
  now += 2s;
  EXPECT_EQ(reconciler->reconcileDevice("d0").requeueAfter, 45s);
  EXPECT_EQ(device("d0")["status"]["phase"], "Bound");
}

// Someone else edits the device's labels while it looks half-written: no sign of a bind, so
// the grace runs on.
TEST_F(ReconcilerTest, AnEditOutsideTheStatusDoesNotStartTheGraceAgain) {
  seedMidBind();
  reconciler->reconcileDevice("d0");
  now += 2min - 1s;
  auto d = device("d0");
  d["metadata"]["labels"] = {{"health", "checked"}};
  api.update(resources::kExtendedResources, "", d);
  caches.load(api);
  now += 2s;
  EXPECT_FALSE(reconciler->reconcileDevice("d0").requeueAfter);
  EXPECT_EQ(device("d0")["status"]["phase"], "Available");
}

TEST_F(ReconcilerTest, PodBoundMeanwhileKeepsItsClaimDespiteAStaleCache) {
  seedBoundCluster("Pending", "");
  reconciler->reconcileClaim("default/c");
  api.bindPod("default", "p", podUid, "n1");
  now += 5min;
  const auto rv = settledResourceVersion();
  reconciler->reconcileClaim("default/c");
  expectUntouched(rv);
  EXPECT_EQ(reconciler->remembered(), 0u);
}

TEST_F(ReconcilerTest, DeviceWithoutStatusBecomesAvailable) {
  json d = deviceJson("fresh");
  d.erase("status");
  api.seed(resources::kExtendedResources, d);
  caches.load(api);
  reconciler->reconcileDevice("fresh");
  json status = device("fresh")["status"];
  EXPECT_EQ(status["conditions"][0]["reason"], "Available");  // the rest: conditions_test.cpp
  status.erase("conditions");
  EXPECT_EQ(status, json({{"phase", "Available"}}));
  EXPECT_EQ(device("fresh")["spec"], d["spec"]);
  EXPECT_EQ(counter(metrics.repairs, {"device_initialized"}), 1);
}

TEST_F(ReconcilerTest, WithoutLeadershipNothingIsWritten) {
  seedBoundCluster();
  api.remove(resources::kPods, "default", "p");
  caches.load(api);
  leader = false;
  const auto rv = settledResourceVersion();
  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kAborted);
  expectUntouched(rv);
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kUpdateStatus), 0);
}

TEST_F(ReconcilerTest, VanishedObjectsAreForgotten) {
  seedMidBind();
  reconciler->reconcileDevice("d0");
  EXPECT_EQ(reconciler->remembered(), 1u);
  caches.devices.clear();
  EXPECT_EQ(reconciler->reconcileDevice("d0").status, Status::kDone);
  EXPECT_EQ(reconciler->remembered(), 0u);
}

// Passes the CRD's schema but not the parser: In needs values.
const json kValuelessIn = {{"key", "type"}, {"operator", "In"}};

// A device Pending for a reason of its agent's (unhealthy) whose spec was invalid for a while:
// the mark replaced that reason, so clearing it leaves the device Available, not Pending with no
// reason nobody would undo; the agent marks it again at its next check if it is still unhealthy.
TEST_F(ReconcilerTest, AFreeDeviceValidAgainIsAvailableNotPendingForNoReason) {
  json d = deviceJson("sick");
  d["status"] = {{"phase", "Pending"}, {"reason", "DeviceUnhealthy"}, {"message", "ECC errors"}};
  d = api.seed(resources::kExtendedResources, d);
  d["spec"]["nodeAffinity"] = {
      {"required", {{"nodeSelectorTerms", {{{"matchExpressions", {kValuelessIn}}}}}}}};
  d = api.update(resources::kExtendedResources, "", d);
  caches.load(api);
  EXPECT_EQ(reconciler->reconcileDevice("sick").status, Status::kDone);
  EXPECT_EQ(device("sick")["status"]["reason"], "Invalid");
  EXPECT_EQ(device("sick")["status"]["phase"], "Pending");

  d = device("sick");
  d["spec"] = deviceJson("sick")["spec"];
  api.update(resources::kExtendedResources, "", d);
  caches.load(api);
  EXPECT_EQ(reconciler->reconcileDevice("sick").status, Status::kDone);
  const json s = device("sick")["status"];
  EXPECT_EQ(s["phase"], "Available");
  EXPECT_FALSE(s.contains("reason"));

  // One its node agent published stays out of offer, marked as the agent marks an unhealthy
  // device, until the agent's next check finds it healthy.
  d = device("sick");
  d["metadata"]["labels"][kNodeLabel] = "n1";
  d["spec"]["nodeAffinity"] = {
      {"required", {{"nodeSelectorTerms", {{{"matchExpressions", {kValuelessIn}}}}}}}};
  d = api.update(resources::kExtendedResources, "", d);
  d["status"] = {{"phase", "Pending"}, {"reason", "DeviceUnhealthy"}, {"message", "ECC errors"}};
  d = api.updateStatus(resources::kExtendedResources, "", d);
  caches.load(api);
  EXPECT_EQ(reconciler->reconcileDevice("sick").status, Status::kDone);
  d = device("sick");
  d["spec"] = deviceJson("sick")["spec"];
  api.update(resources::kExtendedResources, "", d);
  caches.load(api);
  EXPECT_EQ(reconciler->reconcileDevice("sick").status, Status::kDone);
  const auto agents = ExtendedResource::fromJson(device("sick"));
  EXPECT_EQ(agents.phase, DevicePhase::kPending);
  EXPECT_TRUE(markedUnhealthy(agents)) << agents.reason;
  ExtendedResource checked = agents;
  EXPECT_TRUE(markDeviceHealthy(checked).ok());
  EXPECT_EQ(checked.phase, DevicePhase::kAvailable);
}

TEST_F(ReconcilerTest, InvalidBoundDeviceGetsAReasonAndKeepsItsClaimRef) {
  seedBoundCluster();
  auto d = device("d0");
  d["spec"]["nodeAffinity"] = {
      {"required", {{"nodeSelectorTerms", {{{"matchExpressions", {kValuelessIn}}}}}}}};
  api.update(resources::kExtendedResources, "", d);
  caches.load(api);
  const std::string why = caches.devices["d0"]->invalid;
  ASSERT_FALSE(why.empty());
  const json before = device("d0")["status"];

  EXPECT_EQ(reconciler->reconcileDevice("d0").status, Status::kDone);
  json s = device("d0")["status"];
  EXPECT_EQ(s["reason"], "Invalid");
  EXPECT_EQ(s["message"], why);
  EXPECT_EQ(s["phase"], "Bound");
  EXPECT_EQ(s["claimRef"], before["claimRef"]);
  EXPECT_EQ(counter(metrics.repairs, {"marked_invalid"}), 1);

  caches.load(api);
  const auto rv = settledResourceVersion();
  EXPECT_EQ(reconciler->reconcileDevice("d0").status, Status::kDone);
  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  expectUntouched(rv);

  // Fixed: the reason goes, the binding stays.
  d = device("d0");
  d["spec"].erase("nodeAffinity");
  api.update(resources::kExtendedResources, "", d);
  caches.load(api);
  EXPECT_EQ(reconciler->reconcileDevice("d0").status, Status::kDone);
  s = device("d0")["status"];
  EXPECT_FALSE(s.contains("reason"));
  EXPECT_FALSE(s.contains("message"));
  EXPECT_EQ(s["claimRef"], before["claimRef"]);
}

TEST_F(ReconcilerTest, InvalidDeviceWithoutStatusGetsOneWrite) {
  json d = deviceJson("bad");
  d.erase("status");
  d["spec"]["nodeAffinity"] = {{"required", {{"nodeSelectorTerms", json::array()}}}};
  d["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"].push_back(
      {{"matchFields", {{{"key", "metadata.name"}, {"operator", "Gt"}, {"values", {"x"}}}}}});
  api.seed(resources::kExtendedResources, d);
  caches.load(api);
  ASSERT_FALSE(caches.devices["bad"]->invalid.empty());
  reconciler->reconcileDevice("bad");
  caches.load(api);
  reconciler->reconcileDevice("bad");
  const json s = device("bad")["status"];
  EXPECT_EQ(s["phase"], "Available");
  EXPECT_EQ(s["reason"], "Invalid");
  EXPECT_EQ(s["message"], caches.devices["bad"]->invalid);
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kPatch), 1);
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kUpdateStatus), 0);
}

TEST_F(ReconcilerTest, InvalidClaimGetsAReasonAndAWarningOnce) {
  seedBoundCluster();
  auto c = claim();
  c["spec"]["metadataRequirements"] = {
      {"matchExpressions", {{{"key", "type"}, {"operator", "Near"}, {"values", {"k80"}}}}}};
  api.update(resources::kExtendedResourceClaims, "default", c);
  api.remove(resources::kPods, "default", "p");
  caches.load(api);
  const std::string why = caches.claims["default/c"]->invalid;
  ASSERT_NE(why.find("Near"), std::string::npos) << why;

  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  const json s = claim()["status"];
  EXPECT_EQ(s["reason"], "Invalid");
  EXPECT_EQ(s["message"], why);
  EXPECT_EQ(s["phase"], "Bound") << "marked first, decided on the next pass";
  EXPECT_EQ(s["extendedResourceNames"], json({"d0", "d1"}));
  auto warnings = eventsFor("ExtendedResourceClaim");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0]["type"], "Warning");
  EXPECT_EQ(warnings[0]["reason"], "Invalid");

  // Only its spec is wrong, so its status still says what it holds: its pod is gone, so it
  // is released with its devices, still saying why it is unusable.
  caches.load(api);
  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  const json released = claim()["status"];
  EXPECT_EQ(released["phase"], "Pending");
  EXPECT_FALSE(released.contains("extendedResourceNames"));
  EXPECT_EQ(released["reason"], "Invalid");
  EXPECT_EQ(released["message"], why);
  for (const char* d : {"d0", "d1"}) {
    EXPECT_EQ(device(d)["status"]["phase"], "Available") << d;
  }

  caches.load(api);
  const auto rv = settledResourceVersion();
  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  for (const char* d : {"d0", "d1"}) {
    EXPECT_EQ(reconciler->reconcileDevice(d).status, Status::kDone);
  }
  expectUntouched(rv);
  const auto events = eventsFor("ExtendedResourceClaim");
  EXPECT_EQ(std::count_if(events.begin(), events.end(),
                          [](const json& e) { return e["reason"] == "Invalid"; }),
            1)
      << "one warning for the problem, however often the claim is written";
}

TEST_F(ReconcilerTest, AClaimWhoseStatusIsUnreadableIsNeverReleased) {
  seedBoundCluster();
  auto c = claim();
  c["status"]["podRef"] = "p";
  api.updateStatus(resources::kExtendedResourceClaims, "default", c);
  api.remove(resources::kPods, "default", "p");
  caches.load(api);
  ASSERT_FALSE(caches.claims["default/c"]->statusReadable);

  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  caches.load(api);
  EXPECT_EQ(reconciler->reconcileClaim("default/c").status, Status::kDone);
  EXPECT_EQ(claim()["status"]["phase"], "Bound");
  EXPECT_EQ(claim()["status"]["reason"], "Invalid");
  for (const char* d : {"d0", "d1"}) {
    EXPECT_EQ(reconciler->reconcileDevice(d).status, Status::kDone);
    EXPECT_EQ(device(d)["status"]["phase"], "Bound") << d;
  }
}

TEST_F(ReconcilerTest, InvalidMarkIsConditionalOnTheObjectAsRead) {
  seedBoundCluster();
  auto c = claim();
  c["spec"]["metadataRequirements"] = {{"matchExpressions", {kValuelessIn}}};
  api.update(resources::kExtendedResourceClaims, "default", c);
  caches.load(api);
  c = claim();
  c["spec"].erase("metadataRequirements");
  api.update(resources::kExtendedResourceClaims, "default", c);  // fixed; the cache is stale
  auto r = reconciler->reconcileClaim("default/c");
  EXPECT_EQ(r.status, Status::kRetry);
  EXPECT_TRUE(r.error.isConflict());
  EXPECT_FALSE(claim()["status"].contains("message"));
}

class NudgeReconcileTest : public ReconcilerTest {
 protected:
  // A pod kube-scheduler parked, waiting for claim w of `resource`.
  void seedWaiting(const std::string& pod, const std::string& resource, bool parked = true) {
    json c = {{"apiVersion", kApiVersion},
              {"kind", "ExtendedResourceClaim"},
              {"metadata", {{"name", pod + "-claim"}, {"namespace", "default"}}},
              {"spec", {{"rawResourceName", resource}}}};
    api.seed(resources::kExtendedResourceClaims, c);
    json p = podJson(pod, "", "Pending");
    p["metadata"]["annotations"][kClaimsAnnotation] = pod + "-claim";
    if (parked) {
      p["status"]["conditions"] = {
          {{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}};
    }
    api.seed(resources::kPods, p);
  }

  bool nudged(const std::string& pod) {
    return api.peek(resources::kPods, "default", pod)
        .value()["metadata"]["annotations"]
        .contains(kRequeueAtAnnotation);
  }
};

TEST_F(NudgeReconcileTest, PatchesParkedPodsWaitingForTheResourceOnce) {
  seedWaiting("gpu-pod", kGpu);
  seedWaiting("fpga-pod", "example.com/fpga");
  seedWaiting("fresh-pod", kGpu, false);
  caches.load(api);
  EXPECT_EQ(reconciler->nudge(NudgeTarget::resource(kGpu)).status, Status::kDone)
      << "no trigger, nothing to do";
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kPatch), 0);

  reconciler->requestNudge(NudgeTarget::resource(kGpu));
  auto r = reconciler->nudge(NudgeTarget::resource(kGpu));
  EXPECT_EQ(r.status, Status::kDone);
  EXPECT_FALSE(r.requeueAfter);
  EXPECT_TRUE(nudged("gpu-pod"));
  EXPECT_FALSE(nudged("fpga-pod"));
  EXPECT_FALSE(nudged("fresh-pod"));
  auto ts = api.peek(resources::kPods, "default", "gpu-pod")
                .value()["metadata"]["annotations"][kRequeueAtAnnotation]
                .get<std::string>();
  EXPECT_TRUE(std::regex_match(ts, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)"))) << ts;
  EXPECT_EQ(metrics.podNudges.value(), 1);

  caches.load(api);
  reconciler->nudge(NudgeTarget::resource(kGpu));
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kPatch), 1) << "one nudge per trigger";
}

TEST_F(NudgeReconcileTest, ASecondTriggerSoonAfterIsServedOnceTheIntervalPasses) {
  seedWaiting("gpu-pod", kGpu);
  caches.load(api);
  reconciler->requestNudge(NudgeTarget::resource(kGpu));
  reconciler->nudge(NudgeTarget::resource(kGpu));
  now += 200ms;
  reconciler->requestNudge(NudgeTarget::resource(kGpu));
  auto r = reconciler->nudge(NudgeTarget::resource(kGpu));
  EXPECT_EQ(r.requeueAfter, 800ms);
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kPatch), 1);
  now += 800ms;
  r = reconciler->nudge(NudgeTarget::resource(kGpu));
  EXPECT_FALSE(r.requeueAfter);
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kPatch), 2);
}

TEST_F(NudgeReconcileTest, APodGoneMeanwhileIsSkipped) {
  seedWaiting("gpu-pod", kGpu);
  caches.load(api);
  api.remove(resources::kPods, "default", "gpu-pod");
  reconciler->requestNudge(NudgeTarget::resource(kGpu));
  EXPECT_EQ(reconciler->nudge(NudgeTarget::resource(kGpu)).status, Status::kDone);
}

TEST(WatchedPodTest, ReadsWhetherKubeSchedulerParkedThePod) {
  auto parse = [](json conditions) {
    json p = podJson("p", "", "Pending");
    p["status"]["conditions"] = std::move(conditions);
    return WatchedPod::fromJson(p);
  };
  EXPECT_TRUE(parse({{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}},
                     {{"type", "Ready"}, {"status", "False"}}})
                  .unschedulable);
  EXPECT_FALSE(parse({{{"type", "PodScheduled"}, {"status", "True"}}}).unschedulable);
  EXPECT_FALSE(
      parse({{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "SchedulerError"}}})
          .unschedulable);
  EXPECT_FALSE(parse(json::array()).unschedulable);
  EXPECT_FALSE(parse("garbage").unschedulable);
  EXPECT_FALSE(WatchedPod::fromJson(json("not an object")).unschedulable);

  const WatchedPod p =
      parse({{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}});
  EXPECT_EQ(p.meta.name, "p");
  EXPECT_EQ(p.claims, std::vector<std::string>{"c"});
  EXPECT_EQ(p.schedulerName, "extended-resource-scheduler");
}

}  // namespace
}  // namespace ker

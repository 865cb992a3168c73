#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <vector>

#include "bench/pipeline_summary.h"
#include "bench/write_cost.h"
#include "model/objects.h"

namespace ker::bench::pipeline::writecost {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

const SystemTime kNow = std::chrono::system_clock::from_time_t(1'800'000'000);

Targets created() {
  Targets t = targets("pipe-write-cost");
  t.claimUid = "claim-uid";
  t.podUid = "pod-uid";
  return t;
}

// The object as the API server would answer its creation.
json stored(json obj, const std::string& rv) {
  obj["metadata"]["uid"] = "uid-" + rv;
  obj["metadata"]["resourceVersion"] = rv;
  return obj;
}

TEST(WriteCostTest, KindsAreChosenByNameAndMeasuredInTheirOwnOrder) {
  EXPECT_EQ(parseKinds("Pod, ExtendedResource"), (std::vector<Kind>{Kind::kDevice, Kind::kPod}));
  EXPECT_EQ(parseKinds("ExtendedResourceClaim"), (std::vector<Kind>{Kind::kClaim}));
  EXPECT_EQ(parseKinds("ExtendedResource,ExtendedResourceClaim,Pod").size(), 3u);
  EXPECT_THROW(parseKinds("device"), std::invalid_argument);
  EXPECT_THROW(parseKinds(" , "), std::invalid_argument);
}

TEST(WriteCostTest, TheDeviceIsPinnedToANodeThatDoesNotExist) {
  const Targets t = created();
  const auto d = ExtendedResource::fromJson(stored(deviceObject(t), "1"));
  EXPECT_TRUE(d.invalid.empty()) << d.invalid;
  EXPECT_EQ(d.meta.name, "pipe-write-cost-device");
  ASSERT_EQ(d.nodeAffinity.terms.size(), 1u);
  ASSERT_EQ(d.nodeAffinity.terms[0].matchFields.size(), 1u);
  EXPECT_EQ(d.nodeAffinity.terms[0].matchFields[0].values, std::vector<std::string>{t.node});
  EXPECT_NE(t.node.find("no-such-node"), std::string::npos);
  EXPECT_EQ(podObject(t)["spec"]["schedulerName"], "write-cost-nobody");
  EXPECT_EQ(claimObject(t)["metadata"]["namespace"], t.ns);
}

TEST(WriteCostTest, TheDeviceAlternatesBetweenBoundToTheClaimAndAvailable) {
  const Targets t = created();
  json current = stored(deviceObject(t), "7");
  const json bound = nextStatus(Kind::kDevice, t, current, 0, kNow);
  EXPECT_EQ(bound["metadata"]["resourceVersion"], "7");
  EXPECT_EQ(bound["status"]["phase"], "Bound");
  EXPECT_EQ(bound["status"]["claimRef"],
            (json{{"namespace", t.ns}, {"name", t.claim}, {"uid", "claim-uid"}}));
  EXPECT_TRUE(bound["status"].contains("conditions"));
  EXPECT_EQ(stateOf(Kind::kDevice, 0), "Bound");

  current = bound;
  current["metadata"]["resourceVersion"] = "8";
  const json freed = nextStatus(Kind::kDevice, t, current, 1, kNow);
  EXPECT_EQ(freed["metadata"]["resourceVersion"], "8");
  EXPECT_EQ(freed["status"]["phase"], "Available");
  EXPECT_FALSE(freed["status"].contains("claimRef"));
  EXPECT_EQ(stateOf(Kind::kDevice, 1), "Available");
  EXPECT_EQ(nextStatus(Kind::kDevice, t, freed, 2, kNow)["status"]["phase"], "Bound");
}

TEST(WriteCostTest, TheClaimAlternatesBetweenBoundWithTheDeviceAndPending) {
  const Targets t = created();
  const json bound = nextStatus(Kind::kClaim, t, stored(claimObject(t), "3"), 0, kNow);
  EXPECT_EQ(bound["metadata"]["resourceVersion"], "3");
  const auto c = ExtendedResourceClaim::fromJson(bound);
  EXPECT_TRUE(c.invalid.empty()) << c.invalid;
  EXPECT_EQ(c.phase, ClaimPhase::kBound);
  EXPECT_EQ(c.allocated, std::vector<std::string>{t.device});
  EXPECT_EQ(c.nodeName, t.node);
  ASSERT_TRUE(c.podRef.has_value());
  EXPECT_EQ(c.podRef->uid, "pod-uid");

  const auto pending = ExtendedResourceClaim::fromJson(nextStatus(Kind::kClaim, t, bound, 1, kNow));
  EXPECT_EQ(pending.phase, ClaimPhase::kPending);
  EXPECT_TRUE(pending.allocated.empty());
  EXPECT_TRUE(pending.nodeName.empty());
  EXPECT_FALSE(pending.podRef.has_value());
  EXPECT_EQ(stateOf(Kind::kClaim, 1), "Pending");
}

TEST(WriteCostTest, ThePodsConditionIsToggledAndTheOthersKept) {
  const Targets t = created();
  json current = stored(podObject(t), "5");
  current["status"] = {{"phase", "Pending"},
                       {"conditions", {{{"type", "PodScheduled"}, {"status", "False"}}}}};
  const json on = nextStatus(Kind::kPod, t, current, 0, kNow);
  EXPECT_EQ(on["metadata"]["resourceVersion"], "5");
  const json off = nextStatus(Kind::kPod, t, on, 1, kNow);
  for (const auto& [p, want] : {std::pair{on, "True"}, std::pair{off, "False"}}) {
    const auto& conditions = p["status"]["conditions"];
    ASSERT_EQ(conditions.size(), 2u) << p.dump();
    EXPECT_EQ(conditions[0]["type"], "PodScheduled");
    EXPECT_EQ(conditions[1]["type"], kConditionType);
    EXPECT_EQ(conditions[1]["status"], want);
  }
  EXPECT_EQ(stateOf(Kind::kPod, 0), "True");
}

TEST(WriteCostTest, AnInvalidObjectIsAClearErrorNotAWrite) {
  const Targets t = created();
  json garbled = stored(deviceObject(t), "1");
  garbled["status"] = {{"phase", 12}};
  EXPECT_THROW(nextStatus(Kind::kDevice, t, garbled, 0, kNow), std::runtime_error);
}

TEST(WriteCostTest, FiguresArePerWrite) {
  Measured m;
  m.kind = Kind::kClaim;
  m.writes = 1000;
  m.apiserverSeconds = 4.5;
  m.etcdSeconds = 0.5;
  m.wallSeconds = 6;
  m.bytes = {{"Bound", 2296}, {"Pending", 1401}};
  const ojson j = toJson(m);
  EXPECT_EQ(j["kind"], "ExtendedResourceClaim");
  EXPECT_DOUBLE_EQ(j["apiserver_ms_per_write"].get<double>(), 4.5);
  EXPECT_DOUBLE_EQ(j["etcd_ms_per_write"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["wall_ms_per_write"].get<double>(), 6);
  EXPECT_EQ(j["object_bytes"]["Bound"], 2296);
  EXPECT_EQ(toJson(Measured{})["apiserver_ms_per_write"], 0.0);
}

TEST(WriteCostTest, TheReportHasATablePerKindAndNoneWithoutTheStage) {
  Measured device;
  device.kind = Kind::kDevice;
  device.writes = 1000;
  device.apiserverSeconds = 4.25;
  device.etcdSeconds = 0.75;
  device.wallSeconds = 5;
  device.bytes = {{"Bound", 2071}, {"Available", 1377}};
  Measured pod;
  pod.kind = Kind::kPod;
  pod.writes = 1000;
  pod.apiserverSeconds = 2.5;
  const ojson stages =
      ojson::array({ojson{{"nodes", 500}, {"kinds", ojson::array({toJson(device), toJson(pod)})}}});
  const std::string md = writeCostMarkdown(stages);
  EXPECT_NE(md.find("## kube-apiserver CPU per status write"), std::string::npos) << md;
  EXPECT_NE(md.find("| 500 | ExtendedResource | 1000 | 4.25 | 0.75 | 5.00 | Available 1377, "
                    "Bound 2071 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 500 | Pod | 1000 | 2.50 | 0.00 | 0.00 |  |"), std::string::npos) << md;
  EXPECT_EQ(writeCostMarkdown(ojson::array()), "");
}

}  // namespace
}  // namespace ker::bench::pipeline::writecost

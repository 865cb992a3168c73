#include "controller/controller_app.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <thread>

#include "common/api_error.h"
#include "common/http_server.h"
#include "fake_api_client.h"
#include "model/objects.h"
#include "test/unit/eventually.h"

namespace ker {
namespace {

using namespace std::chrono_literals;
using testing::FakeApiClient;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

using testing::eventually;

class ControllerAppTest : public ::testing::Test {
 protected:
  ControllerAppTest() {
    config.leaderElection.name = "ctl";
    config.leaderElection.identity = "me";
    config.leaderElection.leaseDuration = 3s;
    config.leaderElection.renewDeadline = 300ms;
    config.leaderElection.retryPeriod = 20ms;
    config.metricsBindAddress = "127.0.0.1:0";
    config.controller.workers = 2;
  }

  // A Bound claim c whose pod is gone, with device d0.
  void seedOrphanedClaim() {
    json c = {{"apiVersion", kApiVersion},
              {"kind", "ExtendedResourceClaim"},
              {"metadata", {{"name", "c"}, {"namespace", "default"}}},
              {"spec", {{"rawResourceName", "nvidia.com/gpu"}}},
              {"status",
               {{"phase", "Bound"},
                {"extendedResourceNames", {"d0"}},
                {"nodeName", "n1"},
                {"podRef", {{"name", "gone"}, {"uid", "uid-gone"}}}}}};
    const std::string uid = api.seed(resources::kExtendedResourceClaims, c)["metadata"]["uid"];
    api.seed(resources::kExtendedResources,
             {{"apiVersion", kApiVersion},
              {"kind", "ExtendedResource"},
              {"metadata", {{"name", "d0"}}},
              {"spec", {{"rawResourceName", "nvidia.com/gpu"}}},
              {"status",
               {{"phase", "Bound"},
                {"claimRef", {{"namespace", "default"}, {"name", "c"}, {"uid", uid}}}}}});
  }

  std::string claimPhase() {
    return api.peek(resources::kExtendedResourceClaims, "default", "c")
        .value()
        .value("/status/phase"_json_pointer, "");
  }

  std::string holder() {
    auto l = api.peek(resources::kLeases, "kube-system", "ctl");
    return l ? l->value("/spec/holderIdentity"_json_pointer, "") : "<none>";
  }

  httplib::Result getPath(ControllerApp& app, const std::string& path) {
    httplib::Client client("127.0.0.1", app.metricsPort());
    client.set_read_timeout(5, 0);
    return client.Get(path);
  }

  FakeApiClient api;
  ControllerAppConfig config;
  std::atomic<int> lostCalls{0};
};

TEST_F(ControllerAppTest, LeadsThenRepairsAndServesHealthAndMetrics) {
  seedOrphanedClaim();
  ControllerApp app(api, config, [this] { ++lostCalls; });
  app.start();
  ASSERT_TRUE(eventually([&] { return app.leading(); }));
  EXPECT_EQ(holder(), "me");
  ASSERT_TRUE(eventually([&] { return claimPhase() == "Pending"; }));
  EXPECT_TRUE(app.ready());

  auto health = getPath(app, "/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto ready = getPath(app, "/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  // The claim's write lands before its reconcile ends and counts the release.
  std::string metrics;
  ASSERT_TRUE(eventually([&] {
    auto m = getPath(app, "/metrics");
    metrics = m ? m->body : std::string();
    return metrics.find("releases_total{cause=\"PodDeleted\"} 1") != std::string::npos;
  }));
  for (const char* name : {"extended_resource_controller_leader 1",
                           "extended_resource_controller_releases_total{cause=\"PodDeleted\"} 1",
                           "extended_resource_controller_queue_depth",
                           "extended_resource_controller_events_sent_total"}) {
    EXPECT_NE(metrics.find(name), std::string::npos) << name;
  }

  app.stop();
  EXPECT_EQ(holder(), "") << "a clean stop gives the lease up";
  EXPECT_FALSE(app.leadershipLost());
  EXPECT_EQ(lostCalls, 0);
}

TEST_F(ControllerAppTest, FollowerNeverWrites) {
  api.seed(resources::kLeases,
           {{"metadata", {{"name", "ctl"}, {"namespace", "kube-system"}}},
            {"spec",
             {{"holderIdentity", "other"},
              {"leaseDurationSeconds", 3600},
              {"renewTime", formatMicroTime(std::chrono::system_clock::now())}}}});
  seedOrphanedClaim();
  const auto rv = api.resourceVersion();
  ControllerApp app(api, config);
  app.start();
  ASSERT_TRUE(eventually([&] { return app.ready(); }));
  const int reads = api.calls(FakeApiClient::Verb::kGet);
  ASSERT_TRUE(eventually([&] { return api.calls(FakeApiClient::Verb::kGet) >= reads + 5; }))
      << "the election keeps trying";
  EXPECT_FALSE(app.leading());
  EXPECT_EQ(api.resourceVersion(), rv);
  EXPECT_EQ(claimPhase(), "Bound");
  app.stop();
  EXPECT_EQ(holder(), "other");
}

TEST_F(ControllerAppTest, LosingTheLeaseStopsWritesAndReportsIt) {
  ControllerApp app(api, config, [this] { ++lostCalls; });
  app.start();
  ASSERT_TRUE(eventually([&] { return app.leading(); }));
  api.failNext(FakeApiClient::Verb::kUpdate,
               ApiError(ApiErrorKind::kServerError, 500, "InternalError", "etcd down"), -1);
  ASSERT_TRUE(eventually([&] { return lostCalls == 1; }));
  EXPECT_TRUE(app.leadershipLost());
  EXPECT_FALSE(app.leading());

  // The workers still run until stop(), but may not write.
  seedOrphanedClaim();
  auto aborted = [&] {
    auto m = getPath(app, "/metrics");
    return m && m->body.find("result=\"aborted\"") != std::string::npos;
  };
  ASSERT_TRUE(eventually(aborted));
  EXPECT_EQ(claimPhase(), "Bound");
  app.stop();
  EXPECT_EQ(lostCalls, 1);
}

TEST_F(ControllerAppTest, WithoutElectionItStartsAtOnce) {
  config.leaderElect = false;
  config.metricsBindAddress = "0";
  seedOrphanedClaim();
  ControllerApp app(api, config);
  app.start();
  EXPECT_EQ(app.metricsPort(), 0);
  ASSERT_TRUE(eventually([&] { return claimPhase() == "Pending"; }));
  EXPECT_TRUE(app.leading());
  EXPECT_EQ(holder(), "<none>");
}

TEST(BindAddressTest, Parses) {
  EXPECT_EQ(parseBindAddress(":8080"), std::make_pair(std::string("0.0.0.0"), 8080));
  EXPECT_EQ(parseBindAddress("127.0.0.1:9090"), std::make_pair(std::string("127.0.0.1"), 9090));
  EXPECT_EQ(parseBindAddress("[::1]:80"), std::make_pair(std::string("::1"), 80));
  for (const char* bad : {"", "0", "8080", ":", "host:", ":http", ":99999", ":-1"}) {
    EXPECT_FALSE(parseBindAddress(bad)) << bad;
  }
}

}  // namespace
}  // namespace ker

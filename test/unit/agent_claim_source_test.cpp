// Where the agent reads a claim when a container is created: the node's watch cache when it
// shows the claim Bound to the pod, the API server otherwise.
#include <gtest/gtest.h>

#include <chrono>

#include "agent/claim_source.h"
#include "common/api_error.h"
#include "fake_api_client.h"

namespace ker::agent {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using testing::FakeApiClient;

json boundClaim(const std::string& podUid) {
  return {{"apiVersion", "extendedresource.io/v1alpha1"},
          {"kind", "ExtendedResourceClaim"},
          {"metadata", {{"namespace", "ns"}, {"name", "c"}, {"uid", "uid-c"}}},
          {"spec", {{"rawResourceName", "example.com/gpu"}, {"extendedResourceNum", 1}}},
          {"status",
           {{"phase", "Bound"},
            {"nodeName", "n1"},
            {"podRef", {{"name", "p"}, {"uid", podUid}}},
            {"extendedResourceNames", {"d0"}}}}};
}

class ClaimSourceTest : public ::testing::Test {
 protected:
  void start() {
    cache_.start();
    ASSERT_TRUE(cache_.waitForSync(5s));
  }
  void TearDown() override { cache_.stop(); }

  FakeApiClient api_;
  Informer<ExtendedResourceClaim> cache_{
      api_, resources::kExtendedResourceClaims, {.name = "node-claims"}};
  CachedClaimSource source_{cache_, api_};
};

TEST_F(ClaimSourceTest, AClaimTheCacheShowsBoundToThePodIsAnsweredFromIt) {
  api_.seed(resources::kExtendedResourceClaims, boundClaim("uid-p"));
  start();
  const int gets = api_.calls(FakeApiClient::Verb::kGet);
  auto r = source_.get("ns", "c", "uid-p");
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_TRUE(r.claim);
  EXPECT_TRUE(r.claim->heldBy("uid-p"));
  EXPECT_EQ(source_.liveReads(), 0u);
  EXPECT_EQ(api_.calls(FakeApiClient::Verb::kGet), gets);
}

// Bound to another pod in the cache, or not in it: the cache may lag a bind made a moment ago,
// so the API server is asked, and its answer is what the decision sees.
TEST_F(ClaimSourceTest, AnyOtherCaseIsReadLive) {
  api_.seed(resources::kExtendedResourceClaims, boundClaim("uid-p"));
  start();
  auto r = source_.get("ns", "c", "uid-q");
  ASSERT_TRUE(r.status.ok());
  ASSERT_TRUE(r.claim);
  EXPECT_FALSE(r.claim->heldBy("uid-q")) << "the live claim, not a claim made up for the pod";
  EXPECT_EQ(source_.liveReads(), 1u);

  r = source_.get("ns", "missing", "uid-p");
  EXPECT_TRUE(r.status.ok()) << "a claim that does not exist is absent, not an error";
  EXPECT_FALSE(r.claim);
  EXPECT_EQ(source_.liveReads(), 2u);
}

TEST_F(ClaimSourceTest, ALiveReadThatFailsIsAnErrorNotAnAbsence) {
  start();
  api_.failNext(FakeApiClient::Verb::kGet,
                ApiError(ApiErrorKind::kServerError, 503, "ServiceUnavailable", "down"));
  auto r = source_.get("ns", "c", "uid-p");
  EXPECT_FALSE(r.status.ok());
  EXPECT_FALSE(r.claim);
}

}  // namespace
}  // namespace ker::agent

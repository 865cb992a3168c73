#include "scheduler/fit/claim_lookup.h"

#include <gtest/gtest.h>

#include "common/api_error.h"
#include "common/resource.h"
#include "model/objects.h"
#include "test/unit/fake_api_client.h"

namespace ker {
namespace {

using nlohmann::json;
using testing::FakeApiClient;
using Verb = FakeApiClient::Verb;

json claimJson(const std::string& name) {
  return {{"apiVersion", "extendedresource.io/v1alpha1"},
          {"kind", "ExtendedResourceClaim"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", {{"rawResourceName", "nvidia.com/gpu"}, {"extendedResourceNum", 1}}}};
}

TEST(ClaimLookup, TheCacheAnswersFirstAndTheApiWhatItLacks) {
  FakeApiClient api;
  api.seed(resources::kExtendedResourceClaims, claimJson("in-api"));
  auto cachedClaim = std::make_shared<const ExtendedResourceClaim>(
      ExtendedResourceClaim::fromJson(claimJson("cached")));
  const ClaimLookup lookup = cacheThenLive(
      [&](const std::string& key) { return key == "default/cached" ? cachedClaim : nullptr; }, api);

  EXPECT_EQ(lookup("default/cached"), cachedClaim);
  EXPECT_EQ(api.calls(Verb::kGet), 0);

  const ClaimPtr live = lookup("default/in-api");
  ASSERT_TRUE(live);
  EXPECT_EQ(live->meta.name, "in-api");
  EXPECT_EQ(live->rawResourceName, "nvidia.com/gpu");

  EXPECT_EQ(lookup("default/nowhere"), nullptr);
  EXPECT_EQ(lookup("no-namespace"), nullptr);
}

TEST(ClaimLookup, AnApiFailureIsNotTakenForAMissingClaim) {
  FakeApiClient api;
  api.seed(resources::kExtendedResourceClaims, claimJson("c"));
  api.failNext(Verb::kGet, ApiError(ApiErrorKind::kServerError, 503, "ServiceUnavailable", "down"));
  EXPECT_THROW(liveClaim(api, "default/c"), ApiError);
  EXPECT_TRUE(liveClaim(api, "default/c"));
}

}  // namespace
}  // namespace ker

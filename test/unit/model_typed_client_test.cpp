#include <gtest/gtest.h>

#include <chrono>

#include "model/device_transitions.h"
#include "model/typed_client.h"
#include "test/unit/fake_api_client.h"

namespace ker {
namespace {

using testing::FakeApiClient;

nlohmann::json device(const std::string& name) {
  return {{"apiVersion", kApiVersion},
          {"kind", "ExtendedResource"},
          {"metadata", {{"name", name}}},
          {"spec", {{"rawResourceName", "example.com/gpu"}, {"deviceID", "0"}}},
          {"status", {{"phase", "Available"}}}};
}

nlohmann::json claim(const std::string& ns, const std::string& name) {
  return {{"apiVersion", kApiVersion},
          {"kind", "ExtendedResourceClaim"},
          {"metadata", {{"namespace", ns}, {"name", name}}},
          {"spec", {{"rawResourceName", "example.com/gpu"}, {"extendedResourceNum", 1}}}};
}

TEST(TypedClientTest, AnObjectIsReadFromItsKindsResource) {
  FakeApiClient api;
  api.seed(resources::kExtendedResources, device("gpu-0"));
  api.seed(resources::kExtendedResourceClaims, claim("team-a", "c"));
  api.seed(resources::kPods, {{"apiVersion", "v1"},
                              {"kind", "Pod"},
                              {"metadata", {{"namespace", "team-a"}, {"name", "p"}}},
                              {"spec", {{"schedulerName", "s"}}}});

  ExtendedResource d;
  ASSERT_TRUE(getObject(api, "gpu-0", d).ok());
  EXPECT_EQ(d.meta.name, "gpu-0");
  EXPECT_EQ(d.rawResourceName, "example.com/gpu");

  ExtendedResourceClaim c;
  ASSERT_TRUE(getObject(api, "team-a", "c", c).ok());
  EXPECT_EQ(c.meta.ns, "team-a");
  EXPECT_EQ(c.extendedResourceNum, 1);

  const Pod p = readObject<Pod>(api, "team-a", "p");
  EXPECT_EQ(p.meta.name, "p");
  EXPECT_EQ(p.schedulerName, "s");
}

TEST(TypedClientTest, AFailedReadIsAStatusAndLeavesTheObjectAsItWas) {
  FakeApiClient api;
  ExtendedResourceClaim c;
  c.meta.name = "before";
  const Status read = getObject(api, "team-a", "missing", c);
  EXPECT_TRUE(read.isNotFound()) << read;
  EXPECT_EQ(c.meta.name, "before");

  EXPECT_THROW(readObject<ExtendedResourceClaim>(api, "team-a", "missing"), ApiError);
}

TEST(TypedClientTest, AStatusWriteSendsTheTypedStatusAndGivesTheStoredObject) {
  FakeApiClient api;
  api.seed(resources::kExtendedResources, device("gpu-0"));
  ExtendedResource d;
  ASSERT_TRUE(getObject(api, "gpu-0", d).ok());
  ASSERT_TRUE(markDeviceUnhealthy(d, Reason::kDeviceUnhealthy, "probe failed").ok());

  ExtendedResource written;
  const Status sent = writeStatus(api, d, std::chrono::system_clock::now(), &written);
  ASSERT_TRUE(sent.ok()) << sent;
  EXPECT_EQ(written.phase, DevicePhase::kPending);
  EXPECT_EQ(written.message, "probe failed");
  EXPECT_NE(written.meta.resourceVersion, d.meta.resourceVersion);

  ExtendedResource stored;
  ASSERT_TRUE(getObject(api, "gpu-0", stored).ok());
  EXPECT_EQ(stored.phase, DevicePhase::kPending);
  EXPECT_EQ(api.calls(FakeApiClient::Verb::kUpdateStatus), 1);
}

TEST(TypedClientTest, AStatusWriteOverAStaleVersionIsAConflictAndWritesNothingBack) {
  FakeApiClient api;
  api.seed(resources::kExtendedResourceClaims, claim("team-a", "c"));
  ExtendedResourceClaim first;
  ASSERT_TRUE(getObject(api, "team-a", "c", first).ok());
  ExtendedResourceClaim second = first;
  first.message = "first";
  ASSERT_TRUE(writeStatus(api, first, std::chrono::system_clock::now()).ok());

  second.message = "stale";
  ExtendedResourceClaim written;
  written.meta.name = "untouched";
  const Status sent = writeStatus(api, second, std::chrono::system_clock::now(), &written);
  EXPECT_TRUE(sent.isConflict()) << sent;
  EXPECT_EQ(written.meta.name, "untouched");
}

}  // namespace
}  // namespace ker

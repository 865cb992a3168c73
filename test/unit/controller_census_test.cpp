#include <gtest/gtest.h>

#include "controller/census.h"
#include "model/device_transitions.h"

namespace ker {
namespace {

std::shared_ptr<const ExtendedResource> device(const std::string& node, DevicePhase phase,
                                               bool unhealthy = false) {
  auto d = std::make_shared<ExtendedResource>();
  if (!node.empty()) {
    d->meta.labels[kNodeLabel] = node;
  }
  d->rawResourceName = "example.com/gpu";
  d->phase = phase;
  if (unhealthy) {
    EXPECT_TRUE(markDeviceUnhealthy(*d, Reason::kDeviceUnhealthy, "gone").ok());
  }
  return d;
}

TEST(Census, DevicesAreCountedByNodeResourcePhaseAndHealth) {
  auto series =
      deviceCensus({device("n1", DevicePhase::kAvailable), device("n1", DevicePhase::kAvailable),
                    device("n1", DevicePhase::kBound, true),
                    device("n2", DevicePhase::kAvailable, true), device("", DevicePhase::kBound)});
  ASSERT_EQ(series.size(), 4u);
  using L = std::vector<std::string>;
  EXPECT_EQ(series[0].labelValues, (L{"", "example.com/gpu", "Bound", "healthy"}));
  EXPECT_EQ(series[1].labelValues, (L{"n1", "example.com/gpu", "Available", "healthy"}));
  EXPECT_EQ(series[1].value, 2);
  EXPECT_EQ(series[2].labelValues, (L{"n1", "example.com/gpu", "Bound", "unhealthy"}));
  // A free device marked unhealthy is Pending, so nobody is offered it.
  EXPECT_EQ(series[3].labelValues, (L{"n2", "example.com/gpu", "Pending", "unhealthy"}));
}

TEST(Census, ClaimsAreCountedByNamespaceResourceAndPhaseAndVanishWhenNoneIsLeft) {
  auto claim = [](const std::string& ns, ClaimPhase phase) {
    auto c = std::make_shared<ExtendedResourceClaim>();
    c->meta.ns = ns;
    c->rawResourceName = "example.com/gpu";
    c->phase = phase;
    return std::shared_ptr<const ExtendedResourceClaim>(c);
  };
  metrics::Registry registry;
  std::vector<std::shared_ptr<const ExtendedResourceClaim>> claims = {
      claim("a", ClaimPhase::kLost), claim("a", ClaimPhase::kLost), claim("b", ClaimPhase::kBound)};
  exportCensus(
      registry, [] { return std::vector<std::shared_ptr<const ExtendedResource>>{}; },
      [&] { return claims; });
  std::string page = registry.render();
  EXPECT_NE(page.find("extended_resource_claims{namespace=\"a\",resource=\"example.com/gpu\","
                      "phase=\"Lost\"} 2\n"),
            std::string::npos)
      << page;
  claims.clear();
  page = registry.render();
  EXPECT_EQ(page.find("extended_resource_claims{"), std::string::npos) << page;
  EXPECT_NE(page.find("# TYPE extended_resource_devices gauge"), std::string::npos) << page;
}

}  // namespace
}  // namespace ker

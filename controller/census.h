#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/metrics.h"
#include "model/objects.h"

// The gauges of how many devices and claims are in each state, computed from the caches at
// each scrape (so a state nobody is in has no series rather than a stale one).
namespace ker {

// extended_resource_devices{node, resource, phase, health}: node is the kNodeLabel its agent
// published it with ("" for a device written by hand without one), health "unhealthy" while its
// agent's mark is on it, else "healthy".
inline constexpr const char* kDevicesMetric = "extended_resource_devices";
std::vector<metrics::LabeledValue> deviceCensus(
    const std::vector<std::shared_ptr<const ExtendedResource>>& devices);

// extended_resource_claims{namespace, resource, phase}: a claim counts once under each resource
// it asks for.
inline constexpr const char* kClaimsMetric = "extended_resource_claims";
std::vector<metrics::LabeledValue> claimCensus(
    const std::vector<std::shared_ptr<const ExtendedResourceClaim>>& claims);

// Registers both on `registry`, reading the caches through these at each scrape.
void exportCensus(
    metrics::Registry& registry,
    std::function<std::vector<std::shared_ptr<const ExtendedResource>>()> devices,
    std::function<std::vector<std::shared_ptr<const ExtendedResourceClaim>>()> claims);

}  // namespace ker

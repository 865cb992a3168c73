#include "controller/census.h"

#include <map>

#include "model/device_transitions.h"

namespace ker {

namespace {

std::vector<metrics::LabeledValue> counted(
    const std::map<std::vector<std::string>, double>& counts) {
  std::vector<metrics::LabeledValue> out;
  for (const auto& [labels, n] : counts) {
    out.push_back({labels, n});
  }
  return out;
}

}  // namespace

std::vector<metrics::LabeledValue> deviceCensus(
    const std::vector<std::shared_ptr<const ExtendedResource>>& devices) {
  std::map<std::vector<std::string>, double> counts;
  for (const auto& d : devices) {
    counts[{d->labelledNode(), d->rawResourceName, toString(d->phase),
            markedUnhealthy(*d) ? "unhealthy" : "healthy"}] += 1;
  }
  return counted(counts);
}

std::vector<metrics::LabeledValue> claimCensus(
    const std::vector<std::shared_ptr<const ExtendedResourceClaim>>& claims) {
  std::map<std::vector<std::string>, double> counts;
  for (const auto& c : claims) {
    for (const auto& resource : c->resourceNames()) {
      counts[{c->meta.ns, resource, toString(c->phase)}] += 1;
    }
  }
  return counted(counts);
}

void exportCensus(
    metrics::Registry& registry,
    std::function<std::vector<std::shared_ptr<const ExtendedResource>>()> devices,
    std::function<std::vector<std::shared_ptr<const ExtendedResourceClaim>>()> claims) {
  registry.gaugeSeriesFunc(kDevicesMetric,
                           "Devices by node (of the agent that published them), resource, phase "
                           "and health, as this controller's cache holds them.",
                           {"node", "resource", "phase", "health"},
                           [devices = std::move(devices)] { return deviceCensus(devices()); });
  registry.gaugeSeriesFunc(kClaimsMetric,
                           "Claims by namespace, resource and phase (Pending, Bound, Lost), as "
                           "this controller's cache holds them.",
                           {"namespace", "resource", "phase"},
                           [claims = std::move(claims)] { return claimCensus(claims()); });
}

}  // namespace ker

#include "agent/device_attribution.h"

namespace ker::agent {

const std::vector<std::string>& attributionLabels() {
  static const std::vector<std::string> kLabels = {"node",   "namespace", "pod",     "container",
                                                   "device", "device_id", "resource"};
  return kLabels;
}

std::vector<metrics::LabeledValue> attributionSeries(
    const std::string& node, const std::vector<ContainerDevices>& containers,
    const NodeFile& inventory) {
  std::vector<metrics::LabeledValue> out;
  for (const auto& c : containers) {
    for (const auto& device : c.devices) {
      const DeviceSpec* spec = inventory.find(device);
      out.push_back({{node, c.use.ns, c.use.pod, c.use.container, device,
                      spec ? spec->deviceID : "", spec ? spec->rawResourceName : ""},
                     1});
    }
  }
  return out;
}

void exportAttribution(metrics::Registry& registry, const std::string& node,
                       const DeviceUsers& users,
                       std::function<std::shared_ptr<const NodeFile>()> inventory) {
  registry.gaugeSeriesFunc(
      kAttributionMetric,
      "1 for each device of each running container the node agent gave devices to: joins a "
      "vendor exporter's series (labelled with the device ID) to the pod and container.",
      attributionLabels(), [node, &users, inventory = std::move(inventory)] {
        const auto inForce = inventory();
        return attributionSeries(node, users.all(), inForce ? *inForce : NodeFile{});
      });
}

}  // namespace ker::agent

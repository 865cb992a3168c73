#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/device_users.h"
#include "agent/node_file.h"
#include "common/metrics.h"

namespace ker::agent {

// extended_resource_agent_container_device_info: which container holds which device.
inline constexpr const char* kAttributionMetric = "extended_resource_agent_container_device_info";

// Its label names: node, namespace, pod, container, device (the ExtendedResource's name),
// device_id (the ID a vendor's exporter labels the device's series with, e.g. a GPU's UUID)
// and resource (its rawResourceName).
const std::vector<std::string>& attributionLabels();

// One series of value 1 per device of each container the agent gave devices to and that has
// not stopped: what joins a vendor exporter's per-device series to the pod and container using
// the device, since devices injected over NRI are invisible to the kubelet's PodResources API.
// A device the node file no longer lists keeps its series (the container still has it), with
// the ID and resource it had unknown, hence empty.
std::vector<metrics::LabeledValue> attributionSeries(
    const std::string& node, const std::vector<ContainerDevices>& containers,
    const NodeFile& inventory);

// Registers kAttributionMetric, computed at each scrape from users and the node file then in
// force, so a series appears with its container's creation and vanishes with its stop.
void exportAttribution(metrics::Registry& registry, const std::string& node,
                       const DeviceUsers& users,
                       std::function<std::shared_ptr<const NodeFile>()> inventory);

}  // namespace ker::agent

#pragma once

#include <string>
#include <vector>

#include "agent/cdi_specs.h"
#include "agent/node_file.h"

// Devices the agent finds by itself (the node file's discover sources): the pure decisions
// from what the sources say to the devices published, updated and withdrawn through the
// inventory plan like the ones a person lists. The probe reads the specs and runs the commands.
namespace ker::agent {

// A found device's object name: the node's name, '-', and its ID lowercased with each
// character outside [a-z0-9.-] as '-' (GPU-7d3c… on node-1: node-1-gpu-7d3c…); "" when that
// is no valid object name.
std::string discoveredName(const std::string& node, const std::string& id);

// The devices a CDI source finds: one per device of its kind's specs, but the excluded
// (aggregate) names, with the CDI name as ID and cdiDevice, so the runtime applies the spec,
// and the device nodes the spec gives it at the host's own paths (checked for health and
// guarded like the node file's; one the spec maps from elsewhere is left to the runtime).
std::vector<DeviceSpec> devicesFromCdi(const DiscoverySource& source,
                                       const std::vector<CdiSpec>& specs, const std::string& node);

// The devices a command source found, from its output:
//   {"devices": [{"id": "GPU-…", "properties": {"memory": "40Gi"},
//                 "deviceNodes": ["/dev/nvidia0"], "cdiDevice": "nvidia.com/gpu=GPU-…"}]}
// (properties, deviceNodes and cdiDevice optional). Throws std::invalid_argument naming the
// field when the output is not that.
std::vector<DeviceSpec> devicesFromCommand(const DiscoverySource& source, const std::string& output,
                                           const std::string& node);

// The node file's own devices, then the found ones whose names are not taken yet and that are
// not a device already listed under another name (deviceKeys; the file's entries win, among
// found devices the first). Each one left out adds a line to `problems`.
NodeFile withDiscovered(const NodeFile& file, const std::vector<DeviceSpec>& found,
                        std::vector<std::string>& problems);

}  // namespace ker::agent

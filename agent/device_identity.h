#pragma once

#include <map>
#include <string>
#include <vector>

#include "agent/node_file.h"
#include "model/objects.h"

// What makes two inventory entries one device. The agent gives a device to one pod at a time by
// what it is, not by the name it is listed under: a name can change while a container has the
// device (an entry renamed in the node file, or the device listed there and also discovered).
namespace ker::agent {

// The keys that identify the device on its node: its name ("name:k80-node-1-gpu0"), its
// deviceID within its resource ("id:nvidia.com/gpu=GPU-7d3c…") and, when it has one, its CDI
// name ("cdi:nvidia.com/gpu=GPU-7d3c…"). Two entries sharing a key are the same device.
std::vector<std::string> deviceKeys(const DeviceSpec& device);
std::string deviceNameKey(const std::string& name);
std::string deviceIdKey(const std::string& rawResourceName, const std::string& deviceID);

// The first key `a` and `b` share, "" when they are different devices.
std::string sharedKey(const DeviceSpec& a, const DeviceSpec& b);

// Every key this agent knows for a device name: those of the inventory's entry, and the
// deviceID key of this node's published ExtendedResource of that name. The published object
// outlives the entry while a rename or a refused file waits, so a container given the device
// under its old name is still known by what the device is.
using KeysByName = std::map<std::string, std::vector<std::string>>;
KeysByName knownKeys(const NodeFile& inventory, const std::vector<ExtendedResource>& published);

}  // namespace ker::agent

#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The node configuration file of extended-resource-node-agent: the devices this node has and
// what a container needs to use each one. The format is documented in agent/README.md, with a
// sample in config/node-agent/node-devices.yaml.
namespace ker::agent {

// A device node the container gets (created in its /dev, allowed by its device cgroup).
struct DeviceNode {
  std::string path;                // absolute, under /dev; the same path in the container
  std::string permissions = "rw";  // cgroup access, some of "rwm"
  bool operator==(const DeviceNode&) const = default;
};

// A bind mount from the host into the container.
struct DeviceMount {
  std::string hostPath;
  std::string containerPath;
  bool readOnly = true;
  bool operator==(const DeviceMount&) const = default;
};

// A command the agent runs at every sync to tell whether the device works: exit status 0 is
// healthy. It gets EXTENDED_RESOURCE_DEVICE_NAME, _DEVICE_ID and _HOST_ROOT in its
// environment, so one script can serve many devices.
struct HealthCheckSpec {
  std::vector<std::string> command;  // argv; argv[0] looked up in PATH
  std::chrono::milliseconds timeout{std::chrono::seconds(5)};
  bool operator==(const HealthCheckSpec&) const = default;
};

struct DeviceSpec {
  std::string name;  // the ExtendedResource's name
  std::string rawResourceName;
  std::string deviceID;
  std::map<std::string, std::string> properties;
  std::vector<DeviceNode> deviceNodes;
  std::map<std::string, std::string> env;
  std::vector<DeviceMount> mounts;
  std::optional<HealthCheckSpec> healthCheck;
  // The device's fully qualified CDI name (vendor/class=name): a container given the device
  // names it to the runtime, which applies the vendor's spec. "" for none.
  std::string cdiDevice;
  bool operator==(const DeviceSpec&) const = default;
};

// A source of devices the agent finds by itself at every sync, instead of a person listing
// them: the devices of the CDI specs of one kind, or what a command prints (agent/discovery.h).
struct DiscoverySource {
  std::string rawResourceName;
  std::map<std::string, std::string> properties;  // given to every device found
  // The CDI kind ("vendor/class") whose devices are found, "" for a command source; devices
  // named in excludeNames (aggregates such as "all") are not devices.
  std::string cdiKind;
  std::vector<std::string> excludeNames;
  std::vector<std::string> command;  // argv of a command source
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
  bool operator==(const DiscoverySource&) const = default;
};

struct NodeFile {
  std::vector<DeviceSpec> devices;  // in file order; names unique
  std::vector<DiscoverySource> discover;
  // rawResourceName -> the environment variable that lists a container's device IDs of that
  // resource; resources not named here use defaultEnvName().
  std::map<std::string, std::string> envNames;

  const DeviceSpec* find(std::string_view name) const;
  // The variable that carries the allocated device IDs of rawResourceName in a container.
  std::string envNameFor(const std::string& rawResourceName) const;
  bool operator==(const NodeFile&) const = default;
};

// Whether `path` is a device node path the node file accepts: absolute, under /dev/, without
// "." or ".." parts.
bool isDeviceNodePath(std::string_view path);

// "EXTENDED_RESOURCE_" and the resource name upper-cased with every character that is not a
// letter or digit as '_': nvidia.com/gpu -> EXTENDED_RESOURCE_NVIDIA_COM_GPU.
std::string defaultEnvName(std::string_view rawResourceName);
// What every defaultEnvName starts with.
inline constexpr std::string_view kDefaultEnvPrefix = "EXTENDED_RESOURCE_";

// Parses and validates the file's text. Throws std::invalid_argument naming the offending
// field (devices[2].deviceNodes[0].path: ...); nothing of a file that fails is used.
NodeFile parseNodeFile(const std::string& yamlText);

}  // namespace ker::agent

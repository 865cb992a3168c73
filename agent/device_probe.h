#pragma once

#include <optional>
#include <string>

#include "agent/health.h"
#include "agent/injection.h"
#include "agent/node_file.h"

// What the host has: stat of device nodes and mount sources, and the devices' health checks.
// The only place the agent looks at the host.
namespace ker::agent {

class DeviceProbe {
 public:
  // hostRoot prefixes every host path: "" when the agent runs on the host, "/host" when the
  // host's /dev is mounted at /host/dev in its container.
  explicit DeviceProbe(std::string hostRoot) : hostRoot_(std::move(hostRoot)) {}
  virtual ~DeviceProbe() = default;

  // The device node at path, nullopt when absent or not a character or block device.
  virtual std::optional<DeviceNodeInfo> deviceNode(const std::string& path) const;
  // Healthy when every device node exists (as a device), every mount source exists and the
  // device's health check, if it has one, exits 0; otherwise the first problem found.
  virtual HealthObservation check(const DeviceSpec& device) const;

 private:
  std::string hostRoot_;
};

}  // namespace ker::agent

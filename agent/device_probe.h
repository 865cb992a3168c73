#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/cdi_specs.h"
#include "agent/command_runner.h"
#include "agent/health.h"
#include "agent/injection.h"
#include "agent/node_file.h"

// What the host has: stat of device nodes and mount sources, the CDI specs, and the devices'
// health checks. The only place the agent looks at the host.
namespace ker::agent {

class DeviceProbe {
 public:
  // hostRoot prefixes every host path: "" when the agent runs on the host, "/host" when the
  // host's /dev is mounted at /host/dev in its container.
  // cdiSpecDirs: the runtime's CDI spec directories, as host paths.
  explicit DeviceProbe(std::string hostRoot, std::vector<std::string> cdiSpecDirs = {})
      : hostRoot_(std::move(hostRoot)), cdiSpecDirs_(std::move(cdiSpecDirs)) {}
  virtual ~DeviceProbe() = default;

  // The device node at path, nullopt when absent or not a character or block device.
  virtual std::optional<DeviceNodeInfo> deviceNode(const std::string& path) const;
  // The host path `path` names once its symlinks are resolved; `path` itself when it cannot be
  // (absent, or outside what the agent's host root shows it, e.g. only /dev in its container).
  virtual std::string resolve(const std::string& path) const;
  // The CDI devices the spec directories define now.
  virtual CdiDevices cdiDevices() const;
  const std::vector<std::string>& cdiSpecDirs() const { return cdiSpecDirs_; }
  // Runs a command discovery source (its stdout is the result; its stderr goes to the agent's
  // log), with EXTENDED_RESOURCE_HOST_ROOT set as for health checks.
  virtual CommandResult runDiscoveryCommand(const DiscoverySource& source) const;
  // Healthy when every device node exists (as a device), every mount source exists, its CDI
  // device (if it names one) is among cdiDevices (what cdiDevices() read, once per sync for
  // all devices), and the device's health check, if it has one, exits 0; otherwise the first
  // problem found.
  virtual HealthObservation check(const DeviceSpec& device,
                                  const std::set<std::string>& cdiDevices) const;

 private:
  std::string hostRoot_;
  std::vector<std::string> cdiSpecDirs_;
};

}  // namespace ker::agent

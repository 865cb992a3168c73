#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "agent/injection.h"

namespace ker::agent {

// A container that has devices and the names of those devices.
struct ContainerDevices {
  DeviceUse use;
  std::vector<std::string> devices;
};

// Which containers on this node were given which devices and have not stopped: what the agent
// consults (decideInjection's users) before it gives a device to a container of another pod.
// Built from the runtime's own reports: every container it lists on (re)connecting, each
// creation the agent answered with devices, and each container's stop and removal.
class DeviceUsers {
 public:
  // The runtime's full list (NRI Synchronize): every container not stopped whose
  // kInjectedAnnotation names devices. Replaces what was known.
  void reset(const std::map<std::string, PodIdentity>& podsBySandbox,
             const std::vector<RuntimeContainer>& containers);
  // The agent gave `devices` to this container (its answer to the container's creation).
  void add(const std::string& containerId, const DeviceUse& use,
           const std::vector<std::string>& devices);
  // The container stopped, or was removed (or its creation undone).
  void remove(const std::string& containerId);

  // The containers that have each of these devices now, by device.
  std::map<std::string, std::vector<DeviceUse>> of(const std::vector<std::string>& devices) const;
  // Every container that has devices now, in container ID order.
  std::vector<ContainerDevices> all() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, ContainerDevices> byContainer_;  // guarded by mu_
};

// The device names of a container's kInjectedAnnotation (empty when it has none).
std::vector<std::string> injectedDevices(const std::map<std::string, std::string>& annotations);

}  // namespace ker::agent

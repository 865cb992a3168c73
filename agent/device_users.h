#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "agent/device_identity.h"
#include "agent/injection.h"
#include "agent/node_file.h"

namespace ker::agent {

// A container that has devices: their names, and the keys that identify them (deviceKeys) as
// they were when it got them.
struct ContainerDevices {
  DeviceUse use;
  std::vector<std::string> devices;
  std::vector<std::string> keys;
};

// Which containers on this node were given which devices and have not stopped: what the agent
// consults (decideInjection's users) before it gives a device to a container of another pod.
// Built from the runtime's own reports: every container it lists on (re)connecting, each
// creation the agent answered with devices, and each container's stop and removal. A device is
// looked up by what it is (its keys), so a container keeps it under whatever name it is
// listed by now.
class DeviceUsers {
 public:
  // The runtime's full list (NRI Synchronize): every container not stopped whose
  // kInjectedAnnotation names devices, identified by its kInjectedKeysAnnotation. One given its
  // devices by an agent that wrote no keys is identified by their names and by every key
  // `known` lists for them. A container listed again keeps the keys it was known by before,
  // so a name that has since left the inventory never makes its device look free. Replaces
  // what was known of the others.
  void reset(const std::map<std::string, PodIdentity>& podsBySandbox,
             const std::vector<RuntimeContainer>& containers, const KeysByName& known);
  // The agent gave this container the devices of `given` (its answer to the container's creation).
  void add(const std::string& containerId, const DeviceUse& use, const Adjustment& given);
  // The container stopped, or was removed (or its creation undone).
  void remove(const std::string& containerId);

  // The containers that have a device of one of these keys now, by key.
  std::map<std::string, std::vector<DeviceUse>> of(const std::vector<std::string>& keys) const;
  // Every container that has devices now, in container ID order.
  std::vector<ContainerDevices> all() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, ContainerDevices> byContainer_;  // guarded by mu_
};

// The device names of a container's kInjectedAnnotation (empty when it has none).
std::vector<std::string> injectedDevices(const std::map<std::string, std::string>& annotations);

}  // namespace ker::agent

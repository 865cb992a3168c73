#include "agent/device_users.h"

#include <algorithm>

#include "common/comma_list.h"

namespace ker::agent {

std::vector<std::string> injectedDevices(const std::map<std::string, std::string>& annotations) {
  std::vector<std::string> out;
  auto it = annotations.find(kInjectedAnnotation);
  if (it == annotations.end()) {
    return out;
  }
  return splitCommaList(it->second);
}

void DeviceUsers::reset(const std::map<std::string, PodIdentity>& podsBySandbox,
                        const std::vector<RuntimeContainer>& containers) {
  std::map<std::string, ContainerDevices> next;
  for (const auto& c : containers) {
    std::vector<std::string> devices = injectedDevices(c.annotations);
    if (c.stopped || devices.empty()) {
      continue;
    }
    DeviceUse use{c.id, c.name, "", "", ""};
    if (auto pod = podsBySandbox.find(c.podSandboxId); pod != podsBySandbox.end()) {
      use.podUid = pod->second.uid;
      use.ns = pod->second.ns;
      use.pod = pod->second.name;
    }
    next[c.id] = ContainerDevices{std::move(use), std::move(devices)};
  }
  std::lock_guard lock(mu_);
  byContainer_ = std::move(next);
}

void DeviceUsers::add(const std::string& containerId, const DeviceUse& use,
                      const std::vector<std::string>& devices) {
  std::lock_guard lock(mu_);
  byContainer_[containerId] = ContainerDevices{use, devices};
}

void DeviceUsers::remove(const std::string& containerId) {
  std::lock_guard lock(mu_);
  byContainer_.erase(containerId);
}

std::map<std::string, std::vector<DeviceUse>> DeviceUsers::of(
    const std::vector<std::string>& devices) const {
  std::map<std::string, std::vector<DeviceUse>> out;
  std::lock_guard lock(mu_);
  for (const auto& [id, entry] : byContainer_) {
    for (const auto& d : entry.devices) {
      if (std::find(devices.begin(), devices.end(), d) != devices.end()) {
        out[d].push_back(entry.use);
      }
    }
  }
  return out;
}

std::vector<ContainerDevices> DeviceUsers::all() const {
  std::vector<ContainerDevices> out;
  std::lock_guard lock(mu_);
  for (const auto& [id, entry] : byContainer_) {
    out.push_back(entry);
  }
  return out;
}

}  // namespace ker::agent

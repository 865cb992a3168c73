#include "agent/device_users.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/comma_list.h"

namespace ker::agent {

namespace {

// The keys of kInjectedKeysAnnotation; nullopt when the container has none or they do not read
// as a list of strings (then the names are all there is to go by).
std::optional<std::vector<std::string>> injectedKeys(
    const std::map<std::string, std::string>& annotations) {
  auto it = annotations.find(kInjectedKeysAnnotation);
  if (it == annotations.end()) {
    return std::nullopt;
  }
  const auto parsed = nlohmann::json::parse(it->second, nullptr, false);
  if (!parsed.is_array()) {
    return std::nullopt;
  }
  std::vector<std::string> keys;
  for (const auto& k : parsed) {
    if (!k.is_string()) {
      return std::nullopt;
    }
    keys.push_back(k.get<std::string>());
  }
  return keys;
}

void addUnique(std::vector<std::string>& to, const std::vector<std::string>& keys) {
  for (const auto& k : keys) {
    if (std::find(to.begin(), to.end(), k) == to.end()) {
      to.push_back(k);
    }
  }
}

}  // namespace

std::vector<std::string> injectedDevices(const std::map<std::string, std::string>& annotations) {
  std::vector<std::string> out;
  auto it = annotations.find(kInjectedAnnotation);
  if (it == annotations.end()) {
    return out;
  }
  return splitCommaList(it->second);
}

void DeviceUsers::reset(const std::map<std::string, PodIdentity>& podsBySandbox,
                        const std::vector<RuntimeContainer>& containers, const KeysByName& known) {
  std::lock_guard lock(mu_);
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
    std::vector<std::string> keys;
    if (auto recorded = injectedKeys(c.annotations)) {
      keys = std::move(*recorded);
    } else {
      for (const auto& name : devices) {
        addUnique(keys, {deviceNameKey(name)});
        if (auto k = known.find(name); k != known.end()) {
          addUnique(keys, k->second);
        }
      }
    }
    if (auto before = byContainer_.find(c.id); before != byContainer_.end()) {
      addUnique(keys, before->second.keys);
    }
    next[c.id] = ContainerDevices{std::move(use), std::move(devices), std::move(keys)};
  }
  byContainer_ = std::move(next);
}

void DeviceUsers::add(const std::string& containerId, const DeviceUse& use,
                      const Adjustment& given) {
  std::lock_guard lock(mu_);
  byContainer_[containerId] = ContainerDevices{use, given.deviceNames, given.deviceKeys};
}

void DeviceUsers::remove(const std::string& containerId) {
  std::lock_guard lock(mu_);
  byContainer_.erase(containerId);
}

std::map<std::string, std::vector<DeviceUse>> DeviceUsers::of(
    const std::vector<std::string>& keys) const {
  std::map<std::string, std::vector<DeviceUse>> out;
  std::lock_guard lock(mu_);
  for (const auto& [id, entry] : byContainer_) {
    for (const auto& k : entry.keys) {
      if (std::find(keys.begin(), keys.end(), k) != keys.end()) {
        out[k].push_back(entry.use);
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

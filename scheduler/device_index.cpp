#include "scheduler/device_index.h"

#include "common/node_selector.h"

namespace ker {

std::set<std::string> pinnedNodes(const NodeSelector& selector) {
  std::set<std::string> nodes;
  for (const auto& term : selector.terms) {
    bool pinned = false;
    for (const auto& req : term.matchFields) {
      if (req.key == "metadata.name" && req.op == "In") {
        nodes.insert(req.values.begin(), req.values.end());
        pinned = true;
        break;
      }
    }
    if (!pinned) {
      return {};
    }
  }
  return nodes;
}

void DeviceIndex::unindex(const ExtendedResource& device) {
  const auto& name = device.meta.name;
  auto byRes = pinned_.find(device.rawResourceName);
  if (byRes != pinned_.end()) {
    for (const auto& node : pinnedNodes(device.nodeAffinity)) {
      auto it = byRes->second.find(node);
      if (it != byRes->second.end()) {
        it->second.erase(name);
        if (it->second.empty()) {
          byRes->second.erase(it);
        }
      }
    }
  }
  auto fl = floating_.find(device.rawResourceName);
  if (fl != floating_.end()) {
    fl->second.erase(name);
  }
}

void DeviceIndex::upsert(DevicePtr device) {
  const std::string name = device->meta.name;
  {
    std::unique_lock lock(mu_);
    auto it = devices_.find(name);
    if (it != devices_.end()) {
      unindex(*it->second);
    }
    auto nodes = pinnedNodes(device->nodeAffinity);
    if (nodes.empty()) {
      floating_[device->rawResourceName].insert(name);
    } else {
      for (const auto& node : nodes) {
        pinned_[device->rawResourceName][node].insert(name);
      }
    }
    devices_[name] = device;
  }
  if (device->phase != DevicePhase::kAvailable) {
    // The write a reservation stood in for is now visible.
    std::lock_guard lock(reservationsMu_);
    reservations_.erase(name);
  }
}

void DeviceIndex::remove(const std::string& name) {
  {
    std::unique_lock lock(mu_);
    auto it = devices_.find(name);
    if (it == devices_.end()) {
      return;
    }
    unindex(*it->second);
    devices_.erase(it);
  }
  std::lock_guard lock(reservationsMu_);
  reservations_.erase(name);
}

DevicePtr DeviceIndex::get(const std::string& name) const {
  std::shared_lock lock(mu_);
  auto it = devices_.find(name);
  return it == devices_.end() ? nullptr : it->second;
}

size_t DeviceIndex::size() const {
  std::shared_lock lock(mu_);
  return devices_.size();
}

bool DeviceIndex::reservedByOther(const std::string& name, const std::string& podUid,
                                  Clock::time_point now) const {
  auto it = reservations_.find(name);
  return it != reservations_.end() && it->second.podUid != podUid && it->second.expires > now;
}

std::vector<DevicePtr> DeviceIndex::freeOnNode(
    const std::string& rawResourceName, const std::string& nodeName,
    const std::map<std::string, std::string>& nodeLabels, const std::string& exceptPodUid) const {
  std::vector<DevicePtr> candidates;
  {
    std::shared_lock lock(mu_);
    auto consider = [&](const std::string& name) {
      auto it = devices_.find(name);
      if (it == devices_.end()) {
        return;
      }
      const auto& dev = *it->second;
      if (dev.invalid.empty() && dev.phase == DevicePhase::kAvailable && !dev.meta.deleting &&
          matches(dev.nodeAffinity, nodeName, nodeLabels)) {
        candidates.push_back(it->second);
      }
    };
    if (auto byRes = pinned_.find(rawResourceName); byRes != pinned_.end()) {
      if (auto onNode = byRes->second.find(nodeName); onNode != byRes->second.end()) {
        for (const auto& name : onNode->second) {
          consider(name);
        }
      }
    }
    if (auto fl = floating_.find(rawResourceName); fl != floating_.end()) {
      for (const auto& name : fl->second) {
        consider(name);
      }
    }
  }
  std::lock_guard lock(reservationsMu_);
  if (reservations_.empty()) {
    return candidates;
  }
  const auto now = Clock::now();
  std::vector<DevicePtr> result;
  result.reserve(candidates.size());
  for (auto& dev : candidates) {
    if (!reservedByOther(dev->meta.name, exceptPodUid, now)) {
      result.push_back(std::move(dev));
    }
  }
  return result;
}

bool DeviceIndex::reserve(const std::vector<std::string>& names, const std::string& podUid,
                          Clock::duration ttl) {
  std::lock_guard lock(reservationsMu_);
  const auto now = Clock::now();
  for (const auto& name : names) {
    if (reservedByOther(name, podUid, now)) {
      return false;
    }
  }
  for (const auto& name : names) {
    reservations_[name] = Reservation{podUid, now + ttl};
  }
  return true;
}

void DeviceIndex::unreserve(const std::string& podUid) {
  std::lock_guard lock(reservationsMu_);
  std::erase_if(reservations_, [&](const auto& kv) { return kv.second.podUid == podUid; });
}

size_t DeviceIndex::reservedCount() const {
  std::lock_guard lock(reservationsMu_);
  return reservations_.size();
}

}  // namespace ker

#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/objects.h"

namespace ker {

using DevicePtr = std::shared_ptr<const ExtendedResource>;

// The extender's view of every device, indexed for the filter's hot path, plus the devices
// that binds in flight have taken but the watch has not yet shown as Bound. Fed by the device
// informer's handlers; thread-safe; no I/O.
class DeviceIndex {
 public:
  using Clock = std::chrono::steady_clock;

  void upsert(DevicePtr device);
  void remove(const std::string& name);
  DevicePtr get(const std::string& name) const;
  size_t size() const;

  // Devices of rawResourceName that are valid, Available, reachable from the node, and not
  // reserved by a bind of a pod other than exceptPodUid.
  std::vector<DevicePtr> freeOnNode(const std::string& rawResourceName,
                                    const std::string& nodeName,
                                    const std::map<std::string, std::string>& nodeLabels,
                                    const std::string& exceptPodUid = {}) const;

  // Takes the devices for a pod's bind, all or none: false when any is already reserved by
  // another pod. Reservations end with unreserve(), when the device is seen in any phase but
  // Available, or after `ttl` as a safety net against a bind that never finished.
  bool reserve(const std::vector<std::string>& names, const std::string& podUid,
               Clock::duration ttl = std::chrono::seconds(60));
  void unreserve(const std::string& podUid);
  size_t reservedCount() const;

 private:
  struct Reservation {
    std::string podUid;
    Clock::time_point expires;
  };
  bool reservedByOther(const std::string& name, const std::string& podUid,
                       Clock::time_point now) const;
  void unindex(const ExtendedResource& device);

  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, DevicePtr> devices_;
  // Devices whose affinity names its nodes through matchFields metadata.name In, by resource
  // and node: the common case, answered without evaluating every device.
  std::unordered_map<std::string, std::unordered_map<std::string, std::set<std::string>>> pinned_;
  // Every other device (label-based affinity), by resource; evaluated per node.
  std::unordered_map<std::string, std::set<std::string>> floating_;

  mutable std::mutex reservationsMu_;
  std::unordered_map<std::string, Reservation> reservations_;  // device name -> holder
};

// The node names a selector can only match, when every term pins metadata.name with In;
// empty when the selector may match nodes by labels.
std::set<std::string> pinnedNodes(const NodeSelector& selector);

}  // namespace ker

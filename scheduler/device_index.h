#pragma once

#include <atomic>
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
  std::vector<DevicePtr> freeOnNode(const std::string& rawResourceName, const std::string& nodeName,
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
  // A device as the filter's hot path needs it, with what never changes for one version of
  // the object worked out once at upsert instead of once per node and request.
  struct Entry {
    DevicePtr device;
    bool eligible = false;  // valid, Available and not being deleted
    // Its affinity is single-value metadata.name In terms only, so every node it is indexed
    // under matches without evaluating the selector.
    bool pinnedOnly = false;
  };
  bool reservedByOther(const std::string& name, const std::string& podUid,
                       Clock::time_point now) const;
  void unindex(const ExtendedResource& device);

  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, DevicePtr> devices_;
  // Devices whose affinity names its nodes through matchFields metadata.name In, by resource
  // and node, sorted by name: the common case, answered without looking at other nodes'
  // devices.
  std::unordered_map<std::string, std::unordered_map<std::string, std::vector<Entry>>> pinned_;
  // Every other device (label-based affinity), by resource and name; evaluated per node.
  std::unordered_map<std::string, std::map<std::string, Entry>> floating_;

  mutable std::mutex reservationsMu_;
  std::unordered_map<std::string, Reservation> reservations_;  // device name -> holder
  // reservations_.size(), readable without the lock: the filter skips the lock when no bind
  // is in flight, which is nearly always.
  std::atomic<size_t> reservationCount_{0};
};

// The node names a selector can only match, when every term pins metadata.name with In;
// empty when the selector may match nodes by labels.
std::set<std::string> pinnedNodes(const NodeSelector& selector);

}  // namespace ker

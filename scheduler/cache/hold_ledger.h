#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ker {

// Why the extender keeps a device for a pod before the API shows the device taken.
enum class HoldKind : uint8_t {
  kFilter,      // the filter chose it for the pod; ends at the pod's bind or soon after
  kBind,        // the pod's bind is writing it; ends when the device watch shows the write
  kNomination,  // a preemption freed it for the pod; outlives the device's phase changes
};

// What the extender has promised to which pod and the device cache does not show yet: the one
// ledger of holds. One meaning for every kind: while a device's hold is unexpired, no pod
// but its holder may count on the device. A device has at most one hold; the kinds differ
// only in how they start, what replaces them and what ends them (each operation says).
// Not thread-safe (DeviceIndex guards it), no clock (times are the caller's), no I/O.
class HoldLedger {
 public:
  using Clock = std::chrono::steady_clock;
  // The nodes a device is pinned to, for nodeCounts(); empty when unknown or label-placed.
  using NodesOf = std::function<std::vector<std::string>(const std::string& device)>;

  // Whether a pod other than podUid has an unexpired hold on the device.
  bool heldByOther(const std::string& device, const std::string& podUid,
                   Clock::time_point now) const;

  // A bind takes the devices, all or none: false when any is held by another pod. Whatever
  // the filter held or a preemption nominated for the pod, here or on another node, gives
  // way to what the bind takes. Ends at seenTaken (its write is visible), dropAllHolds (the
  // bind was undone) or now + ttl.
  bool holdForBind(const std::vector<std::string>& devices, const std::string& podUid,
                   Clock::time_point now, Clock::duration ttl, const NodesOf& nodesOf);
  // The filter holds the devices it chose for the pod on the one node it let through, until
  // the pod's bind, so that pods filtered meanwhile do not count on them (kube-scheduler picks
  // the next pods' nodes before the earlier pods' binds are called). All or none: false when
  // any is held by another pod. Replaces the pod's earlier filter hold (one node at a time); a
  // device the pod's own bind or nomination holds stays so. Ends at the pod's bind (wherever
  // it binds), dropFilterHold, dropAllHolds, seenTaken, or now + ttl. Records `node` as the
  // filter's choice for the pod until max(ttl, choiceTtl) (filterChoice). Expired filter holds
  // and choices of every pod end here rather than pile up (a later plugin rejected the node,
  // the scheduler lost its lease).
  bool holdForFilter(const std::string& node, const std::vector<std::string>& devices,
                     const std::string& podUid, Clock::time_point now, Clock::duration ttl,
                     Clock::duration choiceTtl, const NodesOf& nodesOf);
  // An undone bind attempt: every device the pod holds, and `devices` (what the attempt took)
  // where no other pod holds them unexpired, become the pod's filter hold on `node` until
  // now + ttl, so that filters keep them from other pods until its next attempt. By name, not
  // by what is still held: the device watch ends a bind hold as soon as it shows the
  // attempt's write, and the undo makes the device Available again.
  void holdAgain(const std::string& node, const std::vector<std::string>& devices,
                 const std::string& podUid, Clock::time_point now, Clock::duration ttl,
                 const NodesOf& nodesOf);
  // A preemption nominates the devices it frees for the pod on `node`, kept while its victims
  // terminate and their claims are released: unlike the other kinds it outlives the device
  // being seen Bound (to the victim's claim) and Available again. All or none: false when any
  // is held by another pod. Replaces the pod's earlier nomination (one node at a time) and
  // takes over its own holds of those devices. Ends at the pod's bind, dropNomination,
  // dropAllHolds or now + ttl; expired nominations of every pod end here.
  bool nominate(const std::string& node, const std::vector<std::string>& devices,
                const std::string& podUid, Clock::time_point now, Clock::duration ttl,
                const NodesOf& nodesOf);

  // The device watch shows the device in a phase but Available: the write a filter or bind
  // hold stood in for is visible, so such a hold ends. A nomination stays.
  void seenTaken(const std::string& device);
  // The device is gone: its hold ends.
  void forgetDevice(const std::string& device);
  // Every hold, nomination and choice of the pod ends (its bind was undone for good).
  void dropAllHolds(const std::string& podUid);
  // The pod's filter hold and choice end, its bind's holds stay (deleted or bound).
  void dropFilterHold(const std::string& podUid);
  void dropNomination(const std::string& podUid);

  // The node of the pod's unexpired filter hold, "" when there is none.
  std::string filterHoldNode(const std::string& podUid, Clock::time_point now) const;
  // The node of the pod's unexpired filter hold, else of its unexpired choice, else "".
  std::string filterChoice(const std::string& podUid, Clock::time_point now) const;
  // The node of the pod's unexpired nomination, "" when there is none.
  std::string nominatedNode(const std::string& podUid, Clock::time_point now) const;

  // Devices with a hold of any kind, expired or not.
  size_t size() const { return devices_.size(); }
  // Devices with a hold of this kind.
  size_t devices(HoldKind kind) const { return byKind_[static_cast<size_t>(kind)]; }
  // Pods with a filter hold, with a nomination.
  size_t filteredPods() const { return filters_.size(); }
  size_t nominatedPods() const { return nominations_.size(); }

  // Holds per pinned node (NodesOf at the time each began), looked up by a name view: a node
  // with none needs no device-by-device check against the ledger.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view name) const { return std::hash<std::string_view>{}(name); }
  };
  using NodeCounts = std::unordered_map<std::string, uint32_t, NameHash, std::equal_to<>>;
  const NodeCounts& nodeCounts() const { return nodes_; }

 private:
  struct Hold {
    std::string podUid;
    HoldKind kind;
    Clock::time_point expires;
    std::vector<std::string> nodes;  // the device's pinned nodes when the hold began
  };
  // What a pod's filter hold or nomination covers.
  struct PodHold {
    std::string node;
    std::vector<std::string> devices;
    Clock::time_point expires;
  };
  struct Choice {
    std::string node;
    Clock::time_point expires;
  };
  using Holds = std::unordered_map<std::string, Hold>;

  void add(const std::string& device, const std::string& podUid, HoldKind kind,
           Clock::time_point expires, const NodesOf& nodesOf);
  void erase(Holds::iterator it);
  // Ends the pod's per-pod record of `kind` and the device holds of that kind it covers.
  void endPodHold(std::unordered_map<std::string, PodHold>& records, HoldKind kind,
                  const std::string& podUid);
  // endPodHold for every record of `kind` expired by `now`.
  void endExpiredPodHolds(std::unordered_map<std::string, PodHold>& records, HoldKind kind,
                          Clock::time_point now);

  Holds devices_;                                         // device name -> its hold
  std::unordered_map<std::string, PodHold> filters_;      // pod UID -> its filter hold
  std::unordered_map<std::string, PodHold> nominations_;  // pod UID -> its nomination
  std::unordered_map<std::string, Choice> choices_;       // pod UID -> the filter's choice
  NodeCounts nodes_;
  std::array<size_t, 3> byKind_{};
};

}  // namespace ker

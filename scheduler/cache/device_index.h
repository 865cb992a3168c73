#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/node_selector.h"
#include "model/objects.h"
#include "model/suitability.h"
#include "scheduler/cache/hold_ledger.h"
#include "scheduler/cache/node_slots.h"

namespace ker {

using DevicePtr = std::shared_ptr<const ExtendedResource>;

// The extender's view of every device, indexed for the filter's hot path, plus the devices
// the extender has promised to pods and the watch does not show yet (HoldLedger). Fed by the device
// informer's handlers; thread-safe; no I/O.
class DeviceIndex {
 public:
  using Clock = std::chrono::steady_clock;

  void upsert(DevicePtr device);
  void remove(const std::string& name);

  // The device names a Bound or Lost claim's status lists (allocated or lost), by resource
  // (ExtendedResourceClaim::heldByResource), fed by the claim informer: such a device of that
  // resource ("": of any resource) is never free, even when Available or without a status,
  // because the pod holding the claim may still be using it (recreated under its name, or
  // freed by hand); the controller binds it back to the claim. Replaces what the claim listed
  // before; no names (a Pending or deleted claim) frees them.
  using Holds = std::map<std::string, std::vector<std::string>>;
  void setClaimDevices(const std::string& claimKey, Holds holds);
  void setClaimDevices(const std::string& claimKey, const std::string& rawResourceName,
                       std::vector<std::string> names) {
    setClaimDevices(claimKey, Holds{{rawResourceName, std::move(names)}});
  }
  size_t claimedCount() const;
  // One claim event from the claim informer, under one lock (the filter's readers wait for a
  // claim's bind once): setClaimDevices with `names`, and `claim`, what decides whether the
  // devices still naming the claim are free again (freedByClaim). A device naming a claim the
  // index does not know is not free: the claim watch may lag the device watch.
  void setClaim(const std::string& claimKey, Holds holds, const ClaimAllocation& claim);
  void setClaim(const std::string& claimKey, const std::string& rawResourceName,
                std::vector<std::string> names, const ClaimAllocation& claim) {
    setClaim(claimKey, Holds{{rawResourceName, std::move(names)}}, claim);
  }
  // The claim was deleted, `last` its final state: devices its release freed stay free (a
  // deleted claim is never bound again), kept only while some device still names it.
  void claimDeleted(const std::string& claimKey, const ClaimAllocation& last);
  // The claim the device names, as setClaim last gave it; nullopt for none.
  std::optional<ClaimAllocation> claimOf(const ExtendedResource& device) const;
  // offerable() with the claim the device names as the index has it.
  bool offerable(const ExtendedResource& device) const;
  DevicePtr get(const std::string& name) const;
  size_t size() const;

  // Devices of rawResourceName that are valid, Available, reachable from the node, and not
  // held (HoldLedger) for a pod other than exceptPodUid.
  std::vector<DevicePtr> freeOnNode(const std::string& rawResourceName, const std::string& nodeName,
                                    const std::map<std::string, std::string>& nodeLabels,
                                    const std::string& exceptPodUid = {}) const;

  // Whether some device of the resource is placed by node labels, alone or beside its name.
  bool hasLabelPlacedDevices(const std::string& rawResourceName) const;

  // A free device as visitFree shows it. Devices with equal properties share propertiesId
  // (unique for as long as the index lives) and propertiesSlot (dense, reused once no device
  // has those properties any more), so a caller can decide a selector once per distinct set
  // of properties instead of once per device.
  struct FreeDevice {
    const DevicePtr& device;
    uint32_t propertiesSlot;
    uint64_t propertiesId;
  };

  // fn(properties) for each distinct set of properties some device has, of any resource,
  // under the index's read lock.
  void visitPropertySets(
      const std::function<void(const std::map<std::string, std::string>&)>& fn) const;

  // freeOnNode without copies: calls fn(const FreeDevice&) for each such device, in name
  // order for devices placed by name, under the index's read lock (fn must not call back
  // into the index).
  template <class Fn>
  void visitFree(const std::string& rawResourceName, const std::string& nodeName,
                 const std::map<std::string, std::string>& nodeLabels,
                 const std::string& exceptPodUid, Fn&& fn) const;

  // Free devices of equal properties on a node, as visitFreeGroups shows them.
  struct FreeGroup {
    uint32_t propertiesSlot;
    uint64_t propertiesId;
    const std::map<std::string, std::string>& properties;
    uint32_t count;
  };

 private:
  struct Resource;

 public:
  // A resource looked up once for many nodes. The index never drops a resource, so a handle
  // stays valid as long as the index; a resource the index did not have yet reads as one
  // without devices.
  class ResourceHandle {
    friend class DeviceIndex;
    const Resource* resource_ = nullptr;
  };
  ResourceHandle resource(const std::string& rawResourceName) const;

  // visitFree counted by property set: fn(const FreeGroup&) once per set, when the answer is
  // known without looking at devices one by one: no bind in flight holds a device pinned to
  // the node, and every device of the resource that could be on the node is pinned to it by
  // name alone. Otherwise returns false without calling fn. Same lock rules as visitFree.
  template <class Fn>
  bool visitFreeGroups(ResourceHandle resource, std::string_view nodeName, Fn&& fn) const;

  // visitFreeGroups for a run of at most kRun nodes under one read lock, their lookups
  // overlapped: fn(k, const FreeGroup&) for nodes[k], and counted[k] set to what
  // visitFreeGroups would have returned for it.
  static constexpr size_t kRun = 64;
  template <class Fn>
  void visitFreeGroups(ResourceHandle resource, std::span<const std::string_view> nodes,
                       uint8_t* counted, Fn&& fn) const;

  // Holds: what the extender has promised to a pod and the cache does not show yet, kept in
  // one HoldLedger (see there for each kind's start, replacement and end) under this index's
  // locks, with the devices' pinned nodes. Times are the caller's (steady clock), but for a
  // bind's, which holds from now for `ttl`, a safety net against a bind that never finished.
  bool holdForBind(const std::vector<std::string>& names, const std::string& podUid,
                   Clock::duration ttl = std::chrono::seconds(60));
  bool holdForFilter(const std::string& nodeName, const std::vector<std::string>& names,
                     const std::string& podUid, Clock::time_point now, Clock::duration ttl);
  void holdAgain(const std::string& nodeName, const std::vector<std::string>& names,
                 const std::string& podUid, Clock::time_point now, Clock::duration ttl);
  bool nominate(const std::string& nodeName, const std::vector<std::string>& names,
                const std::string& podUid, Clock::time_point now, Clock::duration ttl);
  void dropAllHolds(const std::string& podUid);
  void dropFilterHold(const std::string& podUid);
  void dropNomination(const std::string& podUid);
  std::string filterHoldNode(const std::string& podUid, Clock::time_point now) const;
  std::string filterChoice(const std::string& podUid, Clock::time_point now) const;
  std::string nominatedNode(const std::string& podUid, Clock::time_point now) const;
  // Devices held, of any kind or of one; pods with a filter hold, with a nomination.
  size_t holdCount() const;
  size_t holdCount(HoldKind kind) const;
  size_t filteredPods() const;
  size_t nominatedPods() const;
  // How long a filter hold lasts when nothing ends it sooner.
  static constexpr std::chrono::seconds kHoldTtl{15};
  // How long the filter's choice is kept for checking the pod's bind against (checkBindTrust).
  // The devices' hold is short, so that a bind that never comes frees them soon;
  // kube-scheduler's binding cycle (its PreBind plugins: a volume provisioned for the node) may
  // take far longer, and its bind is still the one the filter chose. Longer than
  // kube-scheduler's volume binding waits in PreBind by default (bindTimeoutSeconds, 600 s),
  // counted from after the filter, Reserve and Permit.
  static constexpr std::chrono::seconds kChoiceTtl{900};

  // Every device of rawResourceName that the node reaches, whatever its state (valid or not,
  // free or not), in name order for devices placed by name; but none held (any kind) for a
  // pod other than podUid at `now`: what preemption may count on for that pod
  // (a victim's deletion would not make such a device the pod's).
  std::vector<DevicePtr> reachable(const std::string& rawResourceName, const std::string& nodeName,
                                   const std::map<std::string, std::string>& nodeLabels,
                                   const std::string& podUid, Clock::time_point now) const;
  // The Bound or Lost claims (setClaimDevices) holding any of `names` of rawResourceName: claim
  // key -> every device it holds, in key order.
  std::map<std::string, Holds> claimsHolding(const std::string& rawResourceName,
                                             const std::set<std::string>& names) const;

 private:
  // A device as the filter's hot path needs it, with what never changes for one version of
  // the object worked out once at upsert instead of once per node and request.
  struct Entry {
    DevicePtr device;
    // Valid, Available with no claimRef, and not being deleted: what a bind may take.
    bool eligible = false;
    // Its affinity is single-value metadata.name In terms only, so every node it is indexed
    // under matches without evaluating the selector.
    bool pinnedOnly = false;
    uint32_t propertiesSlot = 0;
    uint64_t propertiesId = 0;
  };
  struct PropertySet {
    uint32_t slot = 0;
    uint64_t id = 0;
    size_t devices = 0;
    std::map<std::string, std::string> properties;
  };
  // A node's eligible pinned devices of one resource counted by property set, rebuilt
  // whenever the node's entries change: what visitFreeGroups reads instead of the entries,
  // in one cache line.
  struct alignas(64) NodeSummary {
    static constexpr size_t kMaxGroups = 7;
    // False when some eligible entry must be checked against the node (not pinnedOnly) or
    // there are more property sets than fit.
    bool exact = true;
    uint8_t groups = 0;
    struct Group {
      uint32_t propertiesSlot;
      uint32_t count;
    } group[kMaxGroups];
  };
  static NodeSummary summarise(const std::vector<Entry>& entries);
  // Adds the device under mu_, as eligible as its state and the holds allow.
  void index(const DevicePtr& device, bool free);
  // offerable() under mu_.
  bool offerableLocked(const ExtendedResource& device) const;
  std::optional<ClaimAllocation> claimOfLocked(const ExtendedResource& device) const;
  // Stores the claim's state and indexes the devices naming it again (mu_ held).
  void changeClaim(const std::string& claimKey, const ClaimAllocation& claim, bool deleted);
  // Whether setClaimDevices / setClaim would change nothing (mu_ held, either way); `holds`
  // normalised (normalise).
  bool sameDevices(const std::string& claimKey, const Holds& holds) const;
  // Each list sorted and unique, no empty list.
  static Holds normalise(Holds holds);
  bool sameAllocation(const std::string& claimKey, const ClaimAllocation& claim) const;
  // setClaimDevices under mu_, held exclusively.
  void changeDevices(const std::string& claimKey, Holds holds);
  static std::string holdKey(const std::string& rawResourceName, const std::string& name);
  // Whether a claim holds the device: by its resource, or by any (mu_ held).
  bool heldLocked(const std::string& rawResourceName, const std::string& name) const;
  // The pinned nodes of a cached device, for the ledger; mu_ held.
  HoldLedger::NodesOf nodesOf() const;
  // Runs fn(ledger_) under ledgerMu_ and publishes the ledger's size for the filter's
  // lock-free check.
  template <class Fn>
  auto changeLedger(Fn&& fn);
  void unindex(const ExtendedResource& device);
  // Drops the device from naming_ (mu_ held).
  void unname(const ExtendedResource& device);
  const PropertySet& internProperties(const ExtendedResource& device);
  void releaseProperties(const ExtendedResource& device);

  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, DevicePtr> devices_;
  // Distinct property sets by their canonical text; see FreeDevice.
  std::unordered_map<std::string, PropertySet> propertySets_;
  std::vector<const PropertySet*> propertySlots_;  // by slot, into propertySets_
  std::vector<uint32_t> freeSlots_;
  uint64_t nextPropertiesId_ = 1;
  struct Resource {
    // Devices whose affinity names its nodes through matchFields metadata.name In, by node
    // slot, sorted by name: the common case, answered without looking at other nodes'
    // devices.
    std::vector<std::vector<Entry>> pinned;
    std::vector<NodeSummary> summaries;  // parallel to pinned
    // Every other device (label-based affinity), by name; evaluated per node.
    std::map<std::string, Entry> floating;
    // Pinned devices some term of which also tests labels (matchExpressions beside the
    // name): like floating ones, they need each node's labels.
    size_t pinnedTestingLabels = 0;
  };
  NodeSlots nodes_;                                    // the nodes some device is pinned to
  std::unordered_map<std::string, Holds> claimHolds_;  // by claim key
  // holdKey -> the keys of the claims holding it (nearly always one), so the holders of a
  // node's devices are found without scanning every claim.
  std::unordered_map<std::string, std::vector<std::string>> held_;
  // By claim key: each claim's allocation state, and the devices whose claimRef names it (to
  // index again when the claim changes).
  struct KnownClaim {
    ClaimAllocation allocation;
    bool deleted = false;
  };
  std::unordered_map<std::string, KnownClaim> claimAllocations_;
  std::unordered_map<std::string, std::set<std::string>> naming_;
  std::unordered_map<std::string, Resource> resources_;

  mutable std::mutex ledgerMu_;  // lock order: mu_ first
  HoldLedger ledger_;
  // ledger_.size(), readable without the lock: the filter skips the lock when nothing is
  // held, which is nearly always.
  std::atomic<size_t> ledgerSize_{0};
};

template <class Fn>
void DeviceIndex::visitFree(const std::string& rawResourceName, const std::string& nodeName,
                            const std::map<std::string, std::string>& nodeLabels,
                            const std::string& exceptPodUid, Fn&& fn) const {
  std::shared_lock lock(mu_);
  // Holds are rare; their lock is taken only while some exist. Lock order: mu_ first.
  std::unique_lock<std::mutex> ledger;
  Clock::time_point now;
  if (ledgerSize_.load(std::memory_order_acquire) != 0) {
    ledger = std::unique_lock(ledgerMu_);
    now = Clock::now();
  }
  auto consider = [&](const Entry& e) {
    if (!e.eligible || (!e.pinnedOnly && !matches(e.device->nodeAffinity, nodeName, nodeLabels))) {
      return;
    }
    if (ledger.owns_lock() && ledger_.heldByOther(e.device->meta.name, exceptPodUid, now)) {
      return;
    }
    fn(FreeDevice{e.device, e.propertiesSlot, e.propertiesId});
  };
  auto res = resources_.find(rawResourceName);
  if (res == resources_.end()) {
    return;
  }
  if (uint32_t slot = nodes_.find(nodeName); slot < res->second.pinned.size()) {
    for (const auto& e : res->second.pinned[slot]) {
      consider(e);
    }
  }
  for (const auto& [name, e] : res->second.floating) {
    consider(e);
  }
}

template <class Fn>
bool DeviceIndex::visitFreeGroups(ResourceHandle resource, std::string_view nodeName,
                                  Fn&& fn) const {
  uint8_t counted = 0;
  visitFreeGroups(resource, std::span(&nodeName, 1), &counted,
                  [&](size_t, const FreeGroup& group) { fn(group); });
  return counted != 0;
}

template <class Fn>
void DeviceIndex::visitFreeGroups(ResourceHandle resource, std::span<const std::string_view> nodes,
                                  uint8_t* counted, Fn&& fn) const {
  std::shared_lock lock(mu_);
  std::unique_lock<std::mutex> ledger;
  if (ledgerSize_.load(std::memory_order_acquire) != 0) {
    ledger = std::unique_lock(ledgerMu_);
  }
  const Resource* res = resource.resource_;
  if (res == nullptr || !res->floating.empty()) {
    std::fill(counted, counted + nodes.size(), res == nullptr ? 1 : 0);
    return;
  }
  uint32_t slots[kRun];
  nodes_.findMany(nodes.first(std::min(nodes.size(), kRun)), slots);
  for (size_t k = 0; k < nodes.size() && k < kRun; ++k) {
    if (slots[k] < res->summaries.size()) {
      __builtin_prefetch(&res->summaries[slots[k]]);
    }
  }
  // A few held nodes (binds in flight: the usual case under load) are compared by slot, which costs
  // less than hashing every candidate's name again; a node with holds but without a slot has no
  // pinned devices, so counting it finds none either way.
  constexpr size_t kFewHeld = 16;
  uint32_t heldSlots[kFewHeld];
  size_t fewHeld = 0;
  const bool bySlot = ledger.owns_lock() && ledger_.nodeCounts().size() <= kFewHeld;
  if (bySlot) {
    for (const auto& [name, holds] : ledger_.nodeCounts()) {
      if (const uint32_t slot = nodes_.find(name); slot != NodeSlots::kNone) {
        heldSlots[fewHeld++] = slot;
      }
    }
  }
  auto held = [&](size_t k) {
    if (!ledger.owns_lock()) {
      return false;
    }
    if (bySlot) {
      return std::find(heldSlots, heldSlots + fewHeld, slots[k]) != heldSlots + fewHeld;
    }
    return ledger_.nodeCounts().contains(nodes[k]);
  };
  for (size_t k = 0; k < nodes.size(); ++k) {
    counted[k] = 0;
    if (k >= kRun || held(k)) {
      continue;
    }
    counted[k] = 1;
    if (slots[k] >= res->summaries.size()) {
      continue;
    }
    const NodeSummary& summary = res->summaries[slots[k]];
    if (!summary.exact) {
      counted[k] = 0;
      continue;
    }
    for (size_t g = 0; g < summary.groups; ++g) {
      const auto& group = summary.group[g];
      const PropertySet& set = *propertySlots_[group.propertiesSlot];
      fn(k, FreeGroup{group.propertiesSlot, set.id, set.properties, group.count});
    }
  }
}

// The node names a selector can only match, when every term pins metadata.name with In;
// empty when the selector may match nodes by labels.
std::set<std::string> pinnedNodes(const NodeSelector& selector);

}  // namespace ker

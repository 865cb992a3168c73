#include "scheduler/cache/device_index.h"

#include <algorithm>
#include <iterator>

#include "common/node_selector.h"
#include "model/suitability.h"

namespace ker {

namespace {

// Whether every term is exactly one valid `metadata.name In [node]` requirement: then the
// selector matches precisely the nodes pinnedNodes() lists, and evaluating it per node and
// request would only repeat what upsert already knows.
bool onlyPinned(const NodeSelector& selector) {
  if (selector.terms.empty()) {
    return false;
  }
  for (const auto& term : selector.terms) {
    if (!term.matchExpressions.empty() || term.matchFields.size() != 1) {
      return false;
    }
    const auto& req = term.matchFields.front();
    if (req.key != "metadata.name" || req.op != SelectorOperator::kIn || req.values.size() != 1) {
      return false;
    }
  }
  return true;
}

bool byName(const auto& entry, const std::string& name) {
  return entry.device->meta.name < name;
}

// Length-prefixed, so no key or value can make two different maps read the same.
std::string canonicalText(const std::map<std::string, std::string>& properties) {
  std::string out;
  for (const auto& [k, v] : properties) {
    out += std::to_string(k.size()) + ':' + k + std::to_string(v.size()) + ':' + v;
  }
  return out;
}

std::string claimKeyOf(const ExtendedResource& device) {
  return device.claimRef ? objectKey(device.claimRef->ns, device.claimRef->name) : std::string();
}

// Whether some term also tests node labels: a device pinned by name with such a term is
// still on a node only when that node's labels say so.
bool testsLabels(const NodeSelector& selector) {
  return std::any_of(selector.terms.begin(), selector.terms.end(),
                     [](const NodeSelectorTerm& t) { return !t.matchExpressions.empty(); });
}

}  // namespace

std::set<std::string> pinnedNodes(const NodeSelector& selector) {
  std::set<std::string> nodes;
  for (const auto& term : selector.terms) {
    bool pinned = false;
    for (const auto& req : term.matchFields) {
      if (req.key == "metadata.name" && req.op == SelectorOperator::kIn) {
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

HoldLedger::NodesOf DeviceIndex::nodesOf() const {
  return [this](const std::string& name) {
    std::vector<std::string> out;
    if (auto d = devices_.find(name); d != devices_.end()) {
      for (const auto& node : pinnedNodes(d->second->nodeAffinity)) {
        out.push_back(node);
      }
    }
    return out;
  };
}

template <class Fn>
auto DeviceIndex::changeLedger(Fn&& fn) {
  std::shared_lock devices(mu_);  // for the devices' nodes; lock order: mu_ first
  std::lock_guard lock(ledgerMu_);
  struct Publish {
    const HoldLedger& ledger;
    std::atomic<size_t>& size;
    ~Publish() { size.store(ledger.size(), std::memory_order_release); }
  } publish{ledger_, ledgerSize_};
  return fn(ledger_);
}

const DeviceIndex::PropertySet& DeviceIndex::internProperties(const ExtendedResource& device) {
  auto [it, added] = propertySets_.try_emplace(canonicalText(device.properties));
  PropertySet& set = it->second;
  if (added) {
    if (freeSlots_.empty()) {
      set.slot = static_cast<uint32_t>(propertySlots_.size());
      propertySlots_.push_back(&set);
    } else {
      set.slot = freeSlots_.back();
      freeSlots_.pop_back();
      propertySlots_[set.slot] = &set;
    }
    set.id = nextPropertiesId_++;
    set.properties = device.properties;
  }
  ++set.devices;
  return set;
}

void DeviceIndex::releaseProperties(const ExtendedResource& device) {
  auto it = propertySets_.find(canonicalText(device.properties));
  if (it != propertySets_.end() && --it->second.devices == 0) {
    freeSlots_.push_back(it->second.slot);
    propertySlots_[it->second.slot] = nullptr;
    propertySets_.erase(it);
  }
}

void DeviceIndex::visitPropertySets(
    const std::function<void(const std::map<std::string, std::string>&)>& fn) const {
  std::shared_lock lock(mu_);
  for (const PropertySet* set : propertySlots_) {
    if (set != nullptr) {
      fn(set->properties);
    }
  }
}

DeviceIndex::NodeSummary DeviceIndex::summarise(const std::vector<Entry>& entries) {
  NodeSummary summary;
  for (const auto& e : entries) {
    if (!e.eligible) {
      continue;
    }
    if (!e.pinnedOnly) {
      summary.exact = false;
      break;
    }
    auto* end = summary.group + summary.groups;
    auto* group = std::find_if(summary.group, end,
                               [&](const auto& g) { return g.propertiesSlot == e.propertiesSlot; });
    if (group == end) {
      if (summary.groups == NodeSummary::kMaxGroups) {
        summary.exact = false;
        break;
      }
      ++summary.groups;
      *group = {e.propertiesSlot, 0};
    }
    ++group->count;
  }
  return summary;
}

void DeviceIndex::unindex(const ExtendedResource& device) {
  releaseProperties(device);
  const auto& name = device.meta.name;
  auto res = resources_.find(device.rawResourceName);
  if (res == resources_.end()) {
    return;
  }
  auto& pinned = res->second.pinned;
  const std::set<std::string> nodes = pinnedNodes(device.nodeAffinity);
  if (!nodes.empty() && testsLabels(device.nodeAffinity)) {
    --res->second.pinnedTestingLabels;
  }
  for (const auto& node : nodes) {
    const uint32_t slot = nodes_.find(node);
    if (slot >= pinned.size()) {
      continue;
    }
    auto& entries = pinned[slot];
    auto pos = std::lower_bound(entries.begin(), entries.end(), name, byName<Entry>);
    if (pos != entries.end() && pos->device->meta.name == name) {
      entries.erase(pos);
      res->second.summaries[slot] = summarise(entries);
      nodes_.release(slot);
    }
  }
  res->second.floating.erase(name);
}

std::optional<ClaimAllocation> DeviceIndex::claimOfLocked(const ExtendedResource& device) const {
  if (!device.claimRef) {
    return std::nullopt;
  }
  auto it = claimAllocations_.find(claimKeyOf(device));
  return it == claimAllocations_.end() ? std::nullopt : std::optional(it->second.allocation);
}

bool DeviceIndex::offerableLocked(const ExtendedResource& device) const {
  return ker::offerable(device, claimOfLocked(device));
}

bool DeviceIndex::offerable(const ExtendedResource& device) const {
  std::shared_lock lock(mu_);
  return offerableLocked(device);
}

std::optional<ClaimAllocation> DeviceIndex::claimOf(const ExtendedResource& device) const {
  std::shared_lock lock(mu_);
  return claimOfLocked(device);
}

bool DeviceIndex::sameAllocation(const std::string& claimKey, const ClaimAllocation& claim) const {
  auto it = claimAllocations_.find(claimKey);
  return it != claimAllocations_.end() && !it->second.deleted &&
         it->second.allocation.uid == claim.uid &&
         it->second.allocation.allocation == claim.allocation &&
         it->second.allocation.holding == claim.holding;
}

void DeviceIndex::setClaim(const std::string& claimKey, Holds holds, const ClaimAllocation& claim) {
  holds = normalise(std::move(holds));
  {
    // Most claim events change none of this (a Pending claim, a Bound one's own updates): the
    // filter's readers are not held up for them.
    std::shared_lock lock(mu_);
    if (sameDevices(claimKey, holds) && sameAllocation(claimKey, claim)) {
      return;
    }
  }
  std::unique_lock lock(mu_);
  if (!sameDevices(claimKey, holds)) {
    changeDevices(claimKey, std::move(holds));
  }
  if (!sameAllocation(claimKey, claim)) {
    changeClaim(claimKey, claim, false);
  }
}

void DeviceIndex::claimDeleted(const std::string& claimKey, const ClaimAllocation& last) {
  std::unique_lock lock(mu_);
  auto it = claimAllocations_.find(claimKey);
  if (it != claimAllocations_.end() && it->second.allocation.uid != last.uid) {
    return;  // a claim of that name made since
  }
  changeClaim(claimKey, last, true);
  if (!naming_.contains(claimKey)) {
    claimAllocations_.erase(claimKey);
  }
}

void DeviceIndex::changeClaim(const std::string& claimKey, const ClaimAllocation& claim,
                              bool deleted) {
  claimAllocations_[claimKey] = KnownClaim{claim, deleted};
  auto naming = naming_.find(claimKey);
  if (naming == naming_.end()) {
    return;
  }
  for (const auto& name : naming->second) {
    auto d = devices_.find(name);
    if (d == devices_.end()) {
      continue;
    }
    const DevicePtr device = d->second;
    unindex(*device);
    index(device, offerableLocked(*device));
  }
}

std::string DeviceIndex::holdKey(const std::string& rawResourceName, const std::string& name) {
  return rawResourceName + '\n' + name;
}

void DeviceIndex::upsert(DevicePtr device) {
  bool free = false;
  {
    std::unique_lock lock(mu_);
    auto it = devices_.find(device->meta.name);
    if (it != devices_.end()) {
      if (device->meta.olderThan(it->second->meta)) {
        return;  // a watch event behind a write the binder already put here
      }
      unindex(*it->second);
      if (claimKeyOf(*it->second) != claimKeyOf(*device)) {
        unname(*it->second);  // (naming the same claim, it stays: a deleted claim is kept)
      }
    }
    if (device->claimRef) {
      naming_[claimKeyOf(*device)].insert(device->meta.name);
    }
    free = offerableLocked(*device);
    index(device, free);
  }
  if (!free && device->phase != DevicePhase::kAvailable) {
    changeLedger([&](HoldLedger& ledger) { ledger.seenTaken(device->meta.name); });
  }
}

void DeviceIndex::unname(const ExtendedResource& device) {
  if (!device.claimRef) {
    return;
  }
  const std::string key = claimKeyOf(device);
  auto naming = naming_.find(key);
  if (naming != naming_.end() && naming->second.erase(device.meta.name) > 0 &&
      naming->second.empty()) {
    naming_.erase(naming);
    if (auto claim = claimAllocations_.find(key);
        claim != claimAllocations_.end() && claim->second.deleted) {
      claimAllocations_.erase(claim);  // nothing names the deleted claim any more
    }
  }
}

DeviceIndex::Holds DeviceIndex::normalise(Holds holds) {
  for (auto it = holds.begin(); it != holds.end();) {
    auto& names = it->second;
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    it = names.empty() ? holds.erase(it) : std::next(it);
  }
  return holds;
}

bool DeviceIndex::sameDevices(const std::string& claimKey, const Holds& holds) const {
  auto it = claimHolds_.find(claimKey);
  return it == claimHolds_.end() ? holds.empty() : it->second == holds;
}

void DeviceIndex::setClaimDevices(const std::string& claimKey, Holds holds) {
  holds = normalise(std::move(holds));
  {
    // Most claim events change no hold (a Pending claim, a Bound one's own updates): the
    // filter's readers are not held up for them.
    std::shared_lock lock(mu_);
    if (sameDevices(claimKey, holds)) {
      return;
    }
  }
  std::unique_lock lock(mu_);
  if (!sameDevices(claimKey, holds)) {
    changeDevices(claimKey, std::move(holds));
  }
}

bool DeviceIndex::heldLocked(const std::string& rawResourceName, const std::string& name) const {
  return !held_.empty() &&
         (held_.count(holdKey(rawResourceName, name)) > 0 || held_.count(holdKey("", name)) > 0);
}

void DeviceIndex::changeDevices(const std::string& claimKey, Holds holds) {
  auto it = claimHolds_.find(claimKey);
  std::vector<std::string> changed;  // hold keys that became or stopped being held
  if (it != claimHolds_.end()) {
    for (const auto& [resource, names] : it->second) {
      for (const auto& name : names) {
        const std::string key = holdKey(resource, name);
        auto h = held_.find(key);
        if (h == held_.end()) {
          continue;
        }
        std::erase(h->second, claimKey);
        if (h->second.empty()) {
          held_.erase(h);
          changed.push_back(name);
        }
      }
    }
    claimHolds_.erase(it);
  }
  for (const auto& [resource, names] : holds) {
    for (const auto& name : names) {
      auto& claims = held_[holdKey(resource, name)];
      claims.push_back(claimKey);
      if (claims.size() == 1) {
        changed.push_back(name);
      }
    }
  }
  if (!holds.empty()) {
    claimHolds_[claimKey] = std::move(holds);
  }
  std::sort(changed.begin(), changed.end());
  changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  for (const auto& name : changed) {
    auto d = devices_.find(name);
    // Only a device that is free by itself reads differently: re-index it.
    if (d != devices_.end() && offerableLocked(*d->second)) {
      const DevicePtr device = d->second;
      unindex(*device);
      index(device, true);
    }
  }
}

size_t DeviceIndex::claimedCount() const {
  std::shared_lock lock(mu_);
  return held_.size();
}

void DeviceIndex::index(const DevicePtr& device, bool free) {
  const std::string& name = device->meta.name;
  const bool held = heldLocked(device->rawResourceName, name);
  Entry entry{device, free && !held, onlyPinned(device->nodeAffinity)};
  const PropertySet& props = internProperties(*device);
  entry.propertiesSlot = props.slot;
  entry.propertiesId = props.id;
  auto nodes = pinnedNodes(device->nodeAffinity);
  Resource& res = resources_[device->rawResourceName];
  if (nodes.empty()) {
    res.floating[name] = entry;
  } else if (testsLabels(device->nodeAffinity)) {
    ++res.pinnedTestingLabels;
  }
  for (const auto& node : nodes) {
    const uint32_t slot = nodes_.acquire(node);
    if (slot >= res.pinned.size()) {
      res.pinned.resize(slot + 1);
      res.summaries.resize(slot + 1);
    }
    auto& entries = res.pinned[slot];
    entries.insert(std::lower_bound(entries.begin(), entries.end(), name, byName<Entry>), entry);
    res.summaries[slot] = summarise(entries);
  }
  devices_[name] = device;
}

void DeviceIndex::remove(const std::string& name) {
  {
    std::unique_lock lock(mu_);
    auto it = devices_.find(name);
    if (it == devices_.end()) {
      return;
    }
    unindex(*it->second);
    unname(*it->second);
    devices_.erase(it);
  }
  changeLedger([&](HoldLedger& ledger) { ledger.forgetDevice(name); });
}

DevicePtr DeviceIndex::get(const std::string& name) const {
  std::shared_lock lock(mu_);
  auto it = devices_.find(name);
  return it == devices_.end() ? nullptr : it->second;
}

DeviceIndex::ResourceHandle DeviceIndex::resource(const std::string& rawResourceName) const {
  std::shared_lock lock(mu_);
  ResourceHandle handle;
  if (auto it = resources_.find(rawResourceName); it != resources_.end()) {
    handle.resource_ = &it->second;
  }
  return handle;
}

bool DeviceIndex::hasLabelPlacedDevices(const std::string& rawResourceName) const {
  std::shared_lock lock(mu_);
  auto it = resources_.find(rawResourceName);
  return it != resources_.end() &&
         (!it->second.floating.empty() || it->second.pinnedTestingLabels != 0);
}

size_t DeviceIndex::size() const {
  std::shared_lock lock(mu_);
  return devices_.size();
}

std::vector<DevicePtr> DeviceIndex::freeOnNode(const std::string& rawResourceName,
                                               const std::string& nodeName,
                                               const std::map<std::string, std::string>& nodeLabels,
                                               const std::string& exceptPodUid) const {
  std::vector<DevicePtr> out;
  visitFree(rawResourceName, nodeName, nodeLabels, exceptPodUid,
            [&](const FreeDevice& d) { out.push_back(d.device); });
  return out;
}

bool DeviceIndex::holdForBind(const std::vector<std::string>& names, const std::string& podUid,
                              Clock::duration ttl) {
  return changeLedger([&](HoldLedger& ledger) {
    return ledger.holdForBind(names, podUid, Clock::now(), ttl, nodesOf());
  });
}

bool DeviceIndex::holdForFilter(const std::string& nodeName, const std::vector<std::string>& names,
                                const std::string& podUid, Clock::time_point now,
                                Clock::duration ttl) {
  return changeLedger([&](HoldLedger& ledger) {
    return ledger.holdForFilter(nodeName, names, podUid, now, ttl, kChoiceTtl, nodesOf());
  });
}

void DeviceIndex::holdAgain(const std::string& nodeName, const std::vector<std::string>& names,
                            const std::string& podUid, Clock::time_point now, Clock::duration ttl) {
  changeLedger(
      [&](HoldLedger& ledger) { ledger.holdAgain(nodeName, names, podUid, now, ttl, nodesOf()); });
}

bool DeviceIndex::nominate(const std::string& nodeName, const std::vector<std::string>& names,
                           const std::string& podUid, Clock::time_point now, Clock::duration ttl) {
  return changeLedger([&](HoldLedger& ledger) {
    return ledger.nominate(nodeName, names, podUid, now, ttl, nodesOf());
  });
}

void DeviceIndex::dropAllHolds(const std::string& podUid) {
  changeLedger([&](HoldLedger& ledger) { ledger.dropAllHolds(podUid); });
}

void DeviceIndex::dropFilterHold(const std::string& podUid) {
  changeLedger([&](HoldLedger& ledger) { ledger.dropFilterHold(podUid); });
}

void DeviceIndex::dropNomination(const std::string& podUid) {
  changeLedger([&](HoldLedger& ledger) { ledger.dropNomination(podUid); });
}

std::string DeviceIndex::filterHoldNode(const std::string& podUid, Clock::time_point now) const {
  std::lock_guard lock(ledgerMu_);
  return ledger_.filterHoldNode(podUid, now);
}

std::string DeviceIndex::filterChoice(const std::string& podUid, Clock::time_point now) const {
  std::lock_guard lock(ledgerMu_);
  return ledger_.filterChoice(podUid, now);
}

std::string DeviceIndex::nominatedNode(const std::string& podUid, Clock::time_point now) const {
  std::lock_guard lock(ledgerMu_);
  return ledger_.nominatedNode(podUid, now);
}

size_t DeviceIndex::holdCount() const {
  std::lock_guard lock(ledgerMu_);
  return ledger_.size();
}

size_t DeviceIndex::holdCount(HoldKind kind) const {
  std::lock_guard lock(ledgerMu_);
  return ledger_.devices(kind);
}

size_t DeviceIndex::filteredPods() const {
  std::lock_guard lock(ledgerMu_);
  return ledger_.filteredPods();
}

size_t DeviceIndex::nominatedPods() const {
  std::lock_guard lock(ledgerMu_);
  return ledger_.nominatedPods();
}

std::vector<DevicePtr> DeviceIndex::reachable(const std::string& rawResourceName,
                                              const std::string& nodeName,
                                              const std::map<std::string, std::string>& nodeLabels,
                                              const std::string& podUid,
                                              Clock::time_point now) const {
  std::vector<DevicePtr> out;
  std::shared_lock lock(mu_);
  auto res = resources_.find(rawResourceName);
  if (res == resources_.end()) {
    return out;
  }
  std::lock_guard ledger(ledgerMu_);
  auto consider = [&](const Entry& e) {
    if ((e.pinnedOnly || ker::reachable(*e.device, nodeName, nodeLabels)) &&
        !ledger_.heldByOther(e.device->meta.name, podUid, now)) {
      out.push_back(e.device);
    }
  };
  if (uint32_t slot = nodes_.find(nodeName); slot < res->second.pinned.size()) {
    for (const auto& e : res->second.pinned[slot]) {
      consider(e);
    }
  }
  for (const auto& [name, e] : res->second.floating) {
    consider(e);
  }
  return out;
}

std::map<std::string, DeviceIndex::Holds> DeviceIndex::claimsHolding(
    const std::string& rawResourceName, const std::set<std::string>& names) const {
  std::map<std::string, Holds> out;
  std::shared_lock lock(mu_);
  for (const auto& name : names) {
    for (const std::string& resource : {rawResourceName, std::string()}) {
      auto h = held_.find(holdKey(resource, name));
      if (h == held_.end()) {
        continue;
      }
      for (const auto& claim : h->second) {
        if (auto c = claimHolds_.find(claim); c != claimHolds_.end()) {
          out.emplace(claim, c->second);
        }
      }
    }
  }
  return out;
}

}  // namespace ker

#include "scheduler/cache/hold_ledger.h"

#include <algorithm>
#include <iterator>

namespace ker {

bool HoldLedger::heldByOther(const std::string& device, const std::string& podUid,
                             Clock::time_point now) const {
  auto it = devices_.find(device);
  return it != devices_.end() && it->second.podUid != podUid && it->second.expires > now;
}

void HoldLedger::add(const std::string& device, const std::string& podUid, HoldKind kind,
                     Clock::time_point expires, const NodesOf& nodesOf) {
  Hold hold{podUid, kind, expires, nodesOf(device)};
  for (const auto& node : hold.nodes) {
    ++nodes_[node];
  }
  ++byKind_[static_cast<size_t>(kind)];
  devices_.insert_or_assign(device, std::move(hold));
}

void HoldLedger::erase(Holds::iterator it) {
  for (const auto& node : it->second.nodes) {
    auto n = nodes_.find(node);
    if (n != nodes_.end() && --n->second == 0) {
      nodes_.erase(n);
    }
  }
  --byKind_[static_cast<size_t>(it->second.kind)];
  devices_.erase(it);
}

void HoldLedger::endPodHold(std::unordered_map<std::string, PodHold>& records, HoldKind kind,
                            const std::string& podUid) {
  auto record = records.find(podUid);
  if (record == records.end()) {
    return;
  }
  for (const auto& device : record->second.devices) {
    if (auto it = devices_.find(device);
        it != devices_.end() && it->second.kind == kind && it->second.podUid == podUid) {
      erase(it);
    }
  }
  records.erase(record);
}

void HoldLedger::endExpiredPodHolds(std::unordered_map<std::string, PodHold>& records,
                                    HoldKind kind, Clock::time_point now) {
  for (auto r = records.begin(); r != records.end();) {
    auto next = std::next(r);
    if (r->second.expires <= now) {
      endPodHold(records, kind, r->first);
    }
    r = next;
  }
}

bool HoldLedger::holdForBind(const std::vector<std::string>& devices, const std::string& podUid,
                             Clock::time_point now, Clock::duration ttl, const NodesOf& nodesOf) {
  for (const auto& device : devices) {
    if (heldByOther(device, podUid, now)) {
      return false;
    }
  }
  endPodHold(filters_, HoldKind::kFilter, podUid);
  endPodHold(nominations_, HoldKind::kNomination, podUid);
  for (const auto& device : devices) {
    if (auto it = devices_.find(device); it != devices_.end()) {
      erase(it);  // the pod's own, or expired
    }
    add(device, podUid, HoldKind::kBind, now + ttl, nodesOf);
  }
  return true;
}

bool HoldLedger::holdForFilter(const std::string& node, const std::vector<std::string>& devices,
                               const std::string& podUid, Clock::time_point now,
                               Clock::duration ttl, Clock::duration choiceTtl,
                               const NodesOf& nodesOf) {
  // Holds of pods whose bind never came (a later plugin rejected the node, the scheduler
  // lost its lease) end here rather than pile up.
  endExpiredPodHolds(filters_, HoldKind::kFilter, now);
  std::erase_if(choices_, [&](const auto& c) { return c.second.expires <= now; });
  for (const auto& device : devices) {
    if (heldByOther(device, podUid, now)) {
      return false;
    }
  }
  endPodHold(filters_, HoldKind::kFilter, podUid);
  const auto expires = now + ttl;
  choices_[podUid] = Choice{node, now + std::max(ttl, choiceTtl)};
  for (const auto& device : devices) {
    auto it = devices_.find(device);
    if (it != devices_.end() && it->second.kind != HoldKind::kFilter && it->second.expires > now) {
      continue;  // the pod's own bind or nomination: stronger than a filter hold
    }
    if (it != devices_.end()) {
      erase(it);  // expired
    }
    add(device, podUid, HoldKind::kFilter, expires, nodesOf);
  }
  filters_[podUid] = PodHold{node, devices, expires};
  return true;
}

void HoldLedger::holdAgain(const std::string& node, const std::vector<std::string>& devices,
                           const std::string& podUid, Clock::time_point now, Clock::duration ttl,
                           const NodesOf& nodesOf) {
  endPodHold(filters_, HoldKind::kFilter, podUid);
  PodHold record{node, {}, now + ttl};
  for (auto& [device, hold] : devices_) {
    if (hold.podUid == podUid) {
      --byKind_[static_cast<size_t>(hold.kind)];
      hold.kind = HoldKind::kFilter;
      ++byKind_[static_cast<size_t>(hold.kind)];
      hold.expires = record.expires;
      record.devices.push_back(device);
    }
  }
  for (const auto& device : devices) {
    if (auto it = devices_.find(device); it != devices_.end()) {
      if (it->second.podUid == podUid || it->second.expires > now) {
        continue;  // taken over above, or another pod's
      }
      erase(it);  // another pod's, expired
    }
    add(device, podUid, HoldKind::kFilter, record.expires, nodesOf);
    record.devices.push_back(device);
  }
  if (!record.devices.empty()) {
    filters_[podUid] = std::move(record);
  }
}

bool HoldLedger::nominate(const std::string& node, const std::vector<std::string>& devices,
                          const std::string& podUid, Clock::time_point now, Clock::duration ttl,
                          const NodesOf& nodesOf) {
  endExpiredPodHolds(nominations_, HoldKind::kNomination, now);
  for (const auto& device : devices) {
    if (heldByOther(device, podUid, now)) {
      return false;
    }
  }
  endPodHold(nominations_, HoldKind::kNomination, podUid);
  const auto expires = now + ttl;
  for (const auto& device : devices) {
    if (auto it = devices_.find(device); it != devices_.end()) {
      // The pod's own hold or an expired one: the nomination takes the device over.
      if (it->second.kind == HoldKind::kFilter && it->second.podUid == podUid) {
        if (auto f = filters_.find(podUid); f != filters_.end()) {
          std::erase(f->second.devices, device);
        }
      }
      erase(it);
    }
    add(device, podUid, HoldKind::kNomination, expires, nodesOf);
  }
  nominations_[podUid] = PodHold{node, devices, expires};
  return true;
}

void HoldLedger::seenTaken(const std::string& device) {
  if (auto it = devices_.find(device);
      it != devices_.end() && it->second.kind != HoldKind::kNomination) {
    erase(it);
  }
}

void HoldLedger::forgetDevice(const std::string& device) {
  if (auto it = devices_.find(device); it != devices_.end()) {
    erase(it);
  }
}

void HoldLedger::dropAllHolds(const std::string& podUid) {
  filters_.erase(podUid);
  choices_.erase(podUid);
  nominations_.erase(podUid);
  for (auto it = devices_.begin(); it != devices_.end();) {
    auto next = std::next(it);
    if (it->second.podUid == podUid) {
      erase(it);
    }
    it = next;
  }
}

void HoldLedger::dropFilterHold(const std::string& podUid) {
  endPodHold(filters_, HoldKind::kFilter, podUid);
  choices_.erase(podUid);
}

void HoldLedger::dropNomination(const std::string& podUid) {
  endPodHold(nominations_, HoldKind::kNomination, podUid);
}

std::string HoldLedger::filterHoldNode(const std::string& podUid, Clock::time_point now) const {
  auto f = filters_.find(podUid);
  return f == filters_.end() || f->second.expires <= now ? std::string() : f->second.node;
}

std::string HoldLedger::filterChoice(const std::string& podUid, Clock::time_point now) const {
  if (std::string node = filterHoldNode(podUid, now); !node.empty()) {
    return node;  // an undone bind holds again (holdAgain)
  }
  auto c = choices_.find(podUid);
  return c == choices_.end() || c->second.expires <= now ? std::string() : c->second.node;
}

std::string HoldLedger::nominatedNode(const std::string& podUid, Clock::time_point now) const {
  auto n = nominations_.find(podUid);
  return n == nominations_.end() || n->second.expires <= now ? std::string() : n->second.node;
}

}  // namespace ker

#include "scheduler/bind/bind_journal.h"

#include <algorithm>
#include <exception>
#include <map>
#include <set>

#include "common/api_error.h"
#include "common/logging.h"
#include "model/claim_transitions.h"
#include "model/device_transitions.h"
#include "model/objects.h"
#include "model/suitability.h"
#include "model/typed_client.h"

namespace ker {

BindJournal::Entry& BindJournal::add(Kind kind) {
  return entries_.emplace_back(Entry{.kind = kind});
}

void BindJournal::deviceSent(const std::string& name, const std::string& claimUid) {
  Entry& e = add(Kind::kDevice);
  e.name = name;
  e.claimUid = claimUid;
}

void BindJournal::claimSent(const ExtendedResourceClaim& sent, std::vector<std::string> devices) {
  Entry& e = add(Kind::kClaim);
  e.ns = sent.meta.ns;
  e.name = sent.meta.name;
  e.devices = std::move(devices);
  e.bindRewrites = sent.bindRewrites;
}

void BindJournal::reuseSent(const std::string& claimUid) {
  add(Kind::kReuse).claimUid = claimUid;
}

void BindJournal::joinSent(const ExtendedResourceClaim& sent) {
  Entry& e = add(Kind::kJoin);
  e.ns = sent.meta.ns;
  e.name = sent.meta.name;
  e.bindRewrites = sent.bindRewrites;
}

void BindJournal::applied(ExtendedResource written) {
  entries_.back().confirmed = true;
  entries_.back().device = std::move(written);
}

void BindJournal::applied(ExtendedResourceClaim written) {
  entries_.back().confirmed = true;
  entries_.back().claim = std::move(written);
}

void BindJournal::reuseApplied() {
  entries_.back().confirmed = true;
}

void BindJournal::refused() {
  if (!entries_.empty() && !entries_.back().confirmed) {
    entries_.pop_back();
  }
}

void BindJournal::rebound(ExtendedResource written) {
  Entry& e = add(Kind::kDevice);
  e.name = written.meta.name;
  e.confirmed = true;
  e.device = std::move(written);
}

std::vector<ExtendedResource> BindJournal::devices() const {
  std::vector<ExtendedResource> out;
  for (const auto& e : entries_) {
    if (e.kind == Kind::kDevice && e.confirmed) {
      out.push_back(*e.device);
    }
  }
  return out;
}

void BindJournal::readBack(ApiClient& api) {
  if (entries_.empty() || entries_.back().confirmed) {
    return;
  }
  Entry& e = entries_.back();
  if (e.kind == Kind::kReuse) {
    return;  // counted as rewritten: if it landed, the claim is this call's to keep
  }
  try {
    if (e.kind == Kind::kClaim || e.kind == Kind::kJoin) {
      // Another replica binding the same pod may have bound the claim too, with other devices,
      // or rewritten this call's write to bind the pod with it (its bindRewrites then differs):
      // either way the claim is that call's, and putting it back would free what its pod runs
      // with.
      auto live = readObject<ExtendedResourceClaim>(api, e.ns, e.name);
      if (live.heldBy(podUid_) && live.bindRewrites == e.bindRewrites &&
          (e.kind == Kind::kJoin || live.allocated == e.devices)) {
        applied(std::move(live));
        return;
      }
    } else {
      // Only a write naming this pod among the holders can be this call's: another pod's bind
      // through the same claim (two pods naming it) writes the same claimRef.
      auto live = readObject<ExtendedResource>(api, "", e.name);
      if (live.claimRef && live.claimRef->uid == e.claimUid &&
          std::any_of(live.holders.begin(), live.holders.end(),
                      [&](const PodRef& h) { return h.uid == podUid_; })) {
        applied(std::move(live));
        return;
      }
    }
  } catch (const std::exception& ex) {
    if (e.kind == Kind::kClaim || e.kind == Kind::kJoin) {
      log::warn("bind undo: claim may be left bound",
                {{"claim", objectKey(e.ns, e.name)}, {"error", ex.what()}});
    } else {
      log::warn("bind undo: device may be left bound", {{"device", e.name}, {"error", ex.what()}});
    }
  }
  entries_.pop_back();
}

// Another call binding the same pod writes the same claim onto the device: a write of this
// attempt read back (or a reply lost) cannot tell the two apart. Whether the claim, as stored
// now, holds the device for the pod decides: then the device is the pod's through that call, and
// freeing it would give it to a second pod. Unreadable counts as held (the controller's repair
// frees a device whose claim does not list it).
bool BindJournal::heldThroughClaim(ApiClient& api, const ExtendedResource& device) const {
  try {
    const auto live =
        readObject<ExtendedResourceClaim>(api, device.claimRef->ns, device.claimRef->name);
    const bool held = live.meta.uid == device.claimRef->uid && live.heldBy(podUid_) &&
                      std::find(live.allocated.begin(), live.allocated.end(), device.meta.name) !=
                          live.allocated.end();
    if (held) {
      log::info("bind undo: device kept, its claim holds it for the pod through another call",
                {{"device", device.meta.name}});
    }
    return held;
  } catch (const ApiError& e) {
    if (e.isNotFound()) {
      return false;
    }
    log::warn("bind undo: device left bound", {{"device", device.meta.name}, {"error", e.what()}});
    return true;
  } catch (const std::exception& e) {
    log::warn("bind undo: device left bound", {{"device", device.meta.name}, {"error", e.what()}});
    return true;
  }
}

uint64_t BindJournal::undo(ApiClient& api, DeviceIndex& index, SystemTime now) {
  readBack(api);
  uint64_t writes = 0;
  std::set<std::string> kept;
  for (const auto& e : entries_) {
    if (e.kind == Kind::kReuse) {
      kept.insert(e.claimUid);
    }
  }
  // The claims put back, as written: a device given to one of them is freed by that write
  // (freedByClaim) and needs no write, nor a read, of its own.
  std::map<std::string, ClaimAllocation> putBack;
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if ((it->kind != Kind::kClaim && it->kind != Kind::kJoin) || !it->confirmed) {
      continue;
    }
    const ExtendedResourceClaim& c = *it->claim;
    ExtendedResourceClaim next = c;
    std::vector<PodRef> leaving;
    for (const auto& holder : c.holders()) {
      if (holder.uid == podUid_) {
        leaving.push_back(holder);
      }
    }
    const Status undone = it->kind == Kind::kJoin ? leaveClaim(next, leaving) : undoClaimBind(next);
    if (!undone.ok()) {
      kept.insert(c.meta.uid);
      log::warn("bind undo: claim left as it is", {{"error", undone.message()}});
      continue;
    }
    // Any failure, a fault as much as an answer, leaves the claim (and so its devices) as it
    // is: the undo goes on with the rest.
    ExtendedResourceClaim written;
    Status sent;
    try {
      sent = writeStatus(api, next, now, &written);
    } catch (const std::exception& ex) {
      sent = statusFrom(ex);
    }
    if (sent.ok()) {
      ++writes;
      putBack.insert_or_assign(written.meta.uid, allocationOf(written));
    } else {
      kept.insert(c.meta.uid);
      log::warn("bind undo: claim left bound with its devices",
                {{"claim", objectKey(c.meta.ns, c.meta.name)}, {"error", sent.message()}});
    }
  }
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->kind != Kind::kDevice || !it->confirmed) {
      continue;
    }
    const ExtendedResource& d = *it->device;
    if (d.claimRef) {
      const auto claim = putBack.find(d.claimRef->uid);
      if (claim != putBack.end() && freedByClaim(d, claim->second)) {
        continue;
      }
      if (kept.count(d.claimRef->uid) != 0 || heldThroughClaim(api, d)) {
        continue;
      }
    }
    ExtendedResource next = d;
    if (Status undone = undoDeviceBind(next); !undone.ok()) {
      log::warn("bind undo: device left as it is", {{"error", undone.message()}});
      continue;
    }
    ExtendedResource restored;
    Status sent;
    try {
      sent = writeStatus(api, next, now, &restored);
    } catch (const std::exception& ex) {
      sent = statusFrom(ex);
    }
    if (sent.ok()) {
      ++writes;
      index.upsert(std::make_shared<const ExtendedResource>(std::move(restored)));
    } else {
      log::warn("bind undo: device left bound",
                {{"device", d.meta.name}, {"error", sent.message()}});
    }
  }
  return writes;
}

}  // namespace ker

#include "model/invariants.h"

#include <algorithm>
#include <map>
#include <set>

#include "model/conditions.h"
#include "model/suitability.h"

namespace ker {

namespace {

// The written conditions' statuses are those the rule gives for the written typed status. The
// reasons may lag behind a deletion (DeletionWaiting is written by the controller once it sees
// it), so only statuses are compared. An object without conditions was written by someone
// else, or before they existed.
void checkConditions(const std::string& what, const std::vector<Condition>& written,
                     const std::vector<Condition>& derived, std::vector<std::string>& out) {
  if (written.empty()) {
    return;
  }
  for (const Condition& want : derived) {
    const Condition* got = findCondition(written, want.type);
    if (!got || got->status != want.status) {
      out.push_back(what + " has condition " + toString(want.type) + " " +
                    (got ? toString(got->status) : "missing") + " but its status says " +
                    toString(want.status));
    }
  }
}

// The claim's allocated devices meet its constraints: each request's its own (meetConstraints
// on its unit), and devices of two requests those spanning both (sharedConstraintsMet).
// Devices missing from the snapshot are reported on their own and left out here.
bool meetAllConstraints(const ExtendedResourceClaim& claim,
                        const std::map<std::string, const ExtendedResource*>& devices) {
  const auto units = claim.units();
  std::vector<std::vector<const ExtendedResource*>> chosen(units.size());
  for (size_t u = 0; u < units.size(); ++u) {
    std::vector<const std::map<std::string, std::string>*> properties;
    for (const auto& name : units[u].allocated) {
      if (auto it = devices.find(name); it != devices.end()) {
        chosen[u].push_back(it->second);
        properties.push_back(&it->second->properties);
      }
    }
    if (!meetConstraints(units[u], properties)) {
      return false;
    }
  }
  for (size_t a = 0; a < units.size(); ++a) {
    for (size_t b = a + 1; b < units.size(); ++b) {
      for (const auto* x : chosen[a]) {
        for (const auto* y : chosen[b]) {
          if (!sharedConstraintsMet(units[a], x->properties, units[b], y->properties)) {
            return false;
          }
        }
      }
    }
  }
  return true;
}

}  // namespace

std::vector<std::string> checkInvariants(const ClusterSnapshot& s) {
  std::vector<std::string> out;
  std::map<std::string, const ExtendedResource*> devices;
  for (const auto& d : s.devices) {
    devices[d.meta.name] = &d;
  }
  std::map<std::string, const ExtendedResourceClaim*> claims;
  for (const auto& c : s.claims) {
    claims[objectKey(c.meta.ns, c.meta.name)] = &c;
  }
  std::map<std::string, const Pod*> podsByUid;
  for (const auto& p : s.pods) {
    podsByUid[p.meta.uid] = &p;
  }
  std::map<std::string, const Node*> nodes;
  for (const auto& n : s.nodes) {
    nodes[n.meta.name] = &n;
  }
  for (const auto& d : s.devices) {
    checkConditions("device " + d.meta.name, d.conditions, deviceConditions(d, {}, {}), out);
  }
  for (const auto& c : s.claims) {
    checkConditions("claim " + objectKey(c.meta.ns, c.meta.name), c.conditions,
                    claimConditions(c, {}, {}), out);
  }

  // A claim that is not Pending stays with the pods that hold it while they still run (a Lost
  // one too: it keeps what it has left until they go), on its node; a shared one with at most
  // kMaxClaimHolders of them, each once, in its holders list; any other with one, in podRef.
  auto checkHolder = [&](const ExtendedResourceClaim& c, const std::string& key) {
    const auto refs = c.holders();
    if (refs.empty()) {
      out.push_back("claim " + key + " is " + toString(c.phase) + " without a podRef");
      return;
    }
    if (!c.shareable && refs.size() > 1) {
      out.push_back("claim " + key + " is not shareable but held by " +
                    std::to_string(refs.size()) + " pods");
    }
    if (!c.shareable && !c.sharedHolders.empty()) {
      out.push_back("claim " + key + " is not shareable but lists holders");
    }
    if (c.shareable && c.podRef) {
      out.push_back("claim " + key + " is shareable but has a podRef");
    }
    if (refs.size() > kMaxClaimHolders) {
      out.push_back("claim " + key + " has " + std::to_string(refs.size()) + " holders, over " +
                    std::to_string(kMaxClaimHolders));
    }
    std::set<std::string> seen;
    for (const auto& ref : refs) {
      if (!seen.insert(ref.uid).second) {
        out.push_back("claim " + key + " lists pod " + ref.name + " (uid " + ref.uid +
                      ") as a holder twice");
        continue;
      }
      auto pod = podsByUid.find(ref.uid);
      if (pod == podsByUid.end()) {
        out.push_back("claim " + key + " is held by pod " + ref.name + " (uid " + ref.uid +
                      ") which no longer exists");
      } else if (pod->second->finished()) {
        out.push_back("claim " + key + " is held by finished pod " + ref.name);
      } else if (!pod->second->nodeName.empty() && pod->second->nodeName != c.nodeName) {
        out.push_back("claim " + key + " on node " + c.nodeName + " is held by pod " + ref.name +
                      " on node " + pod->second->nodeName);
      }
    }
  };

  std::map<std::string, std::string> allocatedTo;  // device -> claim key
  std::map<std::string, std::string> lostBy;       // device -> key of the Lost claim holding it
  for (const auto& c : s.claims) {
    const std::string key = objectKey(c.meta.ns, c.meta.name);
    if (c.phase == ClaimPhase::kPending) {
      if (!c.allocated.empty() || !c.lost.empty()) {
        out.push_back("claim " + key + " is Pending but lists devices");
      }
      continue;
    }
    checkHolder(c, key);
    for (const auto& name : c.lost) {
      lostBy.emplace(name, key);
    }
    if (c.phase == ClaimPhase::kLost) {
      for (const auto& name : c.allocated) {
        auto [it, fresh] = allocatedTo.emplace(name, key);
        if (!fresh) {
          out.push_back("device " + name + " is allocated to both " + it->second + " and " + key);
        }
      }
      continue;
    }
    if (const auto wanted = c.wantedCount(); !wanted) {
      out.push_back("claim " + key + " is Bound as no alternative of its firstAvailable");
    } else if (static_cast<int64_t>(c.allocated.size()) != *wanted) {
      out.push_back("claim " + key + " holds " + std::to_string(c.allocated.size()) +
                    " devices, wants " + std::to_string(*wanted));
    }
    std::set<std::string> distinct(c.allocated.begin(), c.allocated.end());
    if (distinct.size() != c.allocated.size()) {
      out.push_back("claim " + key + " lists a device twice");
    }
    for (const auto& name : distinct) {
      auto [it, fresh] = allocatedTo.emplace(name, key);
      if (!fresh) {
        out.push_back("device " + name + " is allocated to both " + it->second + " and " + key);
      }
      auto dev = devices.find(name);
      if (dev == devices.end()) {
        out.push_back("claim " + key + " lists missing device " + name);
        continue;
      }
      const ExtendedResource& d = *dev->second;
      if (d.phase != DevicePhase::kBound || !d.claimRef || d.claimRef->ns != c.meta.ns ||
          d.claimRef->name != c.meta.name || d.claimRef->uid != c.meta.uid ||
          d.allocation != c.allocation) {
        out.push_back("claim " + key + " lists device " + name + " which is not Bound to it");
      }
      switch (suitability(d, c)) {
        case Unsuited::kNone:
          break;
        case Unsuited::kOtherResource:
          out.push_back("device " + name + " provides " + d.rawResourceName + ", which claim " +
                        key + " does not ask for");
          break;
        case Unsuited::kNotNamed:
          out.push_back("device " + name + " is not among the devices claim " + key + " names");
          break;
        case Unsuited::kSelectorMismatch:
          out.push_back("device " + name + " does not match the selector of claim " + key);
          break;
      }
      auto node = nodes.find(c.nodeName);
      static const std::map<std::string, std::string> kNoLabels;
      if (!reachable(d, c.nodeName, node == nodes.end() ? kNoLabels : node->second->meta.labels)) {
        out.push_back("device " + name + " is not reachable from node " + c.nodeName +
                      " of claim " + key);
      }
    }
    if (!meetAllConstraints(c, devices)) {
      out.push_back("the devices of claim " + key + " do not meet its constraints");
    }
  }

  for (const auto& d : s.devices) {
    if (d.phase != DevicePhase::kBound) {
      if (auto it = allocatedTo.find(d.meta.name); it != allocatedTo.end()) {
        out.push_back("device " + d.meta.name + " is " + toString(d.phase) + " but allocated to " +
                      it->second);
      }
      continue;
    }
    if (!d.claimRef) {
      out.push_back("device " + d.meta.name + " is Bound without a claimRef");
      continue;
    }
    const std::string key = objectKey(d.claimRef->ns, d.claimRef->name);
    const auto claim = claims.find(key);
    const bool claimGone = claim == claims.end() ||
                           (!d.claimRef->uid.empty() && claim->second->meta.uid != d.claimRef->uid);
    // A claim deleted under a pod that runs on leaves the device with that pod until it ends.
    if (claimGone && std::any_of(d.holders.begin(), d.holders.end(), [&](const PodRef& h) {
          auto pod = podsByUid.find(h.uid);
          return pod != podsByUid.end() && pod->second->meta.name == h.name &&
                 pod->second->meta.ns == d.claimRef->ns && !pod->second->finished();
        })) {
      continue;
    }
    if (claim != claims.end() && claimGone) {
      out.push_back("device " + d.meta.name + " is Bound to an earlier claim " + key + " (uid " +
                    d.claimRef->uid + ")");
      continue;
    }
    // Free to every bind already, written Available later (decideDevice).
    if (!claimGone && freedByClaim(d, allocationOf(*claim->second)) &&
        !allocatedTo.contains(d.meta.name) && !lostBy.contains(d.meta.name)) {
      continue;
    }
    // One lost by a claim whose pod still runs may be the device that pod uses: it is held
    // for that claim (Bound to it again, listed as lost until the claim takes it back).
    auto lost = lostBy.find(d.meta.name);
    if (lost != lostBy.end()) {
      if (lost->second != key) {
        out.push_back("device " + d.meta.name + ", lost by claim " + lost->second +
                      " while its pod runs, is Bound to claim " + key);
      }
      continue;
    }
    auto it = allocatedTo.find(d.meta.name);
    if (it == allocatedTo.end() || it->second != key) {
      out.push_back("device " + d.meta.name + " is Bound to claim " + key +
                    " which does not list it");
    }
  }

  for (const auto& p : s.pods) {
    if (p.nodeName.empty() || p.finished() || p.meta.deleting) {
      continue;
    }
    for (const auto& name : p.claims) {
      const std::string key = objectKey(p.meta.ns, name);
      auto it = claims.find(key);
      if (it == claims.end()) {
        out.push_back("pod " + objectKey(p.meta.ns, p.meta.name) + " runs without its claim " +
                      key);
        continue;
      }
      const auto& c = *it->second;
      // A Lost claim lost a device under its running pod: reported there, not inconsistent.
      if (c.phase == ClaimPhase::kPending || p.meta.uid.empty() || !c.heldBy(p.meta.uid)) {
        out.push_back("pod " + objectKey(p.meta.ns, p.meta.name) + " runs on " + p.nodeName +
                      " but does not hold its claim " + key);
      } else if (c.nodeName != p.nodeName) {
        out.push_back("pod " + objectKey(p.meta.ns, p.meta.name) + " runs on " + p.nodeName +
                      " but its claim " + key + " is on " + c.nodeName);
      }
    }
  }
  return out;
}

}  // namespace ker

// Random sequences of the model's status transitions, composed the way the components compose
// them (a bind writes its devices and then its claim; a release frees what the claim listed),
// with the data model's invariants checked after every step. Random arguments make many steps
// refused; a refused transition must leave its object exactly as it was, and a refused step
// changes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "model/claim_transitions.h"
#include "model/device_transitions.h"
#include "model/invariants.h"
#include "model/suitability.h"
#include "scheduler_fixtures.h"

namespace ker {
namespace {

const std::vector<std::string> kNodes = {"n0", "n1"};

struct World {
  std::map<std::string, ExtendedResource> devices;
  std::map<std::string, ExtendedResourceClaim> claims;
  std::map<std::string, Pod> pods;  // by name; a pod gone is erased
  int podGeneration = 0;            // a pod coming back gets a new uid

  ClusterSnapshot snapshot() const {
    ClusterSnapshot s;
    for (const auto& [_, d] : devices) {
      s.devices.push_back(d);
    }
    for (const auto& [_, c] : claims) {
      s.claims.push_back(c);
    }
    for (const auto& [_, p] : pods) {
      s.pods.push_back(p);
    }
    for (const auto& n : kNodes) {
      Node node;
      node.meta.name = n;
      s.nodes.push_back(node);
    }
    return s;
  }
};

ExtendedResource freshDevice(const std::string& node, int i) {
  auto d = testing::device(node + "-gpu" + std::to_string(i), node,
                           {{"model", i % 2 == 0 ? "k80" : "a100"}});
  EXPECT_TRUE(initializeDevice(d).ok());
  d.phaseWritten = true;
  return d;
}

Pod pod(const std::string& name, const std::string& claim, int generation) {
  Pod p;
  p.meta.name = name;
  p.meta.ns = "default";
  p.meta.uid = "uid-" + name + "-" + std::to_string(generation);
  p.phase = "Running";
  p.claims = {claim};
  return p;
}

World initialWorld() {
  World w;
  for (const auto& n : kNodes) {
    for (int i = 0; i < 3; ++i) {
      auto d = freshDevice(n, i);
      w.devices[d.meta.name] = d;
    }
  }
  auto add = [&](ExtendedResourceClaim c) {
    EXPECT_TRUE(initializeClaim(c).ok());
    c.phaseWritten = true;
    w.claims[c.meta.name] = c;
  };
  add(testing::claim("k80", 1, {{"model", "k80"}}));
  add(testing::claim("pair", 2));
  auto shared = testing::claim("shared", 1);
  shared.shareable = true;
  add(shared);
  auto named = testing::claim("named", 1);
  named.extendedResourceNames = std::vector<std::string>{"n1-gpu2"};
  add(named);
  const std::vector<std::pair<std::string, std::string>> pods = {
      {"p-k80", "k80"},         {"p-pair", "pair"},       {"p-shared-a", "shared"},
      {"p-shared-b", "shared"}, {"p-shared-c", "shared"}, {"p-named", "named"}};
  for (const auto& [name, claim] : pods) {
    w.pods[name] = pod(name, claim, 0);
  }
  return w;
}

PodRef refOf(const Pod& p) {
  return PodRef{p.meta.name, p.meta.uid};
}

ClaimRef refOf(const ExtendedResourceClaim& c) {
  return ClaimRef{c.meta.ns, c.meta.name, c.meta.uid};
}

// The object as JSON, to compare a refused transition's object with the one it was given.
template <typename Object>
std::string image(const Object& o) {
  return o.toJson(SystemTime{}).dump() + std::to_string(static_cast<int>(o.phase));
}

// Applies `t` to a copy of `o`; a refusal must leave the copy as it was.
template <typename Object, typename Transition>
std::optional<Object> tryTransition(const Object& o, Transition t) {
  Object next = o;
  const std::string before = image(next);
  const Status s = t(next);
  if (!s.ok()) {
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.message();
    EXPECT_EQ(image(next), before) << "a refused transition changed its object: " << s.message();
    return std::nullopt;
  }
  return next;
}

class Steps {
 public:
  Steps(World& w, std::mt19937& rng) : w_(w), rng_(rng) {}

  // One random step; true when it changed the world.
  bool step(std::string& what) {
    switch (pick(8)) {
      case 0:
        return bind(what);
      case 1:
        return podGoes(what);
      case 2:
        return deviceDeleted(what);
      case 3:
        return deviceComesBack(what);
      case 4:
        return recover(what);
      case 5:
        return health(what);
      case 6:
        return nodeRegistration(what);
      default:
        return undoBind(what);
    }
  }

 private:
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  template <typename Map>
  auto& any(Map& m) {
    auto it = m.begin();
    std::advance(it, pick(m.size()));
    return it->second;
  }

  // The claim a device's claimRef names, as the world has it.
  std::optional<ClaimAllocation> claimNamedBy(const ExtendedResource& d) const {
    return namedAllocation(d, [&](const std::string& key) -> const ExtendedResourceClaim* {
      auto c = w_.claims.find(key.substr(key.find('/') + 1));
      return c == w_.claims.end() ? nullptr : &c->second;
    });
  }

  // A scheduled pod's claim gets devices on a node (or, shared and Bound, the pod joins it).
  bool bind(std::string& what) {
    if (w_.pods.empty()) {
      return false;
    }
    Pod& p = any(w_.pods);
    ExtendedResourceClaim& c = w_.claims.at(p.claims.front());
    const std::string node = kNodes[pick(kNodes.size())];
    what = "bind " + p.meta.name + " with " + c.meta.name + " on " + node;
    if (!p.nodeName.empty()) {
      return false;
    }
    std::map<std::string, ExtendedResource> devices;
    std::optional<ExtendedResourceClaim> claim;
    if (c.phase == ClaimPhase::kBound && c.shareable) {
      what += " (join)";
      for (const auto& name : c.allocated) {
        auto d = tryTransition(w_.devices.at(name), [&](ExtendedResource& d) {
          return joinDevice(d, c.meta.uid, c.holdersWith(refOf(p)));
        });
        if (!d) {
          return false;
        }
        devices[name] = *d;
      }
      claim = tryTransition(c, [&](ExtendedResourceClaim& c) { return joinClaim(c, refOf(p)); });
    } else {
      std::vector<std::string> names;
      for (const auto& [name, d] : w_.devices) {
        // Sometimes an unsuitable one, which the transition must refuse if it is taken.
        const auto named = claimNamedBy(d);
        const bool fits = offerable(d, named) && suits(d, c) && reachable(d, node, {});
        if (static_cast<int64_t>(names.size()) < c.extendedResourceNum && (fits || pick(8) == 0)) {
          names.push_back(name);
        }
      }
      if (static_cast<int64_t>(names.size()) != c.extendedResourceNum) {
        return false;
      }
      for (const auto& name : names) {
        const ExtendedResource& d = w_.devices.at(name);
        if (!suits(d, c) || !reachable(d, node, {})) {
          return false;  // the planner never chooses it; only its state is the model's to check
        }
        const auto named = claimNamedBy(d);
        auto next = tryTransition(d, [&](ExtendedResource& d) {
          return bindDevice(d, refOf(c), c.allocation + 1, {refOf(p)}, named);
        });
        if (!next) {
          return false;
        }
        devices[name] = *next;
      }
      claim = tryTransition(
          c, [&](ExtendedResourceClaim& c) { return bindClaim(c, refOf(p), node, names); });
    }
    if (!claim) {
      return false;
    }
    c = *claim;
    p.nodeName = c.nodeName;
    for (auto& [name, d] : devices) {
      w_.devices[name] = d;
    }
    return true;
  }

  // A pod ends: the last holder's claim is released, which frees the devices it listed
  // (freedByClaim); each is written Available too, or left for a later bind to take over as it
  // is. Another holder only leaves. The pod is recreated (a new uid) later by this step too.
  bool podGoes(std::string& what) {
    const auto& [name, claimName] = podNames()[pick(podNames().size())];
    what = "pod " + name + " goes or comes back";
    auto it = w_.pods.find(name);
    if (it == w_.pods.end()) {
      w_.pods[name] = pod(name, claimName, ++w_.podGeneration);
      return true;
    }
    const Pod gone = it->second;
    ExtendedResourceClaim& c = w_.claims.at(claimName);
    if (c.heldBy(gone.meta.uid)) {
      const bool last = c.holders().size() == 1;
      auto next = tryTransition(c, [&](ExtendedResourceClaim& c) {
        return last ? releaseClaim(c, "pod " + name + " is gone") : leaveClaim(c, {refOf(gone)});
      });
      if (!next) {
        return false;
      }
      if (last) {
        for (const auto& device : c.listedDevices()) {
          auto d = w_.devices.find(device);
          if (d == w_.devices.end() || d->second.claimRef != refOf(c)) {
            continue;  // gone, or not Bound to the claim (the executor checks the same)
          }
          if (pick(2) == 0) {
            continue;  // not written yet
          }
          if (auto freed = tryTransition(d->second, [&](ExtendedResource& d) {
                return freeDevice(d, "released", refOf(c));
              })) {
            d->second = *freed;
          }
        }
      }
      c = *next;
    }
    w_.pods.erase(it);
    return true;
  }

  const std::vector<std::pair<std::string, std::string>>& podNames() {
    static const std::vector<std::pair<std::string, std::string>> kPods = {
        {"p-k80", "k80"},         {"p-pair", "pair"},       {"p-shared-a", "shared"},
        {"p-shared-b", "shared"}, {"p-shared-c", "shared"}, {"p-named", "named"}};
    return kPods;
  }

  // A device vanishes from its node: a claim allocated it is Lost.
  bool deviceDeleted(std::string& what) {
    if (w_.devices.empty()) {
      return false;
    }
    const std::string name = any(w_.devices).meta.name;
    what = "device " + name + " deleted";
    for (auto& [_, c] : w_.claims) {
      if (std::find(c.allocated.begin(), c.allocated.end(), name) == c.allocated.end()) {
        continue;
      }
      auto next = tryTransition(c, [&](ExtendedResourceClaim& c) {
        return markClaimLost(c, {name}, "extended resource " + name + " was deleted");
      });
      if (!next) {
        return false;
      }
      c = *next;
    }
    w_.devices.erase(name);
    return true;
  }

  // A deleted device is created again: a claim that lost it binds it back.
  bool deviceComesBack(std::string& what) {
    const std::string node = kNodes[pick(kNodes.size())];
    const int i = static_cast<int>(pick(3));
    ExtendedResource d = freshDevice(node, i);
    what = "device " + d.meta.name + " comes back";
    if (w_.devices.count(d.meta.name) != 0) {
      return false;
    }
    for (const auto& [_, c] : w_.claims) {
      if (std::find(c.lost.begin(), c.lost.end(), d.meta.name) != c.lost.end()) {
        auto back = tryTransition(d, [&](ExtendedResource& d) {
          return rebindDevice(d, refOf(c), c.allocation, c.holders(), "its claim lists it");
        });
        EXPECT_TRUE(back) << "a free device is bound back to the claim that lost it";
        if (back) {
          d = *back;
        }
        break;
      }
    }
    w_.devices[d.meta.name] = d;
    return true;
  }

  // A Lost claim takes back a lost device Bound to it again.
  bool recover(std::string& what) {
    ExtendedResourceClaim& c = any(w_.claims);
    what = "claim " + c.meta.name + " recovers";
    std::vector<std::string> back;
    for (const auto& name : c.lost) {
      auto d = w_.devices.find(name);
      if (d != w_.devices.end() && d->second.phase == DevicePhase::kBound &&
          d->second.claimRef == refOf(c)) {
        back.push_back(name);
      }
    }
    auto next = tryTransition(c, [&](ExtendedResourceClaim& c) { return recoverClaim(c, back); });
    if (!next) {
      return false;
    }
    c = *next;
    return true;
  }

  bool health(std::string& what) {
    if (w_.devices.empty()) {
      return false;
    }
    ExtendedResource& d = any(w_.devices);
    const bool sick = pick(2) == 0;
    what = "device " + d.meta.name + (sick ? " unhealthy" : " healthy");
    auto next = tryTransition(d, [&](ExtendedResource& d) {
      return sick ? markDeviceUnhealthy(d, Reason::kDeviceUnhealthy, "device node missing")
                  : markDeviceHealthy(d);
    });
    if (!next) {
      return false;
    }
    d = *next;
    return true;
  }

  // The device's node loses or regains its Node object: a free device is parked or offered
  // again; any other is refused, untouched.
  bool nodeRegistration(std::string& what) {
    if (w_.devices.empty()) {
      return false;
    }
    ExtendedResource& d = any(w_.devices);
    const bool gone = pick(2) == 0;
    what = "device " + d.meta.name + (gone ? " parked off its node" : " offered again");
    auto next = tryTransition(d, [&](ExtendedResource& d) {
      return gone ? parkDeviceOffNode(d, "node gone") : unparkDevice(d);
    });
    if (!next) {
      return false;
    }
    EXPECT_FALSE(next->claimRef) << "only a free device is parked or unparked";
    d = *next;
    return true;
  }

  // A bind undone before its pod was bound: the claim and its devices as before it.
  bool undoBind(std::string& what) {
    ExtendedResourceClaim& c = any(w_.claims);
    what = "undo the bind of claim " + c.meta.name;
    if (c.holders().size() != 1 || !c.lost.empty()) {
      return false;
    }
    auto holder = std::find_if(w_.pods.begin(), w_.pods.end(), [&](const auto& p) {
      return p.second.meta.uid == c.holders().front().uid;
    });
    std::map<std::string, ExtendedResource> devices;
    for (const auto& name : c.allocated) {
      auto d = tryTransition(w_.devices.at(name),
                             [&](ExtendedResource& d) { return undoDeviceBind(d); });
      if (!d) {
        return false;
      }
      devices[name] = *d;
    }
    auto next = tryTransition(c, [&](ExtendedResourceClaim& c) { return undoClaimBind(c); });
    if (!next) {
      return false;
    }
    c = *next;
    for (auto& [name, d] : devices) {
      w_.devices[name] = d;
    }
    if (holder != w_.pods.end()) {
      holder->second.nodeName.clear();
    }
    return true;
  }

  World& w_;
  std::mt19937& rng_;
};

TEST(ModelTransitions, RandomSequencesKeepEveryInvariant) {
  constexpr int kSequences = 300;
  constexpr int kSteps = 80;
  size_t applied = 0;
  size_t refused = 0;
  for (int seed = 1; seed <= kSequences; ++seed) {
    std::mt19937 rng(seed);
    World w = initialWorld();
    ASSERT_TRUE(checkInvariants(w.snapshot()).empty());
    Steps steps(w, rng);
    std::vector<std::string> done;
    for (int i = 0; i < kSteps; ++i) {
      std::string what;
      (steps.step(what) ? applied : refused)++;
      done.push_back(what);
      const auto violations = checkInvariants(w.snapshot());
      if (!violations.empty()) {
        std::string trail;
        for (const auto& d : done) {
          trail += "\n  " + d;
        }
        FAIL() << "seed " << seed << ", step " << i << ": " << violations.front()
               << "\nafter:" << trail;
      }
    }
  }
  // Not vacuous: most kinds of step happened many times, and many were refused.
  EXPECT_GT(applied, static_cast<size_t>(kSequences * kSteps / 4));
  EXPECT_GT(refused, static_cast<size_t>(kSequences * kSteps / 10));
}

TEST(ModelTransitions, ARefusedTransitionLeavesItsObjectAsItWas) {
  auto c = testing::claim("c", 1);
  EXPECT_FALSE(tryTransition(c, [](ExtendedResourceClaim& c) { return releaseClaim(c, "x"); }));
  EXPECT_FALSE(tryTransition(c, [](ExtendedResourceClaim& c) { return joinClaim(c, {"p", "u"}); }));
  EXPECT_FALSE(tryTransition(c, [](ExtendedResourceClaim& c) { return recoverClaim(c, {"d"}); }));
  ASSERT_TRUE(bindClaim(c, {"p", "u"}, "n0", {"d0"}).ok());
  EXPECT_FALSE(tryTransition(c, [](ExtendedResourceClaim& c) {
    return bindClaim(c, {"q", "v"}, "n0", {});
  })) << "a Bound claim is never bound again";
  EXPECT_FALSE(tryTransition(
      c, [](ExtendedResourceClaim& c) { return markClaimLost(c, {"d9"}, "not its device"); }));
  EXPECT_FALSE(tryTransition(c, [](ExtendedResourceClaim& c) {
    return leaveClaim(c, {{"p", "u"}});
  })) << "the last holder is released, never left without holders";

  auto d = testing::device("d0", "n0", {});
  ASSERT_TRUE(bindDevice(d, {"default", "c", "uid-c"}, 1, {{"p", "u"}}).ok());
  EXPECT_FALSE(tryTransition(d, [](ExtendedResource& d) {
    return bindDevice(d, {"default", "other", "uid-o"}, 1, {});
  })) << "a Bound device is never taken by a second claim";
  EXPECT_FALSE(tryTransition(d, [](ExtendedResource& d) {
    return joinDevice(d, "uid-o", {{"q", "v"}});
  })) << "nor given holders through another claim";
}

// A joining pod is added after the claim's holders; pods only the device names stay, in their
// order, the earliest dropped first when the device would name more than kMaxClaimHolders.
TEST(DeviceTransitions, AJoinKeepsWhomTheDeviceNamesWithinTheBound) {
  auto d = testing::device("d0", "n0", {});
  ASSERT_TRUE(bindDevice(d, {"default", "c", "uid-c"}, 1, {{"p", "u"}, {"early", "e"}}).ok());
  ASSERT_TRUE(joinDevice(d, "uid-c", {{"p", "u"}, {"q", "v"}}).ok());
  EXPECT_EQ(d.holders, (std::vector<PodRef>{{"p", "u"}, {"early", "e"}, {"q", "v"}}));
  ASSERT_TRUE(joinDevice(d, "uid-c", {{"p", "u"}, {"q", "v"}}).ok());
  EXPECT_EQ(d.holders.size(), 3u) << "a pod already named is named once";

  std::vector<PodRef> full;
  for (size_t i = 0; i + 1 < kMaxClaimHolders; ++i) {
    full.push_back({"h" + std::to_string(i), "uid-h" + std::to_string(i)});
  }
  full.push_back({"last", "uid-last"});
  ASSERT_TRUE(joinDevice(d, "uid-c", full).ok());
  EXPECT_EQ(d.holders.size(), kMaxClaimHolders);
  EXPECT_EQ(d.holders.back(), (PodRef{"last", "uid-last"}));
}

}  // namespace
}  // namespace ker

#include "scheduler/preemption/preemption_plan.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "model/device_transitions.h"

namespace ker {

HeldClaim::HeldClaim(std::string key, DeviceIndex::Holds holds)
    : key(std::move(key)), holds(std::move(holds)) {
  for (const auto& [resource, names] : this->holds) {
    devices.insert(devices.end(), names.begin(), names.end());
  }
}

namespace {

// Exhaustive search stops after this many fits; past it the plan is minimal (no victim can be
// spared) rather than smallest. Nodes rarely carry more than a handful of holders.
constexpr size_t kMaxExactFits = 1024;

// The node's devices in a private index, where releasing a holder's claims is tried by
// re-indexing its devices as free and dropping its claim holds, then putting them back. The
// fit itself is the planner's, so preemption and filter can never disagree on matching.
class Simulation {
 public:
  explicit Simulation(const PreemptionRequest& request) : request_(request) {
    for (const auto& d : request.devices) {
      if (d) {
        devices_[d->meta.name] = d;
        index_.upsert(d);
      }
    }
    for (const auto& h : request.holders) {
      for (const auto& c : h.claims) {
        index_.setClaimDevices(c.key, c.holds);
      }
    }
    // Released for good: fit() never puts them back, as candidates never include them.
    setReleased(request.released, true);
  }

  // Whether the holder has a device the node reaches: only those can make room.
  bool holdsHere(const PreemptionHolder& holder) const {
    for (const auto& c : holder.claims) {
      for (const auto& name : c.devices) {
        if (devices_.contains(name)) {
          return true;
        }
      }
    }
    return false;
  }

  // The pod's plan on the node with the given holders' claims released.
  NodePlan fit(const std::vector<size_t>& released) {
    ++fits_;
    setReleased(released, true);
    NodePlan plan = planNode(request_.claims, request_.podUid, request_.nodeName,
                             request_.nodeLabels, index_, request_.scoring);
    setReleased(released, false);
    return plan;
  }

  size_t fits() const { return fits_; }

 private:
  void setReleased(const std::vector<size_t>& holders, bool released) {
    for (const size_t h : holders) {
      for (const auto& c : request_.holders[h].claims) {
        index_.setClaimDevices(c.key, released ? DeviceIndex::Holds{} : c.holds);
        for (const auto& name : c.devices) {
          auto it = devices_.find(name);
          if (it == devices_.end()) {
            continue;
          }
          if (!released) {
            index_.upsert(it->second);
            continue;
          }
          // What the controller makes of a device once its claim is released (freeDevice): one
          // its agent marked unhealthy stays out of offer, and so does one that is invalid or
          // being deleted, as they would.
          auto freed = std::make_shared<ExtendedResource>(*it->second);
          if (freeDevice(*freed, {}, ClaimRef{}).ok()) {
            freed->phaseWritten = true;
            index_.upsert(std::move(freed));
          }
        }
      }
    }
  }

  const PreemptionRequest& request_;
  DeviceIndex index_;
  std::unordered_map<std::string, DevicePtr> devices_;
  size_t fits_ = 0;
};

PreemptionPlan none(std::string message) {
  PreemptionPlan plan;
  plan.outcome = PreemptionPlan::Outcome::kNone;
  plan.message = std::move(message);
  return plan;
}

struct Choice {
  std::vector<size_t> victims;  // indexes into the request's holders
  int64_t prioritySum = 0;
  NodePlan plan;
};

std::vector<size_t> joined(const std::vector<size_t>& a, const std::vector<size_t>& b) {
  std::vector<size_t> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// Every k-subset of `pool` (positions in order) holding a pod of the pool's top priority,
// while the budget lasts, each tried with `forced` released too; the one of lowest priority
// sum that fits. The first found wins ties, which is the earliest holders in (priority, key)
// order.
std::optional<Choice> bestOfSize(Simulation& sim, const PreemptionRequest& request,
                                 const std::vector<size_t>& forced, const std::vector<size_t>& pool,
                                 size_t k, bool& exhausted) {
  const int32_t top = request.holders[pool.back()].priority;
  std::optional<Choice> best;
  std::vector<size_t> pos(k);
  std::iota(pos.begin(), pos.end(), 0);
  std::vector<size_t> set(k);
  while (true) {
    if (request.holders[pool[pos.back()]].priority == top) {
      if (sim.fits() >= kMaxExactFits) {
        exhausted = true;
        return best;
      }
      for (size_t i = 0; i < k; ++i) {
        set[i] = pool[pos[i]];
      }
      int64_t sum = 0;
      for (const size_t h : set) {
        sum += request.holders[h].priority;
      }
      if (!best || sum < best->prioritySum) {
        NodePlan plan = sim.fit(joined(forced, set));
        if (plan.fits) {
          best = Choice{set, sum, std::move(plan)};
        }
      }
    }
    // The next combination in lexicographic order.
    size_t i = k;
    while (i > 0 && pos[i - 1] == pool.size() - k + (i - 1)) {
      --i;
    }
    if (i == 0) {
      return best;
    }
    ++pos[i - 1];
    for (size_t j = i; j < k; ++j) {
      pos[j] = pos[j - 1] + 1;
    }
  }
}

// Starting from `released` (which make room), spares each of `order` in turn whenever the
// others still make room; kube-scheduler's reprieve. Returns who is left.
std::vector<size_t> reprieve(Simulation& sim, std::vector<size_t> released,
                             const std::vector<size_t>& order, const std::vector<size_t>& forced) {
  for (const size_t h : order) {
    std::vector<size_t> without;
    std::copy_if(released.begin(), released.end(), std::back_inserter(without),
                 [&](size_t v) { return v != h; });
    if (sim.fit(joined(forced, without)).fits) {
      released = std::move(without);
    }
  }
  return released;
}

// Higher priority first, then key: the order in which holders are spared.
void mostImportantFirst(const PreemptionRequest& request, std::vector<size_t>& holders) {
  std::stable_sort(holders.begin(), holders.end(), [&](size_t a, size_t b) {
    const auto& ha = request.holders[a];
    const auto& hb = request.holders[b];
    return ha.priority != hb.priority ? ha.priority > hb.priority : ha.key < hb.key;
  });
}

}  // namespace

PreemptionPlan planPreemption(const PreemptionRequest& request) {
  if (request.claims.block != ClaimsBlock::kNone) {
    return none(request.claims.blockMessage);
  }
  if (request.preemptNever) {
    return none("the pod's preemptionPolicy is Never");
  }
  Simulation sim(request);
  NodePlan asIs = sim.fit({});
  if (asIs.unresolvable) {
    return none(std::move(asIs.message));
  }
  if (asIs.fits) {
    PreemptionPlan plan;
    plan.outcome = PreemptionPlan::Outcome::kFitsAlready;
    plan.assignment = std::move(asIs.assignment);
    return plan;
  }

  // Only holders of lower priority with a device here may be victims, lowest priority first.
  std::vector<size_t> candidates;
  for (size_t h = 0; h < request.holders.size(); ++h) {
    const bool released =
        std::find(request.released.begin(), request.released.end(), h) != request.released.end();
    if (!released && request.holders[h].priority < request.priority &&
        sim.holdsHere(request.holders[h])) {
      candidates.push_back(h);
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(), [&](size_t a, size_t b) {
    const auto& ha = request.holders[a];
    const auto& hb = request.holders[b];
    return ha.priority != hb.priority ? ha.priority < hb.priority : ha.key < hb.key;
  });
  if (candidates.empty()) {
    return none("no pod of lower priority holds devices this node reaches; " + asIs.message);
  }
  if (NodePlan all = sim.fit(candidates); !all.fits) {
    return none("not even preempting all " + std::to_string(candidates.size()) +
                " lower-priority holders makes room; " + all.message);
  }

  // As kube-scheduler does, holders a PodDisruptionBudget protects are spared first, most
  // important first, with every other candidate released: those that cannot be are victims
  // in every set, and the rest is chosen among the unprotected ones.
  std::vector<size_t> forced;
  std::vector<size_t> unprotected;
  for (const size_t h : candidates) {
    (request.holders[h].violatesPdb ? forced : unprotected).push_back(h);
  }
  if (!forced.empty()) {
    mostImportantFirst(request, forced);
    forced = reprieve(sim, forced, forced, unprotected);
  }

  // The lowest priority level whose holders, with all those below, make room: every set that
  // fits includes a holder of that level, as more free devices never make a fit fail.
  std::vector<size_t> pool;
  if (!sim.fit(forced).fits) {
    for (size_t i = 0; i < unprotected.size(); ++i) {
      pool.push_back(unprotected[i]);
      const bool levelEnds =
          i + 1 == unprotected.size() ||
          request.holders[unprotected[i + 1]].priority != request.holders[unprotected[i]].priority;
      if (levelEnds && (i + 1 == unprotected.size() || sim.fit(joined(forced, pool)).fits)) {
        break;
      }
    }
  }

  std::optional<Choice> best;
  bool exhausted = false;
  for (size_t k = 1; k <= pool.size() && !best && !exhausted; ++k) {
    best = bestOfSize(sim, request, forced, pool, k, exhausted);
  }
  if (!best) {
    std::vector<size_t> order = pool;
    mostImportantFirst(request, order);
    best = Choice{reprieve(sim, pool, order, forced), 0, {}};
    best->plan = sim.fit(joined(forced, best->victims));
  }
  std::vector<size_t> victims = joined(forced, best->victims);
  std::stable_sort(victims.begin(), victims.end(), [&](size_t a, size_t b) {
    const auto& ha = request.holders[a];
    const auto& hb = request.holders[b];
    return ha.priority != hb.priority ? ha.priority < hb.priority : ha.key < hb.key;
  });

  PreemptionPlan plan;
  plan.outcome = PreemptionPlan::Outcome::kVictims;
  plan.victims = std::move(victims);
  plan.pdbViolations = static_cast<int64_t>(forced.size());
  plan.assignment = std::move(best->plan.assignment);
  return plan;
}

}  // namespace ker

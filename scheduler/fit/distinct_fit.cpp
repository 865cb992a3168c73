#include "scheduler/fit/distinct_fit.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "model/suitability.h"

namespace ker {

namespace {

// The claims' devices as a flow: source → claim (capacity: how many it wants) → the claim's
// value of its distinct property (1, for a claim with one) → device (1) → sink. Every claim is
// served exactly when the flow saturates the claims; augmenting paths find it, trying each
// claim's devices in list order.
class DistinctFlow {
 public:
  DistinctFlow(const std::vector<const ExtendedResourceClaim*>& claims,
               const std::vector<std::vector<size_t>>& eligible,
               const std::vector<std::vector<uint32_t>>& distinct, size_t deviceCount)
      : firstDevice_(2 + claims.size()) {
    size_t nodes = firstDevice_ + deviceCount;
    std::vector<std::map<uint32_t, size_t>> valueNode(claims.size());
    for (size_t c = 0; c < claims.size(); ++c) {
      if (!distinct[c].empty()) {
        for (size_t d : eligible[c]) {
          valueNode[c].try_emplace(distinct[c][d], 0);
        }
        for (auto& [value, node] : valueNode[c]) {
          node = nodes++;
        }
      }
    }
    out_.resize(nodes);
    for (size_t c = 0; c < claims.size(); ++c) {
      const auto want = static_cast<uint32_t>(std::max<int64_t>(claims[c]->extendedResourceNum, 0));
      wanted_ += want;
      addEdge(kSource, 2 + c, want);
      for (const auto& [value, node] : valueNode[c]) {
        addEdge(2 + c, node, 1);
      }
      for (size_t d : eligible[c]) {
        const size_t from = distinct[c].empty() ? 2 + c : valueNode[c].at(distinct[c][d]);
        claimOfEdge_.emplace_back(edges_.size(), c);
        addEdge(from, firstDevice_ + d, 1);
      }
    }
    for (size_t d = 0; d < deviceCount; ++d) {
      addEdge(firstDevice_ + d, kSink, 1);
    }
  }

  // How many devices the claims get together at most; every claim got all it wants when this
  // is wanted().
  size_t run() {
    size_t flow = 0;
    while (flow < wanted_) {
      visited_.assign(out_.size(), false);
      if (!augment(kSource)) {
        break;
      }
      ++flow;
    }
    return flow;
  }
  size_t wanted() const { return wanted_; }

  Picks picks(size_t claims) const {
    Picks out(claims);
    for (const auto& [edge, c] : claimOfEdge_) {
      if (edges_[edge].capacity == 0) {
        out[c].push_back(edges_[edge].to - firstDevice_);
      }
    }
    return out;
  }

 private:
  static constexpr size_t kSource = 0;
  static constexpr size_t kSink = 1;
  struct Edge {
    size_t to;
    uint32_t capacity;
  };
  void addEdge(size_t from, size_t to, uint32_t capacity) {
    out_[from].push_back(edges_.size());
    edges_.push_back({to, capacity});
    out_[to].push_back(edges_.size());
    edges_.push_back({from, 0});
  }
  bool augment(size_t node) {
    if (node == kSink) {
      return true;
    }
    visited_[node] = true;
    for (size_t e : out_[node]) {
      Edge& edge = edges_[e];
      if (edge.capacity > 0 && !visited_[edge.to] && augment(edge.to)) {
        --edge.capacity;
        ++edges_[e ^ 1].capacity;
        return true;
      }
    }
    return false;
  }

  const size_t firstDevice_;
  size_t wanted_ = 0;
  std::vector<Edge> edges_;                             // paired: edge e's residual is e ^ 1
  std::vector<std::vector<size_t>> out_;                // per node, its edges
  std::vector<std::pair<size_t, size_t>> claimOfEdge_;  // (claim → device edge, claim)
  std::vector<bool> visited_;
};

// Whether the devices picked for the units of each spanning group have values all different.
bool groupsApart(const Picks& picks, const Distinctness& distinct) {
  std::set<std::pair<size_t, uint32_t>> seen;
  for (size_t c = 0; c < picks.size(); ++c) {
    if (distinct.group[c] == Distinctness::kNoGroup) {
      continue;
    }
    for (size_t d : picks[c]) {
      if (!seen.emplace(distinct.group[c], distinct.values[c][d]).second) {
        return false;
      }
    }
  }
  return true;
}

size_t wantOf(const ExtendedResourceClaim& c) {
  return static_cast<size_t>(std::max<int64_t>(c.extendedResourceNum, 0));
}

// The spanning units' values chosen unit by unit (each its count of them, none taken by an
// earlier unit of its group, in the order its devices list them), a flow checking each full
// choice with every unit restricted to its chosen values.
class ValueChoice {
 public:
  ValueChoice(const std::vector<const ExtendedResourceClaim*>& claims,
              const std::vector<std::vector<size_t>>& eligible, const Distinctness& distinct,
              size_t deviceCount)
      : claims_(claims), eligible_(eligible), distinct_(distinct), deviceCount_(deviceCount) {
    for (size_t c = 0; c < claims.size(); ++c) {
      if (distinct.group[c] == Distinctness::kNoGroup) {
        continue;
      }
      std::vector<uint32_t> order;
      for (size_t d : eligible[c]) {
        const uint32_t v = distinct.values[c][d];
        if (std::find(order.begin(), order.end(), v) == order.end()) {
          order.push_back(v);
        }
      }
      units_.push_back({c, std::move(order), {}});
    }
  }

  // The first group whose units cannot have values of their own between them, and the most
  // devices they could get with them; nullopt when every group can.
  std::optional<std::pair<size_t, size_t>> shortGroup() const {
    std::map<size_t, std::vector<size_t>> byGroup;  // group -> indexes into units_
    for (size_t i = 0; i < units_.size(); ++i) {
      byGroup[distinct_.group[units_[i].claim]].push_back(i);
    }
    for (const auto& [group, members] : byGroup) {
      // Values as the devices of a flow without distinct properties: one unit each.
      std::vector<const ExtendedResourceClaim*> claims;
      std::vector<std::vector<size_t>> values;
      size_t valueCount = 0;
      for (size_t i : members) {
        claims.push_back(claims_[units_[i].claim]);
        values.emplace_back(units_[i].order.begin(), units_[i].order.end());
        for (uint32_t v : units_[i].order) {
          valueCount = std::max<size_t>(valueCount, size_t{v} + 1);
        }
      }
      DistinctFlow flow(claims, values, std::vector<std::vector<uint32_t>>(claims.size()),
                        valueCount);
      if (const size_t most = flow.run(); most < flow.wanted()) {
        return std::pair(group, most);
      }
    }
    return std::nullopt;
  }

  // The picks of the first choice that fits; nullopt when none did (exhausted() tells whether
  // for want of tries).
  std::optional<Picks> search() {
    if (!units_.empty() && choose(0, 0, wantOf(*claims_[units_[0].claim]))) {
      return std::move(found_);
    }
    return std::nullopt;
  }
  bool exhausted() const { return tries_ >= kMaxValueChoices; }

 private:
  struct Unit {
    size_t claim;
    std::vector<uint32_t> order;   // its devices' values, once each, in list order
    std::vector<uint32_t> chosen;  // during the search
  };

  // Chooses `left` more values for units_[i] from order[from...], then the later units'.
  bool choose(size_t i, size_t from, size_t left) {
    if (left == 0) {
      return i + 1 == units_.size() ? check()
                                    : choose(i + 1, 0, wantOf(*claims_[units_[i + 1].claim]));
    }
    Unit& u = units_[i];
    const size_t group = distinct_.group[u.claim];
    for (size_t p = from; p + left <= u.order.size() && !exhausted(); ++p) {
      if (!taken_.emplace(group, u.order[p]).second) {
        continue;
      }
      u.chosen.push_back(u.order[p]);
      if (choose(i, p + 1, left - 1)) {
        return true;
      }
      u.chosen.pop_back();
      taken_.erase({group, u.order[p]});
    }
    return false;
  }

  bool check() {
    ++tries_;
    std::vector<std::vector<size_t>> restricted = eligible_;
    for (const Unit& u : units_) {
      auto& list = restricted[u.claim];
      std::erase_if(list, [&](size_t d) {
        return std::find(u.chosen.begin(), u.chosen.end(), distinct_.values[u.claim][d]) ==
               u.chosen.end();
      });
    }
    DistinctFlow flow(claims_, restricted, distinct_.values, deviceCount_);
    if (flow.run() < flow.wanted()) {
      return false;
    }
    found_ = flow.picks(claims_.size());
    return true;
  }

  const std::vector<const ExtendedResourceClaim*>& claims_;
  const std::vector<std::vector<size_t>>& eligible_;
  const Distinctness& distinct_;
  const size_t deviceCount_;
  std::vector<Unit> units_;
  std::set<std::pair<size_t, uint32_t>> taken_;  // (group, value) chosen so far
  size_t tries_ = 0;
  Picks found_;
};

bool sameClaim(const ExtendedResourceClaim& a, const ExtendedResourceClaim& b) {
  return a.meta.uid == b.meta.uid && a.meta.ns == b.meta.ns && a.meta.name == b.meta.name;
}

}  // namespace

const DeviceConstraint* spanningDistinct(const ExtendedResourceClaim& unit) {
  for (const auto& k : unit.constraints) {
    if (!k.distinctProperty.empty() && k.requests.size() > 1) {
      return &k;
    }
  }
  return nullptr;
}

std::optional<Distinctness> distinctness(
    const std::vector<const ExtendedResourceClaim*>& claims,
    const std::vector<std::vector<size_t>>& eligible,
    const std::vector<const std::map<std::string, std::string>*>& properties) {
  if (std::all_of(claims.begin(), claims.end(),
                  [](const auto* c) { return distinctProperty(*c).empty(); })) {
    return std::nullopt;
  }
  std::map<std::string_view, uint32_t> ids;
  for (const auto* c : claims) {
    if (const std::string& property = distinctProperty(*c); !property.empty()) {
      for (const auto* p : properties) {
        if (auto it = p->find(property); it != p->end()) {
          ids.try_emplace(it->second, 0);
        }
      }
    }
  }
  // Numbered in the values' own order, so that the flow tries them in that order rather than in
  // the order the devices came in (the counted and exact paths agree).
  uint32_t next = 0;
  for (auto& [value, id] : ids) {
    id = next++;
  }
  Distinctness out;
  out.values.resize(claims.size());
  out.group.assign(claims.size(), Distinctness::kNoGroup);
  for (size_t c = 0; c < claims.size(); ++c) {
    const std::string& property = distinctProperty(*claims[c]);
    if (property.empty()) {
      continue;
    }
    out.values[c].assign(properties.size(), Distinctness::kNoValue);
    for (size_t d : eligible[c]) {
      if (auto it = properties[d]->find(property); it != properties[d]->end()) {
        out.values[c][d] = ids.at(it->second);
      }
    }
    if (spanningDistinct(*claims[c]) != nullptr) {
      out.group[c] = c;
      for (size_t earlier = 0; earlier < c; ++earlier) {
        if (out.group[earlier] != Distinctness::kNoGroup &&
            sameClaim(*claims[earlier], *claims[c])) {
          out.group[c] = out.group[earlier];
          break;
        }
      }
    }
  }
  return out;
}

size_t mostTaken(const std::vector<size_t>& eligible, const std::vector<uint32_t>& values) {
  if (values.empty()) {
    return eligible.size();
  }
  std::vector<uint32_t> seen;
  for (size_t d : eligible) {
    seen.push_back(values[d]);
  }
  std::sort(seen.begin(), seen.end());
  return static_cast<size_t>(std::unique(seen.begin(), seen.end()) - seen.begin());
}

DistinctFit fitDistinct(const std::vector<const ExtendedResourceClaim*>& claims,
                        const std::vector<std::vector<size_t>>& eligible,
                        const Distinctness& distinct, size_t deviceCount) {
  DistinctFit out;
  DistinctFlow relaxed(claims, eligible, distinct.values, deviceCount);
  if (relaxed.run() < relaxed.wanted()) {
    return out;
  }
  Picks picks = relaxed.picks(claims.size());
  if (groupsApart(picks, distinct)) {
    out.picks = std::move(picks);
    return out;
  }
  ValueChoice choice(claims, eligible, distinct, deviceCount);
  if (auto shortGroup = choice.shortGroup()) {
    out.miss = DistinctMiss::kValues;
    out.group = shortGroup->first;
    out.most = shortGroup->second;
    return out;
  }
  out.picks = choice.search();
  if (!out.picks && choice.exhausted()) {
    out.miss = DistinctMiss::kTries;
  }
  return out;
}

}  // namespace ker

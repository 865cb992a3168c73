#include "scheduler/fit/planner.h"

#include <algorithm>

#include "common/label_selector.h"
#include "model/made_claims.h"
#include "model/suitability.h"

namespace ker {

ClassRequests classRequestsOf(const Pod& pod, const ClassSource& source) {
  if (pod.extendedRequests.empty() || !source) {
    return {};
  }
  return classRequests(pod.extendedRequests, ClassTable(source()));
}

bool withoutClaims(const Pod& pod, const ClassRequests& classes) {
  return pod.claims.empty() && pod.invalid.empty() && pod.awaitingTemplates.empty() &&
         classes.empty();
}

namespace {

PodClaims blocked(PodClaims out, ClaimsBlock block, std::string message) {
  out.block = block;
  out.blockMessage = std::move(message);
  return out;
}

}  // namespace

PodClaims resolveClaims(const Pod& pod, const ClaimLookup& lookup, const ClassRequests& classes,
                        const ClaimLookup& unrecordedLookup) {
  PodClaims out;
  if (!pod.invalid.empty()) {
    return blocked(std::move(out), ClaimsBlock::kInvalidPod,
                   "pod " + objectKey(pod.meta.ns, pod.meta.name) + ": " + pod.invalid);
  }
  if (!pod.awaitingTemplates.empty()) {
    const std::string& entry = pod.awaitingTemplates.front();
    std::string tmpl;
    for (const auto& e : pod.claimTemplates) {
      if (e.name == entry) {
        tmpl = e.templateName;
      }
    }
    return blocked(std::move(out), ClaimsBlock::kAwaitingClaim,
                   "waiting for the controller to create the claim for template entry " + entry +
                       " (template " + objectKey(pod.meta.ns, tmpl) + ")");
  }
  std::map<std::string, const ClassRequest*> requestOf;  // claim name -> the request it serves
  std::vector<std::string> names = pod.claims;
  for (const auto& [resource, request] : classes) {
    if (auto recorded = pod.resourceClaims.find(resource); recorded != pod.resourceClaims.end()) {
      requestOf[recorded->second] = &request;
      continue;
    }
    if (const int64_t n = devicesNeeded(request.shares); n > kMaxClaimDevices) {
      return blocked(std::move(out), ClaimsBlock::kClaimInvalid,
                     "the containers ask for " + std::to_string(n) + " of " + resource +
                         ", more devices than a claim holds (" + std::to_string(kMaxClaimDevices) +
                         ")");
    }
    const std::string name = classClaimName(pod, request);
    requestOf[name] = &request;
    names.push_back(name);
    out.unrecorded.push_back({resource, name, std::nullopt});
  }
  for (const auto& name : names) {
    const std::string key = objectKey(pod.meta.ns, name);
    auto made = std::find_if(out.unrecorded.begin(), out.unrecorded.end(),
                             [&](const UnrecordedClaim& u) { return u.name == name; });
    const bool unrecorded = made != out.unrecorded.end();
    ClaimPtr claim = unrecorded && unrecordedLookup ? unrecordedLookup(key) : lookup(key);
    if (!claim) {
      if (!unrecorded) {
        return blocked(std::move(out), ClaimsBlock::kClaimMissing, "claim " + key + " not found");
      }
      // Fitted as the claim the bind makes: the protection finalizer goes on at the create, as
      // the controller would add it to any claim at once.
      made->make = claimFromClass(pod, *requestOf.at(name), /*protect=*/true);
      claim = std::make_shared<const ExtendedResourceClaim>(
          ExtendedResourceClaim::fromJson(*made->make));
    }
    if (!claim->invalid.empty()) {
      return blocked(std::move(out), ClaimsBlock::kClaimInvalid,
                     "claim " + key + " is invalid: " + claim->invalid);
    }
    if (auto r = requestOf.find(name); r != requestOf.end()) {
      if (std::string problem = classClaimProblem(pod, *r->second, *claim); !problem.empty()) {
        return blocked(std::move(out), ClaimsBlock::kClaimInvalid, std::move(problem));
      }
    }
    if (Status s = validate(claim->metadataRequirements); !s.ok()) {
      return blocked(std::move(out), ClaimsBlock::kClaimInvalid,
                     "claim " + key + " has an invalid metadataRequirements: " + s.message());
    }
    if (claim->meta.deleting) {
      return blocked(std::move(out), ClaimsBlock::kClaimDeleting,
                     "claim " + key + " is being deleted");
    }
    switch (claim->phase) {
      case ClaimPhase::kLost:
        return blocked(std::move(out), ClaimsBlock::kClaimLost,
                       "claim " + key + " is Lost" +
                           (claim->message.empty() ? std::string() : ": " + claim->message));
      case ClaimPhase::kBound: {
        const bool own = claim->heldBy(pod.meta.uid, pod.meta.name);
        if (!own && !claim->shareable) {
          return blocked(
              std::move(out), ClaimsBlock::kClaimHeld,
              "claim " + key + " is held by pod " +
                  (claim->holders().empty() ? std::string("<unknown>") : claim->holderNames()));
        }
        if (!own && claim->holders().size() >= kMaxClaimHolders) {
          return blocked(std::move(out), ClaimsBlock::kClaimHeld,
                         "shared claim " + key + " already has " +
                             std::to_string(claim->holders().size()) + " holders, the most " +
                             std::to_string(kMaxClaimHolders) + " it may have");
        }
        if (!out.fixedNode.empty() && out.fixedNode != claim->nodeName) {
          const std::string both = out.fixedNode + ", " + claim->nodeName;
          return blocked(std::move(out), ClaimsBlock::kSplitAcrossNodes,
                         "claims of this pod are bound on two nodes (" + both + ")");
        }
        out.fixedNode = claim->nodeName;
        if (out.fixedBy.empty()) {
          out.fixedBy =
              own ? "claim " + key + " is already bound to this pod on node " + claim->nodeName
                  : "shared claim " + key + " is allocated on node " + claim->nodeName;
        }
        (own ? out.boundToPod : out.joining).push_back(claim);
        break;
      }
      case ClaimPhase::kPending:
        out.pending.push_back(claim);
        break;
    }
  }
  return out;
}

ClaimSetFitter::ClaimSetFitter(const PodClaims& claims, std::string podUid,
                               const DeviceIndex& index, Scoring scoring)
    : claims_(claims), podUid_(std::move(podUid)), index_(index), scoring_(std::move(scoring)) {
  for (const auto& c : claims.pending) {
    auto res = std::find(resources_.begin(), resources_.end(), c->rawResourceName);
    if (res == resources_.end()) {
      resources_.push_back(c->rawResourceName);
      claimsOf_.emplace_back();
      res = resources_.end() - 1;
      needsNodeLabels_ = needsNodeLabels_ || index.hasLabelPlacedDevices(c->rawResourceName);
    }
    claimsOf_[static_cast<size_t>(res - resources_.begin())].push_back(pending_.size());
    pending_.push_back(c.get());
    hasNamedLists_ = hasNamedLists_ || c->extendedResourceNames.has_value();
    constrained_ = constrained_ || !c->constraints.empty();
    wanted_ += static_cast<size_t>(std::max<int64_t>(c->extendedResourceNum, 0));
  }
  byClass_ = constrained_ || !scoring_.topologyProperty.empty();
  for (const auto& r : resources_) {
    handles_.push_back(index.resource(r));
  }
  // Counts are all filter and prioritize need; a named list needs each device's name, a
  // constraint each device's properties, and a claim's bit in a group must fit in 64.
  countable_ = !hasNamedLists_ && pending_.size() <= 64;
  memo_.resize(pending_.size());
  eligible_.resize(pending_.size());
  texts_ = ClaimTexts(pending_);
  noteUnparsedProperties();
}

// A failure message names a property some device has that a claim's comparison could not read
// as a quantity. It is worked out once per request from the index's distinct property sets
// (of any resource), so that every node's message, counted or exact, says the same.
void ClaimSetFitter::noteUnparsedProperties() {
  for (size_t c = 0; c < pending_.size(); ++c) {
    const auto& exprs = pending_[c]->metadataRequirements.matchExpressions;
    if (std::none_of(exprs.begin(), exprs.end(),
                     [](const LabelSelectorRequirement& r) { return isComparison(r.op); })) {
      continue;
    }
    index_.visitPropertySets([&](const std::map<std::string, std::string>& properties) {
      if (texts_.unparsed[c].empty()) {
        if (auto why = unparsedComparison(pending_[c]->metadataRequirements, properties)) {
          texts_.unparsed[c] = std::move(*why);
        }
      }
    });
  }
}

// The device is of the claim's resource. Only the memo is read in the common case: the device
// object itself is dereferenced for a named list alone, as touching tens of thousands of
// scattered objects per request is what cost the most.
bool ClaimSetFitter::eligible(size_t claim, const DeviceIndex::FreeDevice& device) {
  const ExtendedResourceClaim& c = *pending_[claim];
  if (c.extendedResourceNames && !namedBy(c, device.device->meta.name)) {
    return false;
  }
  return selects(claim, device.propertiesSlot, device.propertiesId, device.device->properties);
}

// The claim's selector against a set of properties, decided once per set.
bool ClaimSetFitter::selects(size_t claim, uint32_t propertiesSlot, uint64_t propertiesId,
                             const std::map<std::string, std::string>& properties) {
  auto& memo = memo_[claim];
  if (propertiesSlot >= memo.size()) {
    memo.resize(propertiesSlot + 1);
  }
  Memo& m = memo[propertiesSlot];
  if (m.propertiesId != propertiesId) {
    m.propertiesId = propertiesId;
    m.matches = selectedBy(*pending_[claim], properties);
  }
  return m.matches;
}

uint64_t ClaimSetFitter::classOf(uint32_t propertiesSlot, uint64_t propertiesId,
                                 const std::map<std::string, std::string>& properties) {
  if (propertiesSlot >= classMemo_.size()) {
    classMemo_.resize(propertiesSlot + 1, {0, 0});
  }
  auto& [id, cls] = classMemo_[propertiesSlot];
  if (id != propertiesId) {
    std::map<std::string, std::string> constrained;
    auto keep = [&](const std::string& property) {
      if (auto it = properties.find(property); it != properties.end()) {
        constrained.insert(*it);
      }
    };
    for (const auto* c : pending_) {
      for (const auto& k : c->constraints) {
        keep(k.property());
      }
    }
    if (!scoring_.topologyProperty.empty()) {
      keep(scoring_.topologyProperty);
    }
    std::string key;
    for (const auto& [k, v] : constrained) {
      key.append(k).push_back('\0');
      key.append(v).push_back('\0');
    }
    auto [it, added] = classIds_.try_emplace(std::move(key), classProperties_.size());
    if (added) {
      classProperties_.push_back(std::move(constrained));
    }
    id = propertiesId;
    cls = it->second;
  }
  return cls;
}

NodePlan ClaimSetFitter::plan(std::string_view nodeName,
                              const std::map<std::string, std::string>& nodeLabels,
                              bool withAssignment, bool withMessage) {
  NodePlan plan;
  if (claims_.block != ClaimsBlock::kNone) {
    plan.unresolvable = claims_.unresolvable();
    plan.message = claims_.blockMessage;
    return plan;
  }
  if (!claims_.fixedNode.empty() && claims_.fixedNode != nodeName) {
    plan.unresolvable = true;
    plan.message = claims_.fixedBy;
    return plan;
  }
  if (pending_.empty()) {
    plan.fits = true;
    return plan;
  }
  if (!withAssignment && countable_) {
    countRun(std::span(&nodeName, 1), withMessage);
    if (counted_[0] != 0) {
      return std::move(runPlans_[0]);
    }
  }
  return planDevices(nodeName, nodeLabels, withAssignment);
}

NodePlan ClaimSetFitter::planDevices(std::string_view nodeName,
                                     const std::map<std::string, std::string>& nodeLabels,
                                     bool withAssignment) {
  for (auto& e : eligible_) {
    e.clear();
  }
  devices_.clear();
  properties_.clear();
  const std::string node(nodeName);
  size_t deviceCount = 0;
  size_t matchingFree = 0;
  for (size_t r = 0; r < resources_.size(); ++r) {
    const auto& claimsOf = claimsOf_[r];
    index_.visitFree(resources_[r], node, nodeLabels, podUid_,
                     [&](const DeviceIndex::FreeDevice& d) {
                       bool any = false;
                       for (size_t c : claimsOf) {
                         if (eligible(c, d)) {
                           eligible_[c].push_back(deviceCount);
                           any = true;
                         }
                       }
                       matchingFree += any ? 1 : 0;
                       // Kept while planning: the index may drop its copy meanwhile.
                       if (withAssignment || byClass_) {
                         devices_.push_back(d.device);
                       }
                       ++deviceCount;
                     });
  }
  if (byClass_) {
    for (const auto& d : devices_) {
      properties_.push_back(&d->properties);
    }
  }
  std::vector<const std::string*> names;
  if (withAssignment) {
    names.reserve(devices_.size());
    for (const auto& d : devices_) {
      names.push_back(&d->meta.name);
    }
  }
  Fit fit =
      fitEligible(pending_, eligible_, deviceCount, matchingFree, withAssignment ? &names : nullptr,
                  &texts_, byClass_ ? &properties_ : nullptr, &scoring_);
  NodePlan plan;
  plan.fits = fit.fits;
  plan.message = std::move(fit.message);
  plan.assignment = std::move(fit.assignment);
  plan.cost = {.fragmentation = fit.fragmentation,
               .leftover = matchingFree > wanted_ ? matchingFree - wanted_ : 0};
  return plan;
}

void ClaimSetFitter::planAll(std::span<const std::string_view> nodes, bool withMessage,
                             const std::function<void(size_t, NodePlan&)>& fn) {
  static const std::map<std::string, std::string> kNoLabels;
  if (!countable_ || claims_.block != ClaimsBlock::kNone || !claims_.fixedNode.empty() ||
      pending_.empty()) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      NodePlan plan = this->plan(nodes[i], kNoLabels, false, withMessage);
      fn(i, plan);
    }
    return;
  }
  for (size_t start = 0; start < nodes.size(); start += DeviceIndex::kRun) {
    const auto run = nodes.subspan(start, std::min(DeviceIndex::kRun, nodes.size() - start));
    countRun(run, withMessage);
    for (size_t k = 0; k < run.size(); ++k) {
      if (counted_[k] == 0) {
        runPlans_[k] = planDevices(run[k], kNoLabels, false);
      }
      fn(start + k, runPlans_[k]);
    }
  }
}

void ClaimSetFitter::countRun(std::span<const std::string_view> run, bool withMessage) {
  counted_.assign(run.size(), 1);
  runCounted_.resize(run.size());
  runPlans_.resize(run.size());
  runGroups_.clear();
  for (size_t r = 0; r < resources_.size(); ++r) {
    index_.visitFreeGroups(
        handles_[r], run, runCounted_.data(), [&](size_t k, const DeviceIndex::FreeGroup& g) {
          uint64_t claims = 0;
          for (size_t c : claimsOf_[r]) {
            if (selects(c, g.propertiesSlot, g.propertiesId, g.properties)) {
              claims |= uint64_t{1} << c;
            }
          }
          if (claims != 0) {
            const uint64_t cls =
                byClass_ ? classOf(g.propertiesSlot, g.propertiesId, g.properties) : 0;
            runGroups_.push_back({static_cast<uint32_t>(k), {claims, g.count, cls}});
          }
        });
    for (size_t k = 0; k < run.size(); ++k) {
      counted_[k] &= runCounted_[k];
    }
  }
  if (resources_.size() > 1) {
    std::stable_sort(runGroups_.begin(), runGroups_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  size_t next = 0;
  for (size_t k = 0; k < run.size(); ++k) {
    groups_.clear();
    for (; next < runGroups_.size() && runGroups_[next].first == k; ++next) {
      groups_.push_back(runGroups_[next].second);
    }
    if (counted_[k] != 0) {
      planShape(withMessage, runPlans_[k]);
    }
  }
}

void ClaimSetFitter::planShape(bool withMessage, NodePlan& plan) {
  // Devices no claim may take change nothing, and devices the same claims may take are
  // interchangeable: merged, the groups describe the node's shape for these claims alone.
  // Insertion sort: a node has a handful of groups.
  auto before = [](const Group& a, const Group& b) {
    return a.claims < b.claims || (a.claims == b.claims && a.cls < b.cls);
  };
  for (size_t i = 1; i < groups_.size(); ++i) {
    for (size_t j = i; j > 0 && before(groups_[j], groups_[j - 1]); --j) {
      std::swap(groups_[j], groups_[j - 1]);
    }
  }
  size_t kept = 0;
  for (const Group& g : groups_) {
    if (kept != 0 && groups_[kept - 1].claims == g.claims && groups_[kept - 1].cls == g.cls) {
      groups_[kept - 1].count += g.count;
    } else {
      groups_[kept++] = g;
    }
  }
  groups_.resize(kept);
  const Outcome* outcome = recentOutcome();
  if (outcome == nullptr) {
    shape_.assign(reinterpret_cast<const char*>(groups_.data()), groups_.size() * sizeof(Group));
    outcome = &decide()->second;
    if (groups_.size() <= Recent::kMaxGroups) {
      Recent& r = recent_[nextRecent_++ % std::size(recent_)];
      r.groups = groups_.size();
      std::copy(groups_.begin(), groups_.end(), r.group);
      r.outcome = outcome;
    }
  }
  plan.fits = outcome->fits;
  plan.unresolvable = false;
  if (withMessage) {
    plan.message = outcome->message;
  } else {
    plan.message.clear();
  }
  plan.assignment.clear();
  plan.cost = outcome->cost;
}

const ClaimSetFitter::Outcome* ClaimSetFitter::recentOutcome() const {
  for (const Recent& r : recent_) {
    if (r.outcome != nullptr && r.groups == groups_.size() &&
        std::equal(groups_.begin(), groups_.end(), r.group)) {
      return r.outcome;
    }
  }
  return nullptr;
}

std::unordered_map<std::string, ClaimSetFitter::Outcome>::iterator ClaimSetFitter::decide() {
  auto [outcome, added] = outcomes_.try_emplace(shape_);
  if (added) {
    for (auto& e : eligible_) {
      e.clear();
    }
    properties_.clear();
    size_t deviceCount = 0;
    for (const Group& g : groups_) {
      for (size_t c = 0; c < pending_.size(); ++c) {
        if ((g.claims >> c & 1) != 0) {
          for (size_t k = 0; k < g.count; ++k) {
            eligible_[c].push_back(deviceCount + k);
          }
        }
      }
      if (byClass_) {
        properties_.insert(properties_.end(), g.count, &classProperties_[g.cls]);
      }
      deviceCount += g.count;
    }
    Fit fit = fitEligible(pending_, eligible_, deviceCount, deviceCount, nullptr, &texts_,
                          byClass_ ? &properties_ : nullptr, &scoring_);
    outcome->second = {fit.fits,
                       std::move(fit.message),
                       {.fragmentation = fit.fragmentation,
                        .leftover = deviceCount > wanted_ ? deviceCount - wanted_ : 0}};
  }
  return outcome;
}

// One combination of the pending claims' alternatives: the claims as it makes them, and the
// fitter over them.
struct NodeFitter::Combination {
  PodClaims claims;
  std::map<std::string, std::string> chosen;  // claim key -> alternative
  std::string label;                          // "alternative h100", for messages
  std::optional<ClaimSetFitter> fitter;
};

namespace {

// The claims with each pending claim of several requests in its units, one per request, fitted
// side by side as claims of their own (ExtendedResourceClaim::units).
PodClaims withUnits(const PodClaims& given) {
  PodClaims out = given;
  out.pending.clear();
  for (const auto& claim : given.pending) {
    if (claim->requests.empty()) {
      out.pending.push_back(claim);
      continue;
    }
    for (auto& unit : claim->units()) {
      out.pending.push_back(std::make_shared<const ExtendedResourceClaim>(std::move(unit)));
    }
  }
  return out;
}

}  // namespace

NodeFitter::NodeFitter(const PodClaims& given, std::string podUid, const DeviceIndex& index,
                       Scoring scoring) {
  const PodClaims claims = withUnits(given);
  std::vector<size_t> varying;  // pending claims with alternatives
  size_t count = 1;
  for (size_t i = 0; i < claims.pending.size(); ++i) {
    if (const size_t n = claims.pending[i]->firstAvailable.size(); n > 0) {
      varying.push_back(i);
      count = std::min(count * n, kMaxCombinations + 1);
    }
  }
  if (claims.block != ClaimsBlock::kNone || varying.empty()) {
    auto& c = combinations_.emplace_back(std::make_unique<Combination>());
    c->claims = claims;
    c->fitter.emplace(c->claims, std::move(podUid), index, std::move(scoring));
    return;
  }
  if (count > kMaxCombinations) {
    auto& c = combinations_.emplace_back(std::make_unique<Combination>());
    c->claims.block = ClaimsBlock::kTooManyCombinations;
    c->claims.blockMessage = "the pod's claims have more than " + std::to_string(kMaxCombinations) +
                             " combinations of firstAvailable alternatives";
    c->fitter.emplace(c->claims, std::move(podUid), index, std::move(scoring));
    return;
  }
  std::vector<size_t> choice(varying.size(), 0);  // an odometer, the last claim fastest
  for (size_t k = 0; k < count; ++k) {
    auto& c = combinations_.emplace_back(std::make_unique<Combination>());
    c->claims = claims;
    for (size_t v = 0; v < varying.size(); ++v) {
      const ExtendedResourceClaim& claim = *claims.pending[varying[v]];
      const ClaimAlternative& a = claim.firstAvailable[choice[v]];
      c->claims.pending[varying[v]] = std::make_shared<const ExtendedResourceClaim>(claim.as(a));
      c->chosen[unitKey(claim)] = a.name;
      c->label +=
          c->label.empty() ? (varying.size() == 1 ? "alternative " : "alternatives ") : ", ";
      if (varying.size() > 1) {
        c->label += claim.meta.name;
        if (!claim.request.empty()) {
          c->label += '/';
          c->label += claim.request;
        }
        c->label += '=';
      }
      c->label += a.name;
    }
    c->fitter.emplace(c->claims, podUid, index, scoring);
    for (size_t v = varying.size(); v-- > 0;) {
      if (++choice[v] < claims.pending[varying[v]]->firstAvailable.size()) {
        break;
      }
      choice[v] = 0;
    }
  }
}

NodeFitter::~NodeFitter() = default;

bool NodeFitter::needsNodeLabels() const {
  return std::any_of(combinations_.begin(), combinations_.end(),
                     [](const auto& c) { return c->fitter->needsNodeLabels(); });
}

void NodeFitter::addFailure(size_t k, NodePlan& into, NodePlan&& failed, bool withMessage) const {
  if (combinations_.size() == 1) {
    into = std::move(failed);
    return;
  }
  into.fits = false;
  into.unresolvable = into.unresolvable || failed.unresolvable;
  if (withMessage) {
    into.message += k == 0 ? "no alternative fits: " : "; ";
    into.message += combinations_[k]->label;
    into.message += ": ";
    into.message += failed.message;
  }
}

NodePlan NodeFitter::plan(std::string_view nodeName,
                          const std::map<std::string, std::string>& nodeLabels, bool withAssignment,
                          bool withMessage) {
  NodePlan out;
  for (size_t k = 0; k < combinations_.size(); ++k) {
    NodePlan p = combinations_[k]->fitter->plan(nodeName, nodeLabels, withAssignment, withMessage);
    if (p.fits) {
      p.alternatives = combinations_[k]->chosen;
      p.cost.alternative = static_cast<uint32_t>(k);
      return p;
    }
    addFailure(k, out, std::move(p), withMessage);
  }
  return out;
}

void NodeFitter::planAll(std::span<const std::string_view> nodes, bool withMessage,
                         const std::function<void(size_t, NodePlan&)>& fn) {
  if (combinations_.size() == 1) {
    combinations_[0]->fitter->planAll(nodes, withMessage, fn);
    return;
  }
  std::vector<NodePlan> plans(nodes.size());
  std::vector<size_t> left(nodes.size());  // the nodes no combination fitted yet
  for (size_t i = 0; i < nodes.size(); ++i) {
    left[i] = i;
  }
  for (size_t k = 0; k < combinations_.size() && !left.empty(); ++k) {
    std::vector<std::string_view> subset;
    for (size_t i : left) {
      subset.push_back(nodes[i]);
    }
    std::vector<size_t> still;
    combinations_[k]->fitter->planAll(subset, withMessage, [&](size_t j, NodePlan& p) {
      const size_t i = left[j];
      if (p.fits) {
        plans[i] = std::move(p);
        plans[i].alternatives = combinations_[k]->chosen;
        plans[i].cost.alternative = static_cast<uint32_t>(k);
      } else {
        addFailure(k, plans[i], std::move(p), withMessage);
        still.push_back(i);
      }
    });
    left = std::move(still);
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    fn(i, plans[i]);
  }
}

NodePlan planNode(const PodClaims& claims, const std::string& podUid, const std::string& nodeName,
                  const std::map<std::string, std::string>& nodeLabels, const DeviceIndex& index,
                  const Scoring& scoring) {
  return NodeFitter(claims, podUid, index, scoring).plan(nodeName, nodeLabels, true);
}

}  // namespace ker

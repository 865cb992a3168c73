#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/objects.h"
#include "model/resource_class.h"
#include "scheduler/cache/device_index.h"
#include "scheduler/fit/allocator.h"

namespace ker {

using ClaimPtr = std::shared_ptr<const ExtendedResourceClaim>;
using ClaimLookup = std::function<ClaimPtr(const std::string& key)>;

// What keeps a pod's claims from being allocated as they stand, as resolveClaims finds it.
enum class ClaimsBlock {
  kNone,                 // nothing: the pending claims are fitted (on fixedNode, when set)
  kAwaitingClaim,        // a template entry has no claim recorded yet; the record requeues
                         // the pod
  kInvalidPod,           // the pod's claim annotations do not parse
  kClaimMissing,         // a claim it names does not exist
  kClaimInvalid,         // a claim's spec, or its selector, is invalid
  kClaimDeleting,        // a claim is being deleted
  kClaimLost,            // a claim lost devices while its pod ran
  kClaimHeld,            // held by another pod, or shared by the most holders it may have
  kSplitAcrossNodes,     // the pod's claims are bound on two nodes
  kTooManyCombinations,  // its claims' firstAvailable alternatives combine more ways than
                         // NodeFitter tries
};

// A request of a class's resource the pod's record names no claim for yet. Its claim is the one
// under classClaimName: made already (by the controller, or by an earlier bind), or made by the
// bind (`make`), which records each of them on the pod with the Binding.
struct UnrecordedClaim {
  std::string resource;  // the extended resource name, the record's key
  std::string name;
  std::optional<nlohmann::json> make;  // the claim to create; unset when it exists
};

// A pod's claims as the extender must treat them, resolved once per request.
struct PodClaims {
  std::vector<ClaimPtr> pending;     // still to be allocated
  std::vector<ClaimPtr> boundToPod;  // already allocated to this pod (a retried bind)
  // Shareable claims allocated to other pods, which this pod joins as one more holder.
  std::vector<ClaimPtr> joining;
  // Among the claims above, those of class requests not recorded on the pod; a claim still to
  // be made is pending, with no UID or resourceVersion.
  std::vector<UnrecordedClaim> unrecorded;
  // Non-empty when some claim is already allocated (to this pod, or shared): only that node
  // can pass. fixedBy names the claim that pinned it.
  std::string fixedNode;
  std::string fixedBy;
  ClaimsBlock block = ClaimsBlock::kNone;
  std::string blockMessage;  // what the filter answers for every node while blocked
  // No node can pass whatever happens to devices: reported as unresolvable, so that
  // preemption does not try.
  bool unresolvable() const {
    return block != ClaimsBlock::kNone && block != ClaimsBlock::kAwaitingClaim;
  }
  // No node passes until the controller records the template entry's claim.
  bool awaiting() const { return block == ClaimsBlock::kAwaitingClaim; }
  bool empty() const {
    return pending.empty() && boundToPod.empty() && joining.empty() && block == ClaimsBlock::kNone;
  }
};

// Lists every ExtendedResourceClass (the extender's cache); unset: none.
using ClassSource = std::function<std::vector<ClassPtr>()>;
// The pod's requests a class serves; `source` is read only for a pod that asks for some
// extended resource.
ClassRequests classRequestsOf(const Pod& pod, const ClassSource& source);

// `classes`: the pod's requests a class serves. Each needs the claim the pod's record names for
// it, or, when none is recorded, the one under classClaimName (`unrecorded`), which a pod need
// not wait for: fitted as the claim the bind makes when it does not exist. Either must ask
// exactly what the class and the containers ask (classClaimProblem). `unrecordedLookup`, when
// set, looks up those unrecorded claims instead of `lookup`: the caller's cache alone, as the
// bind's create finds one made meanwhile.
PodClaims resolveClaims(const Pod& pod, const ClaimLookup& lookup,
                        const ClassRequests& classes = {},
                        const ClaimLookup& unrecordedLookup = {});

// A pod that names no claim, generated or awaited, asks for no class's resource, and whose
// annotations all parse: the filter passes it everywhere and holds nothing for it.
bool withoutClaims(const Pod& pod, const ClassRequests& classes);

struct NodePlan {
  bool fits = false;
  bool unresolvable = false;  // no change of devices on this node can make it fit
  std::string message;
  // unit key (unitKey: the claim's key, "/request" for a request of a claim with several) ->
  // devices, for the pending claims; bound claims keep theirs.
  std::map<std::string, std::vector<std::string>> assignment;
  // unit key -> the firstAvailable alternative it fits as, for the pending units that have any.
  std::map<std::string, std::string> alternatives;
  NodeCost cost;  // what this allocation costs the node (for scoring)
};

// Decides, node by node, whether a set of claims fit, from the index's current state. Built
// once per request: each claim's selector is decided once per distinct set of device
// properties, and a node costs a walk over its own devices. Not thread-safe; one per request.
// NodeFitter runs one per combination of the claims' firstAvailable alternatives.
class ClaimSetFitter {
 public:
  // `scoring` chooses among devices (by island, with a topology property) and says what a
  // plan's cost counts.
  ClaimSetFitter(const PodClaims& claims, std::string podUid, const DeviceIndex& index,
                 Scoring scoring = {});

  // withAssignment: also choose the devices (bind); filter and prioritize only need whether
  // the claims fit and how many matching devices would be left. withMessage false leaves out
  // why a node does not fit (prioritize does not say).
  NodePlan plan(std::string_view nodeName, const std::map<std::string, std::string>& nodeLabels,
                bool withAssignment, bool withMessage = true);

  // fn(k, plan) with plan(nodes[k], {}, false, withMessage) for each node, for a fitter that
  // does not need node labels. Nodes are looked up in runs, so filter and prioritize pay the
  // index's lock and lookups once per run rather than once per node; the plans are the
  // fitter's scratch, so fn may take from them but not keep them.
  void planAll(std::span<const std::string_view> nodes, bool withMessage,
               const std::function<void(size_t, NodePlan&)>& fn);

  // Whether a node's labels can change the answer: only devices placed by label affinity
  // read them. When false, plan() may be given empty labels for any node.
  bool needsNodeLabels() const { return needsNodeLabels_; }

 private:
  struct Memo {
    uint64_t propertiesId = 0;  // 0: not decided yet
    bool matches = false;
  };
  // The free devices of one property set, reduced to what decides a fit: which claims may
  // take them (bit c for pending claim c) and how many there are.
  // For a pod with constraints or a topology property, `cls` tells apart the groups whose
  // devices differ in those properties (0 otherwise): devices of one class are
  // interchangeable.
  struct Group {
    uint64_t claims;
    uint64_t count;
    uint64_t cls = 0;
    bool operator==(const Group&) const = default;
  };
  // Plans a run of at most DeviceIndex::kRun nodes from their counted groups into
  // runPlans_[k], where the index can count them (counted_[k] set).
  void countRun(std::span<const std::string_view> run, bool withMessage);
  // The node's free devices one by one: what a bind needs, and what the counts cannot say.
  NodePlan planDevices(std::string_view nodeName,
                       const std::map<std::string, std::string>& nodeLabels, bool withAssignment);
  // The plan for the node whose groups are in groups_.
  void planShape(bool withMessage, NodePlan& plan);
  struct Outcome {
    bool fits = false;
    std::string message;
    NodeCost cost;
  };
  // The outcome for the groups_ of shape_, decided now if no node had that shape before.
  std::unordered_map<std::string, Outcome>::iterator decide();
  void noteUnparsedProperties();
  bool eligible(size_t claim, const DeviceIndex::FreeDevice& device);
  bool selects(size_t claim, uint32_t propertiesSlot, uint64_t propertiesId,
               const std::map<std::string, std::string>& properties);
  // The class of a set of properties: the values of every pending claim's constrained
  // properties and of the topology property, numbered once per request (classProperties_
  // holds them by number).
  uint64_t classOf(uint32_t propertiesSlot, uint64_t propertiesId,
                   const std::map<std::string, std::string>& properties);

  const PodClaims& claims_;
  std::string podUid_;
  const DeviceIndex& index_;
  const Scoring scoring_;
  std::vector<std::string> resources_;                // distinct resources of the pending claims
  std::vector<DeviceIndex::ResourceHandle> handles_;  // parallel to resources_
  std::vector<std::vector<size_t>> claimsOf_;         // per resource, the pending claims wanting it
  std::vector<const ExtendedResourceClaim*> pending_;
  bool needsNodeLabels_ = false;
  bool hasNamedLists_ = false;  // some claim lists its devices by name
  bool constrained_ = false;    // some claim has constraints
  bool byClass_ = false;        // constrained_, or a topology property: devices' properties count
  bool countable_ = false;      // nodes can be planned from counted groups
  size_t wanted_ = 0;
  ClaimTexts texts_;                                      // of pending_
  std::vector<std::vector<Memo>> memo_;                   // per pending claim, by properties slot
  std::vector<std::pair<uint64_t, uint64_t>> classMemo_;  // (propertiesId, class) by slot
  std::unordered_map<std::string, uint64_t> classIds_;
  std::vector<std::map<std::string, std::string>> classProperties_;  // by class
  // Outcomes by the nodes' groups (their bytes, in canonical order): nodes of one pool have
  // the same free devices, so a request decides each distinct shape once.
  std::unordered_map<std::string, Outcome> outcomes_;
  // The last few shapes seen, checked before the table: a pool's nodes come in long runs
  // with the odd node of another shape between them.
  struct Recent {
    static constexpr size_t kMaxGroups = 4;
    size_t groups = 0;
    Group group[kMaxGroups];
    const Outcome* outcome = nullptr;
  };
  Recent recent_[4];
  size_t nextRecent_ = 0;
  const Outcome* recentOutcome() const;
  // Scratch reused across nodes.
  std::vector<std::vector<size_t>> eligible_;
  std::vector<DevicePtr> devices_;
  std::vector<const std::map<std::string, std::string>*> properties_;  // when byClass_
  std::vector<Group> groups_;
  std::string shape_;
  std::vector<std::pair<uint32_t, Group>> runGroups_;  // (node in the run, group)
  std::vector<uint8_t> counted_;
  std::vector<uint8_t> runCounted_;
  std::vector<NodePlan> runPlans_;
};

// Decides, node by node, whether one pod's claims fit. A pending claim of several requests is
// fitted as its units side by side (ExtendedResourceClaim::units), keyed by unitKey in the
// plan, with the constraints spanning requests held by fitEligible. A pending unit with
// firstAvailable alternatives is tried as each of them in order: the combinations of the claims'
// alternatives (the first claim's changing slowest) are tried one after another, and the first that
// fits a node is its plan, with NodePlan::alternatives saying which and NodeCost::alternative its
// place, so that nodes where an earlier combination fits rank first. Not thread-safe; one per
// request.
class NodeFitter {
 public:
  NodeFitter(const PodClaims& claims, std::string podUid, const DeviceIndex& index,
             Scoring scoring = {});
  ~NodeFitter();

  // As ClaimSetFitter's, over the combinations.
  NodePlan plan(std::string_view nodeName, const std::map<std::string, std::string>& nodeLabels,
                bool withAssignment, bool withMessage = true);
  void planAll(std::span<const std::string_view> nodes, bool withMessage,
               const std::function<void(size_t, NodePlan&)>& fn);
  bool needsNodeLabels() const;

  // The most combinations of alternatives tried for one pod; a pod with more is refused.
  static constexpr size_t kMaxCombinations = 64;

 private:
  struct Combination;
  // The plan of combination k that did not fit, folded into `into` (the plan so far).
  void addFailure(size_t k, NodePlan& into, NodePlan&& failed, bool withMessage) const;
  std::vector<std::unique_ptr<Combination>> combinations_;
};

// One node's plan with the devices chosen: NodeFitter for a single node.
NodePlan planNode(const PodClaims& claims, const std::string& podUid, const std::string& nodeName,
                  const std::map<std::string, std::string>& nodeLabels, const DeviceIndex& index,
                  const Scoring& scoring = {});

}  // namespace ker

#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/bind/binder.h"
#include "scheduler/cache/device_index.h"
#include "scheduler/fit/allocator.h"
#include "scheduler/fit/planner.h"
#include "scheduler/preemption/preemption.h"
#include "scheduler/preemption/preemption_verb.h"
#include "scheduler/wire/extender_wire.h"

namespace ker {

// A node from the extender's own cache (nodeCacheCapable mode); null when it is not known.
using CachedNode = std::function<std::shared_ptr<const Node>(const std::string& node)>;

// Why a filter passed no node, for counting (the words are in the failed nodes' messages).
enum class FilterRefusal {
  kClaimsUnresolvable,  // a claim is missing, invalid, Lost or held by another pod
  kAwaitingClaims,      // a template entry has no claim recorded yet
  kPinnedElsewhere,     // claims allocated already tie the pod to a node that did not pass
  kNoFreeDevice,        // no node has free devices the claims match (none, or all taken)
};
const char* toString(FilterRefusal refusal);

// Why the filter passed none of the nodes it was asked about, from the pod's claims and the
// answer; nullopt when a node passed or none was asked. Pure.
std::optional<FilterRefusal> filterRefusal(const PodClaims& claims, const FilterReply& reply);

// The filter's answer, and why no node passed when none did (not sent: kube-scheduler reads
// the failed nodes' messages).
struct FilterDecision {
  FilterReply reply;
  std::optional<FilterRefusal> refusal;
};

struct ExtenderStats {
  std::atomic<uint64_t> nodesPassed{0};
  std::atomic<uint64_t> nodesFailed{0};
  std::atomic<uint64_t> podsWithoutClaims{0};
  std::atomic<uint64_t> preemptions{0};  // orders handed to the worker
};

// What the filter needs to preempt: the bound pods holding claims, and where orders go
// (false: not taken, the nomination is dropped).
struct PreemptionHooks {
  HolderPodLookup pods;
  std::function<bool(PreemptionOrder)> submit;
  // The lowest priority of the bound pods known (PriorityFloor::lowest); unset: not known,
  // planning is never skipped for it.
  std::function<std::optional<int32_t>()> lowestPriority;
  // The PodDisruptionBudgets known; unset: none are counted.
  std::function<std::vector<PdbPtr>()> budgets;
};

// The extender's three verbs over the in-memory state; no HTTP here.
class Extender {
 public:
  // `claims` answers for every claim a pod names; `cachedClaims`, when set, alone for a class
  // request's claim not recorded yet (resolveClaims), which the bind makes: no live read for a
  // claim that mostly does not exist yet.
  Extender(DeviceIndex& index, ClaimLookup claims, CachedNode nodes, Binder& binder,
           Scoring scoring, ClaimLookup cachedClaims = {});

  using Clock = DeviceIndex::Clock;
  // How long the devices a filter holds for a pod stay held when no bind comes for it.
  static constexpr std::chrono::seconds kHoldTtl = DeviceIndex::kHoldTtl;

  // Passes a pod with claims to pend on at most one node: the best the scoring strategy
  // finds, whose devices it then holds for the pod (HoldLedger::holdForFilter) until its bind.
  // Runs the phases below in kube-scheduler's order: preFilter, filterNodes, then reserve when
  // some node fits, else postFilter.
  FilterDecision filter(const ExtenderArgs& args, Clock::time_point now = Clock::now());
  // Scores by node name; the names are views of args.nodeNames.
  std::vector<std::pair<std::string_view, int>> prioritize(const ExtenderArgs& args);
  Status bind(const BindingArgs& args) { return binder_.bind(args); }
  // The pod was deleted, or bound by anyone: what the filter held or a preemption nominated
  // for it is let go.
  void forgetPod(const std::string& podUid) {
    index_.dropFilterHold(podUid);
    index_.dropNomination(podUid);
  }
  // kube-scheduler's preempt verb: its candidate nodes and their victims, checked and
  // completed for the pod's devices (decideVerbPreemption), in NodeNameToMetaVictims form. A
  // pod without claims gets them back unchanged. The devices the pod would get on the node
  // kube-scheduler is expected to pick are nominated for it, as the filter's own preemption
  // does, so no other pod takes them while the victims leave.
  std::vector<NodeVictims> preemptVerb(const PreemptionArgs& args,
                                       Clock::time_point now = Clock::now());
  // From now on a pod that fits no node as devices stand may preempt lower-priority holders
  // of its matching devices (see postFilter()). Call before serving.
  void enablePreemption(PreemptionHooks hooks) { preemption_ = std::move(hooks); }
  // Pods asking for a class's extended resource in their containers' resources need the claim
  // made from the class (docs/classes.md). Call before serving.
  void serveClasses(ClassSource classes) { classes_ = std::move(classes); }
  // At most this many failed nodes are planned for preemption per filter.
  static constexpr size_t kMaxPreemptionNodes = 256;

  const ExtenderStats& stats() const { return stats_; }

 private:
  // Fits the pod on each candidate in turn: fn(i, NodePlan*), which may take from the plan,
  // or fn(i, nullptr) for a node the extender does not know.
  template <class Fn>
  void planEach(const ExtenderArgs& args, NodeFitter& fitter, bool withMessage, Fn&& fn);

  // One filter request as it goes through the phases of kube-scheduler's scheduling framework
  // (its CycleState): what PreFilter resolved for the pod, what each node's Filter found, and
  // the reply the later phases narrow.
  struct FilterCycle {
    FilterCycle(const ExtenderArgs& args, Clock::time_point now) : args(args), now(now) {}
    const ExtenderArgs& args;
    const Clock::time_point now;
    PodClaims claims;
    std::optional<NodeFitter> fitter;            // over `claims`; set when the nodes are filtered
    std::vector<size_t> fitting;                 // the request indexes of the nodes that fit
    std::vector<std::optional<NodeCost>> costs;  // parallel to fitting
    std::vector<ptrdiff_t> failedIdx;  // parallel to reply.failed: the request index, -1 unknown
    FilterReply reply;
  };
  enum class PreFilterResult {
    kSkip,         // the pod asks for no device: every node passes, nothing is recorded
    kAnswered,     // every node got the same answer (a claim unresolvable or awaited)
    kFilterNodes,  // the claims are resolved: each node is filtered on its own
  };
  // PreFilter: the pod alone. Resolves its claims (and the class requests of its containers).
  PreFilterResult preFilter(FilterCycle& cycle) const;
  // Filter: fits the pod's claims on each node on its own (NodeFitter), no holds taken.
  void filterNodes(FilterCycle& cycle);
  // Reserve, for a pod some node fits: chooses the one node the pod gets and holds its devices
  // there (see the comment of its definition); claims allocated already only record the choice.
  void reserve(FilterCycle& cycle);
  // PostFilter, for a pod no node fits: when it already waits for victims, the node's answer
  // says so; otherwise, when some holder of its matching devices has a lower priority, plans
  // each failed node, picks one, nominates the devices there for the pod and hands the victims
  // to the worker. Nodes where no victim set exists are answered as unresolvable, so
  // kube-scheduler's own preemption does not try them either.
  void postFilter(FilterCycle& cycle);

  // Fills in each candidate's devices of `resources` (the candidate's node and labels set), but
  // those promised to other pods (DeviceIndex::reachable), and the holders of those devices,
  // one claim scan per resource. `victimsOnTheNode`: only holders on each candidate's own node
  // may be victims (addHolders' victimsOn).
  void gatherHolders(const std::set<std::string>& resources, const std::string& preemptorUid,
                     bool victimsOnTheNode, Clock::time_point now,
                     std::span<PreemptionCandidate* const> candidates) const;

  DeviceIndex& index_;
  ClaimLookup claims_;
  ClaimLookup cachedClaims_;
  ClassSource classes_;
  std::optional<PreemptionHooks> preemption_;
  CachedNode nodes_;
  Binder& binder_;
  const Scoring scoring_;
  ExtenderStats stats_;
};

}  // namespace ker

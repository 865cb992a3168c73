#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/objects.h"
#include "scheduler/fit/planner.h"
#include "scheduler/preemption/preemption_pdb.h"
#include "scheduler/preemption/preemption_plan.h"

namespace ker {

using PodPtr = std::shared_ptr<const Pod>;
// A bound pod by "namespace/name" as the extender's cache has it; null when unknown.
using HolderPodLookup = std::function<PodPtr(const std::string& key)>;

// A pod the preemption deletes (or waits for, when it is already terminating).
struct PreemptionVictim {
  std::string uid;
  std::string ns;
  std::string name;
  int32_t priority = 0;
  bool terminating = false;
  int64_t gracePeriodSeconds = 30;
  std::map<std::string, std::string> labels;  // for the PodDisruptionBudgets selecting it
};

// What the extender does for a preemptor: delete `victims` and keep `devices` on `node` for
// the preemptor until it binds or `ttl` passes.
struct PreemptionOrder {
  std::string preemptorUid;
  std::string preemptorNs;
  std::string preemptorName;
  // As the request told it: the worker checks the live pod still has it before deleting.
  int32_t preemptorPriority = 0;
  std::string node;
  std::vector<std::string> devices;
  std::vector<PreemptionVictim> victims;
  std::chrono::seconds ttl{0};
};

// The holders of the devices a node reaches, for planPreemption, with the pods they stand
// for (parallel to the returned holders). `held` is claim key -> devices it holds, by resource
// (what DeviceIndex::claimsHolding answers); holders are grouped by pod UID. A claim whose pod is
// unknown, or known under another UID (a pod recreated under the name), or that is the preemptor's
// own, gets priority INT32_MAX and so is never a victim. Pure.
struct Holders {
  std::vector<PreemptionHolder> holders;
  std::vector<PreemptionVictim> pods;  // parallel: who each holder is
};
// `victimsOn`: when set, only a holder whose claim is on that node (status.nodeName) may be a
// victim. kube-scheduler's preempt verb takes victims of the candidate node only (a UID it does
// not find there fails the whole preemption), while a device placed by label may be reachable
// from several nodes and held by a pod on another.
void addHolders(const std::map<std::string, DeviceIndex::Holds>& held, const ClaimLookup& claims,
                const HolderPodLookup& pods, const std::string& preemptorUid,
                const std::optional<std::string>& victimsOn, Holders& out);

// Whether some holder has a priority below the preemptor's: only then is preemption planned
// (and only then are nodes without a victim set answered as unresolvable).
bool anyLowerPriority(const Holders& holders, int32_t priority);

// One candidate node to plan on.
struct PreemptionCandidate {
  std::string node;
  std::map<std::string, std::string> labels;
  std::vector<DevicePtr> devices;
  Holders holders;
};

struct PreemptionDecision {
  std::optional<PreemptionOrder> order;  // none: no node where preemption makes room
  // The order resumes an earlier preemption: the node is the preemptor's nominatedNodeName and
  // every victim is already terminating (an extender restarted meanwhile), so nobody new is
  // deleted and only the devices are to be kept again.
  bool resumed = false;
  // Per candidate (same order): why preemption does not help there; empty for the node
  // chosen, or where the pod fits already, or where some victim set exists but another node
  // was chosen.
  std::vector<std::string> unresolvable;
};

// The candidate's holders with violatesPdb set for those of priority below `priority` that
// `budgets` protect (pdbViolations, over them most important first: higher priority, then key).
// Pure.
std::vector<PreemptionHolder> withPdbViolations(const Holders& holders, int32_t priority,
                                                std::span<const PdbPtr> budgets);

// Marks each candidate's lower-priority holders that `budgets` protect (pdbViolations, over
// them most important first: higher priority, then key), plans each candidate with
// planPreemption and picks the node with pickPreemptionNode, except that the preemptor's
// status.nominatedNodeName (`nominatedNode`) wins where its victims are all terminating already (as
// kube-scheduler waits for those rather than preempting again). Pure.
// `scoring` chooses the devices kept for the preemptor, as its bind will choose them.
PreemptionDecision decidePreemption(const PodClaims& claims, const Pod& preemptor,
                                    const std::vector<PreemptionCandidate>& candidates,
                                    std::span<const PdbPtr> budgets = {},
                                    std::string_view nominatedNode = {},
                                    const Scoring& scoring = {});

// How long a nomination lasts: the victims' longest grace period plus a margin for the
// controller to release their claims and kube-scheduler to try the pod again.
static constexpr std::chrono::seconds kNominationMargin{60};
std::chrono::seconds nominationTtl(const std::vector<PreemptionVictim>& victims);

// The lowest priority among the bound pods the extender knows, kept by the bound-pod watch:
// a pod whose priority is not above it has no one to preempt, and its filter skips planning.
// Thread-safe.
class PriorityFloor {
 public:
  void set(const std::string& podUid, int32_t priority);
  void erase(const std::string& podUid);
  std::optional<int32_t> lowest() const;  // nullopt: no bound pod known

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, int32_t> byPod_;
  std::multiset<int32_t> priorities_;
};

// The filter's message for a node the preemptor waits on.
std::string waitingMessage(size_t victims, const std::string& node);

}  // namespace ker

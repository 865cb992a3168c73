#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "scheduler/cache/device_index.h"
#include "scheduler/fit/planner.h"

namespace ker {

// The devices one claim of a holder keeps from everyone else.
struct HeldClaim {
  HeldClaim(std::string key, DeviceIndex::Holds holds);
  HeldClaim(std::string key, const std::string& rawResourceName, std::vector<std::string> devices)
      : HeldClaim(std::move(key), DeviceIndex::Holds{{rawResourceName, std::move(devices)}}) {}
  std::string key;                   // namespace/name
  DeviceIndex::Holds holds;          // what its status holds (allocated and lost), by resource
  std::vector<std::string> devices;  // the names of `holds`
};

// A pod whose claims hold devices the candidate node can reach. Every such claim must be
// given, or its devices may be counted as free; a claim whose pod is unknown should be given
// a priority no preemptor exceeds (INT32_MAX), so it is never a victim.
struct PreemptionHolder {
  std::string uid;
  std::string key;  // namespace/name: ties are broken by it, so plans are reproducible
  int32_t priority = 0;
  // Deleting the pod would violate a PodDisruptionBudget, as the caller knows it.
  bool violatesPdb = false;
  std::vector<HeldClaim> claims;
};

struct PreemptionRequest {
  const PodClaims& claims;  // the preemptor's, from resolveClaims
  std::string podUid;
  int32_t priority = 0;       // the preemptor's spec.priority (0 when absent)
  bool preemptNever = false;  // its preemptionPolicy is Never
  std::string nodeName;
  std::map<std::string, std::string> nodeLabels;
  // Every device of the claims' resources the node may reach, in its current state.
  std::vector<DevicePtr> devices;
  std::vector<PreemptionHolder> holders;
  // Indexes into holders whose claims count as released whatever their priority, and who are
  // never reported as victims: the victims kube-scheduler's own preemption already chose.
  std::vector<size_t> released;
  Scoring scoring;  // the extender's: which devices a fit chooses
};

struct PreemptionPlan {
  enum class Outcome {
    kVictims,      // preempting `victims` lets the pod fit
    kFitsAlready,  // the pod fits without preempting anyone (but the released holders)
    kNone,         // no set of lower-priority holders is enough: the node is dropped
  };
  Outcome outcome = Outcome::kNone;
  std::vector<size_t> victims;  // indexes into the request's holders, lowest priority first
  int64_t pdbViolations = 0;
  // claim key -> devices, what the pod would get once the victims' claims are released.
  std::map<std::string, std::vector<std::string>> assignment;
  std::string message;  // why not, for kNone
};

// The smallest set of holders of lower priority than the preemptor whose claims' release lets
// it fit on the node, decided with the planner's matching (planNode) over the node's devices
// with the victims' devices counted as free. Holders that would violate a PDB are spared
// first, as kube-scheduler's selectVictimsOnNode does (most important first, with every other
// lower-priority holder released), and only those that cannot be spared are victims. Among the
// sets of the other holders that then fit, the best has the lowest highest victim priority,
// then the fewest pods, then the lowest sum of priorities, then the first holder keys. Holders
// of equal or higher priority are never victims; a preemptor whose policy is Never preempts
// nobody. Pure: no I/O, no clock.
PreemptionPlan planPreemption(const PreemptionRequest& request);

}  // namespace ker

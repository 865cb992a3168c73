#pragma once

#include <vector>

#include "controller/watched_pod.h"

// How long device pods took from creation to bound and to running, as the pods' own conditions
// date them (PodScheduled and Ready turning True), so that the figure does not depend on when
// the controller happened to see the change.
namespace ker {

enum class AllocationStage { kBound, kRunning };
const char* toString(AllocationStage stage);

struct StageLatency {
  AllocationStage stage;
  double seconds = 0;
};

// The stages a pod that uses claims reached between two observations of it, each with its time
// since the pod's creation. Only a change counts: a pod first seen already bound (a relist, a
// restarted controller) adds nothing, nor does Ready turning True again after the pod ran, so no
// pod is counted twice. Pure.
std::vector<StageLatency> stagesReached(const WatchedPod& before, const WatchedPod& after);

}  // namespace ker

#pragma once

#include <optional>
#include <string>

#include "controller/plan.h"
#include "controller/reconcile_decisions.h"
#include "model/objects.h"

namespace ker {

struct ClaimInputs {
  ClaimView view;
  bool protect = false;  // keep claims in use from deletion (the protection finalizer)
  SystemTime now;        // stamps the conditions' transitions in the status written
};

// Everything the controller does about one claim, decided without I/O: mark it Invalid (or
// valid again), then decideClaim's action turned into the exact status to write and the events
// to record. With no status to write, its protection finalizer (protectionChange), and once,
// when it is deleted while in use, its status again with conditions and an event saying what
// its deletion waits for (deletionWaitUnannounced). A bind gets no event of its own: the
// claim's status says what it holds while it holds it (the pod's allocation annotation too,
// and kube-scheduler's event says where the pod went), and the release's event says what it
// held, so an event per placed pod would only cost the API server a write.
Plan planClaim(const ClaimInputs& in);

// The claim is gone from the cache; `last` is how the watch last saw it, `holder` one of its
// holders' pods in the cache (called once for each). Its holder, still running, is warned that its
// devices may go to another pod.
Plan planDeletedClaim(const ExtendedResourceClaim& last, const Pod* holder);

// The status a bind writes, as one string: a change to it is a sign of life that starts the
// grace again. Edits by others (labels, spec) leave it alone.
std::string statusFingerprint(const ExtendedResourceClaim& claim);

}  // namespace ker

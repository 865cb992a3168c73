#include "controller/reconciler.h"

#include <algorithm>

#include "common/api_error.h"
#include "common/logging.h"

namespace ker {

using Result = ReconcileResult::Status;

Reconciler::Reconciler(ApiClient& api, ControllerCaches& caches, Executor& executor,
                       ControllerMetrics* metrics, ReconcilerOptions opts)
    : api_(api), caches_(caches), executor_(executor), metrics_(metrics), opts_(std::move(opts)) {}

ReconcileResult Reconciler::guarded(const std::function<ReconcileResult()>& body) {
  ReconcileResult r;
  try {
    return body();
  } catch (const NotLeading&) {
    r.status = Result::kAborted;
  } catch (const std::exception& e) {
    // The controller's one boundary with the API client's exceptions: an ApiError by its
    // kind, any other fault as kInternal.
    Status failed = statusFrom(e);
    // The object written was deleted meanwhile: its delete event queues it again, and the
    // reconcile then finds nothing to do.
    if (classify(failed) == Failure::kGone) {
      if (log::v(2)) {
        log::info("reconciled object is gone", {{"error", failed.message()}});
      }
      return r;
    }
    r.status = Result::kRetry;
    r.error = std::move(failed);
  }
  return r;
}

Reconciler::Holders Reconciler::cachedHolders(const std::string& ns,
                                              const std::vector<PodRef>& refs) {
  Holders h;
  for (const auto& ref : refs) {
    h.pods.push_back(caches_.pod(objectKey(ns, ref.name)));
    const auto& pod = h.pods.back();
    h.view.push_back({pod.get(), !ref.uid.empty() && (!pod || pod->meta.uid != ref.uid) &&
                                     caches_.podDeleted(ref.uid)});
  }
  return h;
}

void Reconciler::readHoldersLive(const std::string& ns, const std::vector<PodRef>& refs,
                                 const std::vector<std::string>& names, Holders& holders) {
  for (size_t i = 0; i < refs.size(); ++i) {
    if (holders.view[i].live ||
        std::find(names.begin(), names.end(), refs[i].name) == names.end()) {
      continue;
    }
    holders.pods[i] = liveGet<WatchedPod>(ns, refs[i].name);
    holders.view[i] = {holders.pods[i].get(), true};
  }
}

ReconcileResult Reconciler::unsettled() {
  ReconcileResult r;
  r.status = Result::kRetry;
  r.error = Status::unavailable("the live reads did not settle the decision");
  return r;
}

void Reconciler::assumeWritten(const Executor::Outcome& out) {
  caches_.assume(out.writtenClaim);
  caches_.assume(out.writtenDevice);
  for (const auto& device : out.freed) {
    caches_.assume(device);
  }
}

}  // namespace ker

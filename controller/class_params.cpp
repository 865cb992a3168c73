#include "controller/class_params.h"

#include <map>

#include "common/logging.h"
#include "common/resource.h"

namespace ker {

ClassParamsPublisher::ClassParamsPublisher(ApiClient& api, WriteGate mayWrite, std::string ns)
    : api_(api), mayWrite_(std::move(mayWrite)), ns_(std::move(ns)) {}

ReconcileResult ClassParamsPublisher::sync(const ClassTable& classes) {
  ReconcileResult r;
  if (ns_.empty()) {
    return r;
  }
  // Nothing watches the Namespace: an annotation reset by hand, by a `kubectl replace` or by a
  // former leader's late write is put back at the next look.
  r.requeueAfter = kRecheck;
  const std::map<std::string, std::string> want = classParams(classes);
  nlohmann::json ns;
  if (Status read = callApi([&] { ns = api_.get(resources::kNamespaces, "", ns_); }); !read.ok()) {
    r.status = ReconcileResult::Status::kRetry;
    r.error = read.within("reading Namespace " + ns_ + " (the class admission policies' params)");
    return r;
  }
  nlohmann::json annotations = ns["metadata"].value("annotations", nlohmann::json());
  if (!annotations.is_object()) {
    annotations = nlohmann::json::object();
  }
  bool changed = false;
  for (const char* key : {kClassParamsAnnotation, kPodsOnlyParamsAnnotation}) {
    auto it = want.find(key);
    if (it == want.end()) {
      changed |= annotations.erase(key) > 0;
    } else if (annotations.value(key, nlohmann::json()) != it->second) {
      annotations[key] = it->second;
      changed = true;
    }
  }
  if (!changed) {
    return r;
  }
  if (!mayWrite_()) {
    r.status = ReconcileResult::Status::kAborted;
    return r;
  }
  ns["metadata"]["annotations"] = annotations;
  // The read's resourceVersion makes this a compare-and-swap: a lost race is retried.
  if (Status wrote = callApi([&] { api_.update(resources::kNamespaces, "", ns); }); !wrote.ok()) {
    r.status = ReconcileResult::Status::kRetry;
    r.error = wrote.within("updating Namespace " + ns_);
    return r;
  }
  log::info("published the class admission policies' params",
            {{"namespace", ns_}, {"annotations", nlohmann::json(want)}});
  return r;
}

}  // namespace ker

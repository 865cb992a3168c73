#include "controller/class_params.h"

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
  const std::string want = classParams(classes);
  nlohmann::json ns;
  if (Status read = callApi([&] { ns = api_.get(resources::kNamespaces, "", ns_); }); !read.ok()) {
    r.status = ReconcileResult::Status::kRetry;
    r.error = read.within("reading Namespace " + ns_ + " (the class admission policies' params)");
    return r;
  }
  nlohmann::json& annotations = ns["metadata"]["annotations"];
  const nlohmann::json* have =
      annotations.is_object() && annotations.contains(kClassParamsAnnotation)
          ? &annotations[kClassParamsAnnotation]
          : nullptr;
  if (want.empty() ? have == nullptr : (have != nullptr && *have == want)) {
    return r;
  }
  if (!mayWrite_()) {
    r.status = ReconcileResult::Status::kAborted;
    return r;
  }
  if (want.empty()) {
    annotations.erase(kClassParamsAnnotation);
  } else {
    annotations[kClassParamsAnnotation] = want;
  }
  // The read's resourceVersion makes this a compare-and-swap: a lost race is retried.
  if (Status wrote = callApi([&] { api_.update(resources::kNamespaces, "", ns); }); !wrote.ok()) {
    r.status = ReconcileResult::Status::kRetry;
    r.error = wrote.within("updating Namespace " + ns_);
    return r;
  }
  log::info("published the names the classes serve",
            {{"namespace", ns_}, {"annotation", kClassParamsAnnotation}, {"value", want}});
  return r;
}

}  // namespace ker

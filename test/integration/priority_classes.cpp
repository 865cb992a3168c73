#include "priority_classes.h"

#include "common/api_error.h"
#include "common/resource.h"
#include "test_env.h"

namespace ker::itest {

namespace {

const Resource kPriorityClasses{"scheduling.k8s.io", "v1", "priorityclasses", false};

}  // namespace

std::string PriorityClasses::create(int value) {
  const std::string name = uniqueName("prio");
  api_.create(kPriorityClasses, "",
              {{"apiVersion", "scheduling.k8s.io/v1"},
               {"kind", "PriorityClass"},
               {"metadata", {{"name", name}}},
               {"value", value}});
  names_.push_back(name);
  return name;
}

void PriorityClasses::removeAll() {
  for (const auto& name : names_) {
    try {
      api_.remove(kPriorityClasses, "", name);
    } catch (const ApiError&) {
      // Left behind: see the header.
    }
  }
}

bool createPodOnceAdmitted(KubeClient& api, const std::string& ns, const nlohmann::json& pod,
                           std::chrono::milliseconds timeout, std::chrono::milliseconds interval) {
  const bool namesClass =
      !pod.value(nlohmann::json::json_pointer("/spec/priorityClassName"), std::string()).empty();
  return eventually(
      [&] {
        try {
          api.create(resources::kPods, ns, pod);
          return true;
        } catch (const ApiError& e) {
          // The plugin's refusal of a class it has not seen yet is admission's 403 Forbidden;
          // a pod without a class cannot get it, and any other error is not this lag.
          if (!namesClass || e.kind() != ApiErrorKind::kForbidden || e.reason() != "Forbidden") {
            throw;
          }
          return false;
        }
      },
      timeout, interval);
}

}  // namespace ker::itest

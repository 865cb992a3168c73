#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/kube_client.h"

namespace ker::itest {

// The PriorityClasses one test creates (cluster-scoped, so no namespace takes them along),
// deleted again by its TearDown; the soak's too, never deleted on its throwaway control plane.
class PriorityClasses {
 public:
  explicit PriorityClasses(KubeClient& api) : api_(api) {}

  // Creates a PriorityClass of `value` under a fresh name and remembers it; returns the name.
  std::string create(int value);
  // Deletes the ones created; one the API server refuses to delete is left behind, in a
  // control plane that is thrown away after the run.
  void removeAll();

 private:
  KubeClient& api_;
  std::vector<std::string> names_;
};

// Creates `pod`, which names a PriorityClass: the Priority admission plugin reads them from a
// cache, where one just created may not be yet, so its refusal (403, reason Forbidden) is
// retried every `interval`. False when the pod was still refused so at `timeout` (a class that
// does not exist, or a real denial, ends there); other errors throw.
bool createPodOnceAdmitted(KubeClient& api, const std::string& ns, const nlohmann::json& pod,
                           std::chrono::milliseconds timeout, std::chrono::milliseconds interval);

}  // namespace ker::itest

#include "common/admission_policy_check.h"

#include <algorithm>

#include "common/api_error.h"
#include "common/logging.h"
#include "common/resource.h"

namespace ker {

const char* toString(PolicyState state) {
  switch (state) {
    case PolicyState::kEnforced:
      return "Enforced";
    case PolicyState::kPolicyMissing:
      return "PolicyMissing";
    case PolicyState::kBindingMissing:
      return "BindingMissing";
    case PolicyState::kBindingElsewhere:
      return "BindingElsewhere";
    case PolicyState::kBindingNotDenying:
      return "BindingNotDenying";
    case PolicyState::kUnreadable:
      return "Unreadable";
  }
  return "Unknown";
}

// The policy and its binding both exist, the binding points at the policy, and it denies.
// Their rules are not compared with deploy/'s: a changed policy is an administrator's choice.
PolicyVerdict judgePolicy(const std::string& name, const PolicyObjectRead& policy,
                          const PolicyObjectRead& binding) {
  using Outcome = PolicyObjectRead::Outcome;
  const std::string fix = "; apply deploy/admission-policy.yaml";
  for (const auto* r : {&policy, &binding}) {
    if (r->outcome == Outcome::kFailed) {
      return {PolicyState::kUnreadable,
              "cannot read ValidatingAdmissionPolicy/Binding " + name + ": " + r->error};
    }
  }
  if (policy.outcome == Outcome::kNotFound) {
    return {PolicyState::kPolicyMissing,
            "ValidatingAdmissionPolicy " + name + " not found: its rules are not enforced" + fix};
  }
  if (binding.outcome == Outcome::kNotFound) {
    return {PolicyState::kBindingMissing, "ValidatingAdmissionPolicyBinding " + name +
                                              " not found: the policy is not enforced" + fix};
  }
  // Read field by field: a value of an unexpected type reads as absent, never throws.
  auto specField = [&](const char* key) {
    const nlohmann::json& o = binding.object;
    if (!o.is_object() || !o.contains("spec") || !o["spec"].is_object()) {
      return nlohmann::json();
    }
    return o["spec"].value(key, nlohmann::json());
  };
  const nlohmann::json policyName = specField("policyName");
  const std::string target = policyName.is_string() ? policyName.get<std::string>() : "";
  if (target != name) {
    return {PolicyState::kBindingElsewhere, "ValidatingAdmissionPolicyBinding " + name +
                                                " binds policy \"" + target + "\", not " + name +
                                                fix};
  }
  const nlohmann::json actions = specField("validationActions");
  if (!actions.is_array() ||
      std::none_of(actions.begin(), actions.end(), [](const nlohmann::json& a) {
        return a.is_string() && a.get<std::string>() == "Deny";
      })) {
    return {PolicyState::kBindingNotDenying, "ValidatingAdmissionPolicyBinding " + name +
                                                 " does not Deny (validationActions " +
                                                 actions.dump() + ")" + fix};
  }
  return {PolicyState::kEnforced, ""};
}

AdmissionPolicyCheck::AdmissionPolicyCheck(ApiClient& api, Options options,
                                           metrics::Registry* registry)
    : api_(api), options_(std::move(options)) {
  if (registry != nullptr) {
    registry->gaugeFunc("extended_resource_admission_policy_enforced",
                        "1 while every ValidatingAdmissionPolicy the component relies on, and "
                        "its binding, are in force, as last read.",
                        [this] { return problem() ? 0.0 : 1.0; });
  }
}

AdmissionPolicyCheck::~AdmissionPolicyCheck() {
  stop();
}

void AdmissionPolicyCheck::start() {
  thread_ = std::thread([this] { run(); });
}

void AdmissionPolicyCheck::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

std::optional<std::string> AdmissionPolicyCheck::problem() const {
  std::lock_guard lock(mu_);
  std::string problems;
  for (const std::string& name : options_.names) {
    auto it = verdicts_.find(name);
    if (it != verdicts_.end() && it->second.enforced()) {
      continue;
    }
    problems += (problems.empty() ? "" : "; ") +
                (it == verdicts_.end() ? "ValidatingAdmissionPolicy " + name + " not checked yet"
                                       : it->second.reason);
  }
  if (problems.empty()) {
    return std::nullopt;
  }
  return problems;
}

PolicyObjectRead AdmissionPolicyCheck::read(const Resource& res, const std::string& name) const {
  try {
    return {PolicyObjectRead::Outcome::kFound, api_.get(res, "", name), ""};
  } catch (const ApiError& e) {
    if (e.isNotFound()) {
      return {PolicyObjectRead::Outcome::kNotFound, {}, ""};
    }
    return {PolicyObjectRead::Outcome::kFailed, {}, e.what()};
  }
}

PolicyVerdict AdmissionPolicyCheck::checkOnce(const std::string& name) const {
  return judgePolicy(name, read(resources::kValidatingAdmissionPolicies, name),
                     read(resources::kValidatingAdmissionPolicyBindings, name));
}

void AdmissionPolicyCheck::run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    for (const std::string& name : options_.names) {
      lock.unlock();
      PolicyVerdict verdict = checkOnce(name);
      lock.lock();
      auto it = verdicts_.find(name);
      const bool changed = it == verdicts_.end() || it->second.state != verdict.state;
      verdicts_[name] = verdict;
      if (changed && verdict.enforced()) {
        log::info("admission policy in force", {{"policy", name}});
      } else if (changed) {
        log::warn(
            "admission policy not in force; not ready until it is",
            {{"policy", name}, {"state", toString(verdict.state)}, {"reason", verdict.reason}});
      }
    }
    wake_.wait_for(lock, options_.period, [this] { return stopping_; });
  }
}

ReadyCheck admissionPolicyReadyCheck(const AdmissionPolicyCheck* check) {
  return {"admission-policy", [check]() -> std::optional<std::string> {
            return check != nullptr ? check->problem() : std::nullopt;
          }};
}

}  // namespace ker

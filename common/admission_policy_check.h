#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/api_client.h"
#include "common/http_server.h"
#include "common/metrics.h"

namespace ker {

// The ValidatingAdmissionPolicies of deploy/admission-policy.yaml, each with a binding of the
// same name. Allocation protection keeps allocations to the components (without it, a tenant
// can write one); node-status confines a node agent to its node's devices; class quota and
// class names keep classes' devices to pods that ask in their resources and one class to a name.
inline constexpr const char* kAllocationPolicyName = "extended-resource-allocation-protection";
inline constexpr const char* kNodeStatusPolicyName = "extended-resource-node-agent-node-status";
inline constexpr const char* kClassQuotaPolicyName = "extended-resource-class-quota";
inline constexpr const char* kClassNamesPolicyName = "extended-resource-class-names";

// Whether a policy is in force, as the API server shows it.
enum class PolicyState {
  kEnforced,
  kPolicyMissing,
  kBindingMissing,
  kBindingElsewhere,   // the binding names another policy
  kBindingNotDenying,  // its validationActions lack Deny: violations pass
  kUnreadable,         // the objects could not be read (no RBAC grant, API server unreachable)
};
const char* toString(PolicyState state);

// What reading one of the two objects gave.
struct PolicyObjectRead {
  enum class Outcome { kFound, kNotFound, kFailed };
  Outcome outcome = Outcome::kFailed;
  nlohmann::json object;  // when kFound
  std::string error;      // when kFailed
};

struct PolicyVerdict {
  PolicyState state = PolicyState::kUnreadable;
  std::string reason;  // for people: what is wrong and how to fix it; empty when enforced
  bool enforced() const { return state == PolicyState::kEnforced; }
};

// Decides, from what was read, whether the policy named `name` is in force.
PolicyVerdict judgePolicy(const std::string& name, const PolicyObjectRead& policy,
                          const PolicyObjectRead& binding);

// Reads the policies a component relies on, and their bindings, now and then, so that it can
// say (on /readyz, in its log once per change of each, and in the metric
// extended_resource_admission_policy_enforced) when one is absent: a cluster without them still
// works, but trusts every tenant.
class AdmissionPolicyCheck {
 public:
  struct Options {
    std::vector<std::string> names = {kAllocationPolicyName};
    std::chrono::milliseconds period{std::chrono::minutes(1)};
  };

  AdmissionPolicyCheck(ApiClient& api, Options options, metrics::Registry* registry = nullptr);
  ~AdmissionPolicyCheck();  // stop()
  AdmissionPolicyCheck(const AdmissionPolicyCheck&) = delete;
  AdmissionPolicyCheck& operator=(const AdmissionPolicyCheck&) = delete;

  // Checks at once, then every period, on its own thread.
  void start();
  void stop();  // idempotent
  // Empty while every policy is in force; else why not, for each that is not ("not checked
  // yet" before the first read).
  std::optional<std::string> problem() const;

 private:
  PolicyVerdict checkOnce(const std::string& name) const;
  PolicyObjectRead read(const Resource& res, const std::string& name) const;
  void run();

  ApiClient& api_;
  const Options options_;
  std::thread thread_;

  mutable std::mutex mu_;  // guards the members below
  std::condition_variable wake_;
  bool stopping_ = false;
  std::map<std::string, PolicyVerdict> verdicts_;  // by name; empty until the first check
};

// The /readyz check "admission-policy" of a component: fails while one of check's policies is
// not in force; passes when check is null (the component was told not to check).
ReadyCheck admissionPolicyReadyCheck(const AdmissionPolicyCheck* check);

}  // namespace ker

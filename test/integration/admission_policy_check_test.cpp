// Each component says, on /readyz and once in its log, when a policy it relies on or its
// binding is absent or does not deny; read with the ServiceAccount and RBAC of deploy/.
//
// The policy made here has the shipped name but matches nothing the other suites do (ConfigMaps
// with a label no one sets), so it cannot change their outcome while it exists.
#include "common/admission_policy_check.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <optional>

#include "common/api_error.h"
#include "common/resource.h"
#include "test/support/free_port.h"
#include "test_env.h"

namespace ker::itest {
namespace {

const std::string kName = kAllocationPolicyName;

nlohmann::json harmlessPolicy() {
  return {{"apiVersion", "admissionregistration.k8s.io/v1"},
          {"kind", "ValidatingAdmissionPolicy"},
          {"metadata", {{"name", kName}}},
          {"spec",
           {{"failurePolicy", "Fail"},
            {"matchConstraints",
             {{"resourceRules",
               {{{"apiGroups", {""}},
                 {"apiVersions", {"v1"}},
                 {"operations", {"CREATE"}},
                 {"resources", {"configmaps"}}}}},
              {"objectSelector",
               {{"matchLabels", {{"extendedresource.io/admission-policy-itest", "never"}}}}}}},
            {"validations", {{{"expression", "true"}}}}}}};
}

nlohmann::json bindingDoing(const std::string& action) {
  return {{"apiVersion", "admissionregistration.k8s.io/v1"},
          {"kind", "ValidatingAdmissionPolicyBinding"},
          {"metadata", {{"name", kName}}},
          {"spec", {{"policyName", kName}, {"validationActions", {action}}}}};
}

struct Component {
  std::string binary;
  std::string serviceAccount;
  std::vector<std::string> args;  // besides --kubeconfig and the health port
  std::string healthPortFlag;     // takes the port /readyz is served on
};

class AdmissionPolicyCheckTest : public ApiTest {
 protected:
  void SetUp() override {
    ApiTest::SetUp();
    if (env_ == nullptr) {
      return;
    }
    env_->ensureDeployRbac();
    removeBoth();
    nodeFile_ = env_->dir() + "/admission-policy-itest-node.yaml";
    std::ofstream(nodeFile_) << "devices: []\n";
  }
  void TearDown() override {
    if (env_ != nullptr) {
      removeBoth();
    }
    ApiTest::TearDown();
  }

  void removeBoth() {
    for (const Resource* r : {&resources::kValidatingAdmissionPolicyBindings,
                              &resources::kValidatingAdmissionPolicies}) {
      try {
        api_->remove(*r, "", kName);
      } catch (const ApiError& e) {
        if (!e.isNotFound()) {
          throw;
        }
      }
    }
  }

  // The three binaries as deploy/ runs them, reading every 200ms: the extender, the controller
  // and the agent, in that order. `policies`: their --admission-policy; unset: its defaults.
  std::vector<std::pair<std::unique_ptr<ChildProcess>, int>> startAll(
      const std::optional<std::string>& policies = std::nullopt) {
    const std::vector<Component> components = {
        {"scheduler/extended-resource-scheduler",
         "extended-resource-scheduler-extender",
         {"--bind-address=127.0.0.1", "--port=" + std::to_string(freePort()),
          "--health-bind-address=127.0.0.1"},
         "--health-port="},
        {"controller/extended-resource-controller",
         "extended-resource-controller",
         {"--leader-elect=false"},
         "--metrics-bind-address=127.0.0.1:"},
        {"agent/extended-resource-node-agent",
         "extended-resource-node-agent",
         {"--node-name=admission-policy-itest", "--node-file=" + nodeFile_,
          "--nri-socket=" + env_->dir() + "/no-nri.sock",
          "--state-dir=" + env_->dir() + "/" + uniqueName("agent-state")},
         "--metrics-bind-address=127.0.0.1:"},
    };
    std::vector<std::pair<std::unique_ptr<ChildProcess>, int>> out;
    for (const auto& c : components) {
      const int port = freePort();
      std::vector<std::string> args = {
          "--kubeconfig=" + env_->serviceAccountKubeconfig(c.serviceAccount),
          "--admission-policy-period=200ms", c.healthPortFlag + std::to_string(port)};
      if (policies) {
        args.push_back("--admission-policy=" + *policies);
      }
      args.insert(args.end(), c.args.begin(), c.args.end());
      auto child = std::make_unique<ChildProcess>(
          env_->binary(c.binary), args, env_->dir() + "/" + uniqueName("policy-check") + ".log");
      child->start();
      out.emplace_back(std::move(child), port);
    }
    return out;
  }

  static std::string readyz(int port) {
    httplib::Client cli("127.0.0.1", port);
    auto res = cli.Get("/readyz");
    return res ? std::to_string(res->status) + " " + res->body : "no answer";
  }

  // Until every component's /readyz reports the policy line wanted (a ready one: "200 ok",
  // when that is what is wanted).
  static ::testing::AssertionResult allReport(
      const std::vector<std::pair<std::unique_ptr<ChildProcess>, int>>& all,
      const std::string& line) {
    for (const auto& [child, port] : all) {
      const int p = port;
      auto says = [&] {
        const std::string got = readyz(p);
        return got.find(line) != std::string::npos || (line == kOk && got == "200 ok");
      };
      if (!eventually(says, 30s)) {
        return ::testing::AssertionFailure()
               << "port " << p << " never said \"" << line << "\": " << readyz(p) << "\n"
               << child->logTail();
      }
    }
    return ::testing::AssertionSuccess();
  }

  static constexpr const char* kOk = "[+]admission-policy ok";
  std::string nodeFile_;
};

TEST_F(AdmissionPolicyCheckTest, EachComponentReportsAMissingOrNonDenyingPolicyUntilItIsThere) {
  auto all = startAll(kName);
  EXPECT_TRUE(allReport(
      all, "[-]admission-policy failed: ValidatingAdmissionPolicy " + kName + " not found"));

  api_->create(resources::kValidatingAdmissionPolicies, "", harmlessPolicy());
  EXPECT_TRUE(allReport(
      all, "[-]admission-policy failed: ValidatingAdmissionPolicyBinding " + kName + " not found"));

  api_->create(resources::kValidatingAdmissionPolicyBindings, "", bindingDoing("Audit"));
  EXPECT_TRUE(allReport(all, "does not Deny"));

  api_->patch(resources::kValidatingAdmissionPolicyBindings, "", kName, PatchType::kMerge,
              {{"spec", {{"validationActions", {"Deny"}}}}});
  EXPECT_TRUE(allReport(all, kOk));
  // The extender and the controller are ready now; the agent still lacks its runtime.
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(readyz(all[i].second), "200 ok") << all[i].first->logTail();
  }

  // Each change of state was logged once, however many times it was read.
  for (auto& [child, port] : all) {
    child->stop();
    const std::string log = child->logTail(200000);
    size_t warnings = 0;
    for (size_t at = log.find("admission policy not in force"); at != std::string::npos;
         at = log.find("admission policy not in force", at + 1)) {
      ++warnings;
    }
    EXPECT_EQ(warnings, 3u) << log;
    EXPECT_NE(log.find("admission policy in force"), std::string::npos) << log;
  }
}

// Without the flag each binary checks the policies of deploy/ it relies on: the extender the
// allocation policy, the controller the class policies beside it, the agent its node rule.
TEST_F(AdmissionPolicyCheckTest, EachBinaryChecksThePoliciesItReliesOnByDefault) {
  auto all = startAll();
  const std::vector<std::vector<std::string>> relied = {
      {kAllocationPolicyName},
      {kAllocationPolicyName, kClassQuotaPolicyName, kClassNamesPolicyName},
      {kAllocationPolicyName, kNodeStatusPolicyName}};
  for (size_t i = 0; i < all.size(); ++i) {
    const int port = all[i].second;
    for (const std::string& name : relied[i]) {
      EXPECT_TRUE(eventually(
          [&] {
            return readyz(port).find("ValidatingAdmissionPolicy " + name + " not found") !=
                   std::string::npos;
          },
          30s))
          << name << ": " << readyz(port) << "\n"
          << all[i].first->logTail();
    }
  }
  const std::string extender = readyz(all[0].second);
  EXPECT_EQ(extender.find(kNodeStatusPolicyName), std::string::npos) << extender;
  EXPECT_EQ(extender.find(kClassQuotaPolicyName), std::string::npos) << extender;
}

}  // namespace
}  // namespace ker::itest

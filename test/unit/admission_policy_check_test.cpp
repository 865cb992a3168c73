#include "common/admission_policy_check.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/process_flags.h"
#include "common/resource.h"
#include "fake_api_client.h"
#include "flag_args.h"

namespace ker {
namespace {

using Outcome = PolicyObjectRead::Outcome;

const std::string kName = kAllocationPolicyName;

PolicyObjectRead found(nlohmann::json object) {
  return {Outcome::kFound, std::move(object), ""};
}
PolicyObjectRead notFound() {
  return {Outcome::kNotFound, {}, ""};
}

nlohmann::json binding(const std::string& policy, nlohmann::json actions,
                       const std::string& name = kName) {
  return {{"metadata", {{"name", name}}},
          {"spec", {{"policyName", policy}, {"validationActions", std::move(actions)}}}};
}

const nlohmann::json kPolicy = {{"metadata", {{"name", kName}}},
                                {"spec", nlohmann::json::object()}};

TEST(JudgePolicy, EnforcedOnlyWhenBothExistAndTheBindingDeniesThisPolicy) {
  EXPECT_TRUE(judgePolicy(kName, found(kPolicy), found(binding(kName, {"Deny"}))).enforced());
  EXPECT_TRUE(
      judgePolicy(kName, found(kPolicy), found(binding(kName, {"Audit", "Deny"}))).enforced());

  auto v = judgePolicy(kName, notFound(), found(binding(kName, {"Deny"})));
  EXPECT_EQ(v.state, PolicyState::kPolicyMissing);
  EXPECT_NE(v.reason.find("ValidatingAdmissionPolicy " + kName + " not found"), std::string::npos)
      << v.reason;
  EXPECT_NE(v.reason.find("deploy/admission-policy.yaml"), std::string::npos) << v.reason;

  v = judgePolicy(kName, found(kPolicy), notFound());
  EXPECT_EQ(v.state, PolicyState::kBindingMissing);
  EXPECT_NE(v.reason.find("ValidatingAdmissionPolicyBinding " + kName + " not found"),
            std::string::npos)
      << v.reason;

  v = judgePolicy(kName, found(kPolicy), found(binding("something-else", {"Deny"})));
  EXPECT_EQ(v.state, PolicyState::kBindingElsewhere);
  EXPECT_NE(v.reason.find("\"something-else\""), std::string::npos) << v.reason;

  for (const auto& actions : {nlohmann::json::array({"Warn", "Audit"}), nlohmann::json::array(),
                              nlohmann::json("Deny"), nlohmann::json::array({1})}) {
    v = judgePolicy(kName, found(kPolicy), found(binding(kName, actions)));
    EXPECT_EQ(v.state, PolicyState::kBindingNotDenying) << actions.dump();
  }
  // A binding without a spec, or with fields of other types, binds nothing (and never throws).
  v = judgePolicy(kName, found(kPolicy), found({{"metadata", {{"name", kName}}}}));
  EXPECT_EQ(v.state, PolicyState::kBindingElsewhere);
  for (const auto& odd : {nlohmann::json(), nlohmann::json::array(), nlohmann::json{{"spec", "x"}},
                          nlohmann::json{{"spec", {{"policyName", 5}}}}}) {
    EXPECT_EQ(judgePolicy(kName, found(kPolicy), found(odd)).state, PolicyState::kBindingElsewhere)
        << odd.dump();
  }
}

TEST(JudgePolicy, AReadThatFailedIsUnreadableNotMissing) {
  auto v = judgePolicy(kName, {Outcome::kFailed, {}, "forbidden: no get grant"}, notFound());
  EXPECT_EQ(v.state, PolicyState::kUnreadable);
  EXPECT_NE(v.reason.find("forbidden: no get grant"), std::string::npos) << v.reason;
  v = judgePolicy(kName, found(kPolicy), {Outcome::kFailed, {}, "timeout"});
  EXPECT_EQ(v.state, PolicyState::kUnreadable);
  EXPECT_FALSE(v.enforced());
}

// Polls (bounded) until pred holds; the check runs on its own thread.
template <class Pred>
bool eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

TEST(AdmissionPolicyCheck, FollowsThePolicyAndItsBindingComingAndGoing) {
  testing::FakeApiClient api;
  metrics::Registry registry;
  AdmissionPolicyCheck check(api, {.names = {kName}, .period = std::chrono::milliseconds(10)},
                             &registry);
  ASSERT_TRUE(check.problem().has_value());
  EXPECT_NE(check.problem()->find("not checked yet"), std::string::npos);
  check.start();
  ASSERT_TRUE(eventually([&] {
    auto p = check.problem();
    return p && p->find("ValidatingAdmissionPolicy " + kName + " not found") != std::string::npos;
  }));
  EXPECT_NE(registry.render().find("extended_resource_admission_policy_enforced 0\n"),
            std::string::npos);

  api.create(resources::kValidatingAdmissionPolicies, "", kPolicy);
  ASSERT_TRUE(eventually([&] {
    auto p = check.problem();
    return p && p->find("Binding " + kName + " not found") != std::string::npos;
  }));
  api.create(resources::kValidatingAdmissionPolicyBindings, "", binding(kName, {"Deny"}));
  ASSERT_TRUE(eventually([&] { return !check.problem(); }));
  EXPECT_NE(registry.render().find("extended_resource_admission_policy_enforced 1\n"),
            std::string::npos);

  api.remove(resources::kValidatingAdmissionPolicyBindings, "", kName);
  ASSERT_TRUE(eventually([&] { return check.problem().has_value(); }));
  check.stop();
  check.stop();
}

TEST(AdmissionPolicyCheck, ReportsEachPolicyNotInForceAndIsReadyOnlyWithAll) {
  testing::FakeApiClient api;
  metrics::Registry registry;
  const std::string other = kNodeStatusPolicyName;
  AdmissionPolicyCheck check(
      api, {.names = {kName, other}, .period = std::chrono::milliseconds(10)}, &registry);
  api.create(resources::kValidatingAdmissionPolicies, "", kPolicy);
  api.create(resources::kValidatingAdmissionPolicyBindings, "", binding(kName, {"Deny"}));
  check.start();
  ASSERT_TRUE(eventually([&] {
    auto p = check.problem();
    return p && p->find("ValidatingAdmissionPolicy " + other + " not found") != std::string::npos;
  }));
  EXPECT_EQ(check.problem()->find(kName + " "), std::string::npos) << *check.problem();
  EXPECT_NE(registry.render().find("extended_resource_admission_policy_enforced 0\n"),
            std::string::npos);

  api.create(resources::kValidatingAdmissionPolicies, "", {{"metadata", {{"name", other}}}});
  api.create(resources::kValidatingAdmissionPolicyBindings, "", binding(other, {"Deny"}, other));
  ASSERT_TRUE(eventually([&] { return !check.problem(); }));
  EXPECT_NE(registry.render().find("extended_resource_admission_policy_enforced 1\n"),
            std::string::npos);

  api.remove(resources::kValidatingAdmissionPolicies, "", kName);
  api.remove(resources::kValidatingAdmissionPolicies, "", other);
  ASSERT_TRUE(eventually([&] {
    auto p = check.problem();
    return p && p->find(kName + " not found") != std::string::npos &&
           p->find("; ValidatingAdmissionPolicy " + other + " not found") != std::string::npos;
  })) << check.problem().value_or("");
}

TEST(AdmissionPolicyCheck, AsAReadyCheck) {
  EXPECT_EQ(admissionPolicyReadyCheck(nullptr).name, "admission-policy");
  EXPECT_FALSE(admissionPolicyReadyCheck(nullptr).problem());
  testing::FakeApiClient api;
  AdmissionPolicyCheck check(api, {});
  EXPECT_TRUE(admissionPolicyReadyCheck(&check).problem().has_value());
}

TEST(AdmissionPolicyFlag, DefaultsToTheBinarysPoliciesAndEmptyTurnsTheCheckOff) {
  const std::vector<std::string> defaults = {kAllocationPolicyName, kNodeStatusPolicyName};
  {
    FlagSet flags("p", "");
    const AdmissionPolicyFlag flag(flags, defaults);
    ASSERT_EQ(parseArgs(flags, {}).status, FlagParseResult::kOk);
    std::optional<AdmissionPolicyCheck::Options> got;
    ASSERT_TRUE(flag.settings(got).ok());
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->names, defaults);
    EXPECT_EQ(got->period, AdmissionPolicyCheck::Options{}.period);
  }
  {
    FlagSet flags("p", "");
    const AdmissionPolicyFlag flag(flags, defaults);
    ASSERT_EQ(parseArgs(flags, {"--admission-policy=one, two"}).status, FlagParseResult::kOk);
    std::optional<AdmissionPolicyCheck::Options> got;
    ASSERT_TRUE(flag.settings(got).ok());
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->names, (std::vector<std::string>{"one", "two"}));
  }
  {
    FlagSet flags("p", "");
    const AdmissionPolicyFlag flag(flags, defaults);
    ASSERT_EQ(parseArgs(flags, {"--admission-policy-period=0s"}).status, FlagParseResult::kOk);
    std::optional<AdmissionPolicyCheck::Options> got;
    EXPECT_EQ(flag.settings(got).message(), "--admission-policy-period must be positive, got 0s");
  }
  {
    FlagSet flags("p", "");
    const AdmissionPolicyFlag flag(flags, defaults);
    ASSERT_EQ(parseArgs(flags, {"--admission-policy="}).status, FlagParseResult::kOk);
    std::optional<AdmissionPolicyCheck::Options> got = AdmissionPolicyCheck::Options{};
    ASSERT_TRUE(flag.settings(got).ok());
    EXPECT_FALSE(got.has_value());
  }
  {
    FlagSet flags("p", "");
    const AdmissionPolicyFlag flag(flags, defaults);
    ASSERT_EQ(parseArgs(flags, {"--admission-policy=fine,Not_A_Name"}).status,
              FlagParseResult::kOk);
    std::optional<AdmissionPolicyCheck::Options> got;
    Status st = flag.settings(got);
    EXPECT_EQ(st.code(), StatusCode::kInvalid);
    EXPECT_EQ(st.message(), "--admission-policy must list object names, got \"Not_A_Name\"");
  }
}

}  // namespace
}  // namespace ker

#include "scheduler/preemption/preemption_pdb.h"

#include <gtest/gtest.h>

namespace ker {
namespace {

PdbPtr budget(const std::string& ns, const nlohmann::json& selector, int allowed,
              const std::vector<std::string>& disrupted = {}) {
  nlohmann::json obj = {{"metadata", {{"name", "pdb"}, {"namespace", ns}}},
                        {"spec", nlohmann::json::object()},
                        {"status", {{"disruptionsAllowed", allowed}}}};
  if (!selector.is_null()) {
    obj["spec"]["selector"] = selector;
  }
  for (const auto& name : disrupted) {
    obj["status"]["disruptedPods"][name] = "2026-01-01T00:00:00Z";
  }
  return std::make_shared<const PodDisruptionBudget>(PodDisruptionBudget::fromJson(obj));
}

const nlohmann::json kApp = {{"matchLabels", {{"app", "train"}}}};

PdbSubject pod(const std::string& name,
               std::map<std::string, std::string> labels = {{"app", "train"}}) {
  return PdbSubject{"default", name, std::move(labels)};
}

std::vector<bool> count(const std::vector<PdbSubject>& victims,
                        const std::vector<PdbPtr>& budgets) {
  return pdbViolations(victims, budgets);
}

TEST(PdbViolations, TheBudgetIsSpentByTheMostImportantVictimsFirst) {
  EXPECT_EQ(count({pod("a"), pod("b"), pod("c")}, {budget("default", kApp, 1)}),
            (std::vector<bool>{false, true, true}));
  EXPECT_EQ(count({pod("a"), pod("b")}, {budget("default", kApp, 0)}),
            (std::vector<bool>{true, true}));
  EXPECT_EQ(count({pod("a"), pod("b")}, {budget("default", kApp, 2)}),
            (std::vector<bool>{false, false}));
}

TEST(PdbViolations, OnlyBudgetsOfTheNamespaceWhoseSelectorMatches) {
  EXPECT_EQ(count({pod("a")}, {budget("other", kApp, 0)}), (std::vector<bool>{false}));
  EXPECT_EQ(count({pod("a", {{"app", "serve"}})}, {budget("default", kApp, 0)}),
            (std::vector<bool>{false}));
  const nlohmann::json exists = {{"matchExpressions", {{{"key", "app"}, {"operator", "Exists"}}}}};
  EXPECT_EQ(count({pod("a", {{"app", "serve"}})}, {budget("default", exists, 0)}),
            (std::vector<bool>{true}));
}

TEST(PdbViolations, PodsWithoutLabelsAndEmptyOrInvalidSelectorsNeverCount) {
  EXPECT_EQ(count({pod("a", {})}, {budget("default", nlohmann::json::object(), 0)}),
            (std::vector<bool>{false}));
  EXPECT_EQ(count({pod("a")}, {budget("default", nlohmann::json::object(), 0)}),
            (std::vector<bool>{false}));
  EXPECT_EQ(count({pod("a")}, {budget("default", nullptr, 0)}), (std::vector<bool>{false}));
  const nlohmann::json bad = {{"matchExpressions", {{{"key", "app"}, {"operator", "Near"}}}}};
  EXPECT_EQ(count({pod("a")}, {budget("default", bad, 0)}), (std::vector<bool>{false}));
}

TEST(PdbViolations, PodsAlreadyDisruptedSpendNothing) {
  // "a" is already counted by the API server: it neither violates nor uses the one allowed.
  EXPECT_EQ(count({pod("a"), pod("b")}, {budget("default", kApp, 1, {"a"})}),
            (std::vector<bool>{false, false}));
}

TEST(PdbViolations, AnyExhaustedBudgetMakesAViolation) {
  const nlohmann::json team = {{"matchLabels", {{"team", "ml"}}}};
  const std::map<std::string, std::string> both{{"app", "train"}, {"team", "ml"}};
  EXPECT_EQ(count({pod("a", both), pod("b", both)},
                  {budget("default", kApp, 5), budget("default", team, 1)}),
            (std::vector<bool>{false, true}));
}

TEST(PdbViolations, GarbledBudgetsSelectNothingAndSayWhy) {
  const auto pdb =
      PodDisruptionBudget::fromJson({{"metadata", {{"name", "x"}, {"namespace", "default"}}},
                                     {"spec", {{"selector", {{"matchLabels", "not-a-map"}}}}}});
  EXPECT_TRUE(pdb.selectsNothing);
  EXPECT_FALSE(pdb.invalid.empty());
  EXPECT_FALSE(PodDisruptionBudget::fromJson(nlohmann::json::array()).invalid.empty());
}

}  // namespace
}  // namespace ker

#include "common/label_selector.h"

#include <gtest/gtest.h>

namespace ker {
namespace {

using Labels = std::map<std::string, std::string>;

LabelSelector expr(std::string key, SelectorOperator op, std::vector<std::string> values = {}) {
  LabelSelector s;
  s.matchExpressions.push_back({std::move(key), std::move(op), std::move(values)});
  return s;
}

TEST(LabelSelector, EmptyMatchesEverything) {
  EXPECT_TRUE(matches(LabelSelector{}, {}));
  EXPECT_TRUE(matches(LabelSelector{}, {{"type", "k80"}}));
  EXPECT_TRUE(validate(LabelSelector{}).ok());
  EXPECT_EQ(describe(LabelSelector{}), "");
}

TEST(LabelSelector, MatchLabelsNeedEveryPairEqual) {
  LabelSelector s;
  s.matchLabels = {{"type", "k80"}, {"zone", "a"}};
  EXPECT_TRUE(matches(s, {{"type", "k80"}, {"zone", "a"}, {"extra", "x"}}));
  EXPECT_FALSE(matches(s, {{"type", "k80"}}));
  EXPECT_FALSE(matches(s, {{"type", "k80"}, {"zone", "b"}}));
  EXPECT_FALSE(matches(s, {}));
}

TEST(LabelSelector, In) {
  auto s = expr("zone", SelectorOperator::kIn, {"a", "b"});
  EXPECT_TRUE(matches(s, {{"zone", "a"}}));
  EXPECT_TRUE(matches(s, {{"zone", "b"}}));
  EXPECT_FALSE(matches(s, {{"zone", "c"}}));
  EXPECT_FALSE(matches(s, {}));
  // The empty string is a legitimate value.
  EXPECT_TRUE(matches(expr("zone", SelectorOperator::kIn, {""}), {{"zone", ""}}));
}

TEST(LabelSelector, NotInMatchesAbsentKey) {
  auto s = expr("zone", SelectorOperator::kNotIn, {"a", "b"});
  EXPECT_FALSE(matches(s, {{"zone", "a"}}));
  EXPECT_TRUE(matches(s, {{"zone", "c"}}));
  EXPECT_TRUE(matches(s, {}));
  EXPECT_TRUE(matches(s, {{"other", "a"}}));
}

TEST(LabelSelector, ExistsAndDoesNotExist) {
  EXPECT_TRUE(matches(expr("gpu", SelectorOperator::kExists), {{"gpu", ""}}));
  EXPECT_FALSE(matches(expr("gpu", SelectorOperator::kExists), {{"cpu", "x"}}));
  EXPECT_TRUE(matches(expr("gpu", SelectorOperator::kDoesNotExist), {{"cpu", "x"}}));
  EXPECT_FALSE(matches(expr("gpu", SelectorOperator::kDoesNotExist), {{"gpu", ""}}));
}

TEST(LabelSelector, LabelsAndExpressionsAreAnded) {
  LabelSelector s = expr("zone", SelectorOperator::kIn, {"a"});
  s.matchLabels = {{"type", "k80"}};
  s.matchExpressions.push_back({"broken", SelectorOperator::kDoesNotExist, {}});
  EXPECT_TRUE(matches(s, {{"type", "k80"}, {"zone", "a"}}));
  EXPECT_FALSE(matches(s, {{"type", "k80"}, {"zone", "a"}, {"broken", "yes"}}));
  EXPECT_FALSE(matches(s, {{"type", "v100"}, {"zone", "a"}}));
  EXPECT_FALSE(matches(s, {{"type", "k80"}, {"zone", "b"}}));
}

TEST(LabelSelector, ValidateRejectsMalformedRequirements) {
  EXPECT_EQ(validate(expr("zone", SelectorOperator::kIn)).message(),
            "matchExpressions[0].values: must be non-empty for operator In");
  EXPECT_EQ(validate(expr("zone", SelectorOperator::kNotIn)).message(),
            "matchExpressions[0].values: must be non-empty for operator NotIn");
  EXPECT_EQ(validate(expr("gpu", SelectorOperator::kExists, {"x"})).message(),
            "matchExpressions[0].values: must be empty for operator Exists");
  EXPECT_EQ(validate(expr("gpu", SelectorOperator::kDoesNotExist, {"x"})).message(),
            "matchExpressions[0].values: must be empty for operator DoesNotExist");
  EXPECT_EQ(validate(expr("mem", SelectorOperator::kGt, {"4"})).message(),
            "matchExpressions[0].operator: Gt is not one of In, NotIn, Exists, DoesNotExist");
  EXPECT_EQ(validate(expr("", SelectorOperator::kExists)).message(),
            "matchExpressions[0].key: must not be empty");
  LabelSelector second = expr("zone", SelectorOperator::kIn, {"a"});
  second.matchExpressions.push_back({"gpu", SelectorOperator::kExists, {"1"}});
  EXPECT_EQ(validate(second).message(),
            "matchExpressions[1].values: must be empty for operator Exists");
  LabelSelector emptyKey;
  emptyKey.matchLabels = {{"", "x"}};
  EXPECT_EQ(validate(emptyKey).message(), "matchLabels: a key must not be empty");
  EXPECT_TRUE(validate(expr("zone", SelectorOperator::kIn, {"a"})).ok());
  EXPECT_EQ(validate(emptyKey).code(), StatusCode::kInvalid);
}

TEST(LabelSelector, InvalidSelectorMatchesNothing) {
  // Each of these would match the labels if its malformed part were ignored.
  EXPECT_FALSE(matches(expr("zone", SelectorOperator::kNotIn), {}));
  EXPECT_FALSE(matches(expr("gpu", SelectorOperator::kDoesNotExist, {"x"}), {}));
  EXPECT_FALSE(matches(expr("gpu", SelectorOperator::kExists, {"x"}), {{"gpu", "x"}}));
  EXPECT_FALSE(matches(expr("mem", SelectorOperator::kGt, {"4"}), {{"mem", "8"}}));
}

TEST(LabelSelector, Describe) {
  LabelSelector s;
  s.matchLabels = {{"type", "k80"}};
  s.matchExpressions = {{"zone", SelectorOperator::kIn, {"a", "b"}},
                        {"gpu", SelectorOperator::kDoesNotExist, {}},
                        {"mem", SelectorOperator::kExists, {}},
                        {"tier", SelectorOperator::kNotIn, {"low"}}};
  EXPECT_EQ(describe(s), "type=k80,zone in (a,b),!gpu,mem,tier notin (low)");
  LabelSelector twoLabels;
  twoLabels.matchLabels = {{"zone", "a"}, {"type", "k80"}};
  EXPECT_EQ(describe(twoLabels), "type=k80,zone=a");
  EXPECT_EQ(describe(expr("mem", SelectorOperator::kGe, {"40Gi"})), "mem>=40Gi");
}

// An operator the API does not define for label selectors never reaches a LabelSelector: the
// reader refuses it, naming where it is.
TEST(LabelSelector, TheReaderRefusesOperatorsLabelSelectorsDoNotHave) {
  for (const char* op : {"in", "Gt", "Ge", "Lt", "Le", "Equals", ""}) {
    nlohmann::json j = {{"matchExpressions", {{{"key", "zone"}, {"operator", op}}}}};
    try {
      readLabelSelector(j, "spec.selector");
      ADD_FAILURE() << op << " was read";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("spec.selector.matchExpressions[0].operator: \"") + op +
                    "\" is not one of In, NotIn, Exists, DoesNotExist");
    }
  }
  nlohmann::json ok = {
      {"matchExpressions", {{{"key", "zone"}, {"operator", "NotIn"}, {"values", {"a"}}}}}};
  EXPECT_EQ(readLabelSelector(ok, "").matchExpressions[0].op, SelectorOperator::kNotIn);
}

LabelSelector properties(std::string key, SelectorOperator op, std::vector<std::string> values) {
  LabelSelector s = expr(std::move(key), op, std::move(values));
  s.dialect = SelectorDialect::kProperties;
  return s;
}

TEST(PropertySelector, ComparisonsReadPropertiesAsQuantities) {
  const Labels small = {{"memory", "12Gi"}};
  const Labels exact = {{"memory", "40Gi"}};
  const Labels large = {{"memory", "80Gi"}};
  const Labels decimal = {{"memory", "42949672960"}};  // 40Gi written out
  auto ge = properties("memory", SelectorOperator::kGe, {"40Gi"});
  auto gt = properties("memory", SelectorOperator::kGt, {"40Gi"});
  auto le = properties("memory", SelectorOperator::kLe, {"40Gi"});
  auto lt = properties("memory", SelectorOperator::kLt, {"40Gi"});
  EXPECT_FALSE(matches(ge, small));
  EXPECT_TRUE(matches(ge, exact));
  EXPECT_TRUE(matches(ge, decimal));
  EXPECT_TRUE(matches(ge, large));
  EXPECT_FALSE(matches(gt, exact));
  EXPECT_TRUE(matches(gt, large));
  EXPECT_TRUE(matches(le, exact));
  EXPECT_FALSE(matches(le, large));
  EXPECT_TRUE(matches(lt, small));
  EXPECT_FALSE(matches(lt, exact));
  // A string comparison would say "9" > "10".
  EXPECT_TRUE(matches(properties("cores", SelectorOperator::kGt, {"9"}), {{"cores", "10"}}));
}

TEST(PropertySelector, AnAbsentOrUnparsablePropertySatisfiesNoComparison) {
  for (auto op : {SelectorOperator::kGt, SelectorOperator::kGe, SelectorOperator::kLt,
                  SelectorOperator::kLe}) {
    auto s = properties("memory", op, {"40Gi"});
    EXPECT_FALSE(matches(s, {})) << toString(op);
    EXPECT_FALSE(matches(s, {{"memory", "lots"}})) << toString(op);
    EXPECT_FALSE(matches(s, {{"memory", "40 GiB"}})) << toString(op);
  }
  auto s = properties("memory", SelectorOperator::kGe, {"40Gi"});
  EXPECT_EQ(unparsedComparison(s, {{"memory", "lots"}}), "memory \"lots\" is not a quantity");
  EXPECT_EQ(unparsedComparison(s, {{"memory", "12Gi"}}), std::nullopt);
  EXPECT_EQ(unparsedComparison(s, {}), std::nullopt);
  EXPECT_EQ(
      unparsedComparison(properties("memory", SelectorOperator::kIn, {"x"}), {{"memory", "lots"}}),
      std::nullopt);
}

TEST(PropertySelector, AComparisonNeedsOneQuantity) {
  EXPECT_TRUE(validate(properties("memory", SelectorOperator::kGe, {"1.5"})).ok());
  EXPECT_EQ(validate(properties("memory", SelectorOperator::kGe, {})).message(),
            "matchExpressions[0].values: operator Ge needs exactly one value");
  EXPECT_EQ(validate(properties("memory", SelectorOperator::kLt, {"1", "2"})).message(),
            "matchExpressions[0].values: operator Lt needs exactly one value");
  EXPECT_EQ(validate(properties("memory", SelectorOperator::kGt, {"40GB"})).message(),
            "matchExpressions[0].values[0]: \"40GB\" is not a quantity (operator Gt; e.g. "
            "40Gi, 1.5, 500m)");
  // An invalid comparison selects nothing, even a property equal to its text.
  EXPECT_FALSE(
      matches(properties("memory", SelectorOperator::kGe, {"40GB"}), {{"memory", "40GB"}}));
  // The set-based operators keep their rules.
  EXPECT_TRUE(matches(properties("type", SelectorOperator::kIn, {"a100"}), {{"type", "a100"}}));
}

TEST(PropertySelector, TheReaderAdmitsComparisonsOnlyInThePropertiesDialect) {
  nlohmann::json j = {
      {"matchExpressions", {{{"key", "memory"}, {"operator", "Ge"}, {"values", {"40Gi"}}}}}};
  LabelSelector s = readLabelSelector(j, "spec.metadataRequirements", SelectorDialect::kProperties);
  EXPECT_EQ(s.matchExpressions[0].op, SelectorOperator::kGe);
  EXPECT_EQ(s.dialect, SelectorDialect::kProperties);
  EXPECT_TRUE(matches(s, {{"memory", "48Gi"}}));
  try {
    readLabelSelector(j, "spec.selector");
    ADD_FAILURE() << "Ge was read as a label selector";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "spec.selector.matchExpressions[0].operator: \"Ge\" is not one of In, NotIn, "
              "Exists, DoesNotExist");
  }
  nlohmann::json bad = {{"matchExpressions", {{{"key", "memory"}, {"operator", "Equals"}}}}};
  try {
    readLabelSelector(bad, "m", SelectorDialect::kProperties);
    ADD_FAILURE() << "Equals was read";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "m.matchExpressions[0].operator: \"Equals\" is not one of In, NotIn, Exists, "
              "DoesNotExist, Gt, Ge, Lt, Le");
  }
}

// Label, node and property selectors share one rule for a requirement's shape; only what a
// comparison's value must read as, and which operators are admitted, differ by dialect.
TEST(ValidateRequirement, OneRuleForEveryDialect) {
  using enum SelectorOperator;
  struct Case {
    SelectorDialect dialect;
    SelectorOperator op;
    std::vector<std::string> values;
    std::string error;  // "" when valid
  };
  const std::vector<Case> cases = {
      {SelectorDialect::kLabels, kIn, {}, "values: must be non-empty for operator In"},
      {SelectorDialect::kNodes, kIn, {}, "values: must be non-empty for operator In"},
      {SelectorDialect::kProperties, kExists, {"x"}, "values: must be empty for operator Exists"},
      {SelectorDialect::kNodes,
       kDoesNotExist,
       {"x"},
       "values: must be empty for operator DoesNotExist"},
      {SelectorDialect::kLabels,
       kGt,
       {"1"},
       "operator: Gt is not one of In, NotIn, Exists, DoesNotExist"},
      {SelectorDialect::kNodes,
       kGe,
       {"1"},
       "operator: Ge is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt"},
      {SelectorDialect::kNodes, kGt, {"1", "2"}, "values: operator Gt needs exactly one value"},
      {SelectorDialect::kNodes,
       kLt,
       {"40Gi"},
       "values[0]: \"40Gi\" is not an integer (operator Lt)"},
      {SelectorDialect::kProperties, kLt, {"40Gi"}, ""},
      {SelectorDialect::kProperties,
       kGe,
       {"lots"},
       "values[0]: \"lots\" is not a quantity (operator Ge; e.g. 40Gi, 1.5, 500m)"},
      {SelectorDialect::kNodes, kGt, {"-3"}, ""},
      {SelectorDialect::kLabels, kNotIn, {"a"}, ""},
  };
  for (const auto& c : cases) {
    const Status s = validateRequirement("k", c.op, c.values, c.dialect);
    EXPECT_EQ(s.ok() ? "" : s.message(), c.error) << toString(c.op);
  }
  EXPECT_EQ(validateRequirement("", kExists, {}, SelectorDialect::kLabels).message(),
            "key: must not be empty");
  EXPECT_EQ(parseSelectorInteger("+12"), 12);
  EXPECT_EQ(parseSelectorInteger("+-1"), std::nullopt);
  EXPECT_EQ(parseSelectorInteger("1 "), std::nullopt);
  EXPECT_EQ(parseSelectorInteger("99999999999999999999"), std::nullopt);
}

}  // namespace
}  // namespace ker

#include "common/label_selector.h"

#include <gtest/gtest.h>

namespace ker {
namespace {

using Labels = std::map<std::string, std::string>;

LabelSelector expr(std::string key, std::string op, std::vector<std::string> values = {}) {
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
  auto s = expr("zone", "In", {"a", "b"});
  EXPECT_TRUE(matches(s, {{"zone", "a"}}));
  EXPECT_TRUE(matches(s, {{"zone", "b"}}));
  EXPECT_FALSE(matches(s, {{"zone", "c"}}));
  EXPECT_FALSE(matches(s, {}));
  // The empty string is a legitimate value.
  EXPECT_TRUE(matches(expr("zone", "In", {""}), {{"zone", ""}}));
}

TEST(LabelSelector, NotInMatchesAbsentKey) {
  auto s = expr("zone", "NotIn", {"a", "b"});
  EXPECT_FALSE(matches(s, {{"zone", "a"}}));
  EXPECT_TRUE(matches(s, {{"zone", "c"}}));
  EXPECT_TRUE(matches(s, {}));
  EXPECT_TRUE(matches(s, {{"other", "a"}}));
}

TEST(LabelSelector, ExistsAndDoesNotExist) {
  EXPECT_TRUE(matches(expr("gpu", "Exists"), {{"gpu", ""}}));
  EXPECT_FALSE(matches(expr("gpu", "Exists"), {{"cpu", "x"}}));
  EXPECT_TRUE(matches(expr("gpu", "DoesNotExist"), {{"cpu", "x"}}));
  EXPECT_FALSE(matches(expr("gpu", "DoesNotExist"), {{"gpu", ""}}));
}

TEST(LabelSelector, LabelsAndExpressionsAreAnded) {
  LabelSelector s = expr("zone", "In", {"a"});
  s.matchLabels = {{"type", "k80"}};
  s.matchExpressions.push_back({"broken", "DoesNotExist", {}});
  EXPECT_TRUE(matches(s, {{"type", "k80"}, {"zone", "a"}}));
  EXPECT_FALSE(matches(s, {{"type", "k80"}, {"zone", "a"}, {"broken", "yes"}}));
  EXPECT_FALSE(matches(s, {{"type", "v100"}, {"zone", "a"}}));
  EXPECT_FALSE(matches(s, {{"type", "k80"}, {"zone", "b"}}));
}

TEST(LabelSelector, ValidateRejectsMalformedRequirements) {
  EXPECT_EQ(validate(expr("zone", "In")).message(),
            "matchExpressions[0].values: must be non-empty for operator In");
  EXPECT_EQ(validate(expr("zone", "NotIn")).message(),
            "matchExpressions[0].values: must be non-empty for operator NotIn");
  EXPECT_EQ(validate(expr("gpu", "Exists", {"x"})).message(),
            "matchExpressions[0].values: must be empty for operator Exists");
  EXPECT_EQ(validate(expr("gpu", "DoesNotExist", {"x"})).message(),
            "matchExpressions[0].values: must be empty for operator DoesNotExist");
  EXPECT_EQ(validate(expr("mem", "Gt", {"4"})).message(),
            "matchExpressions[0].operator: \"Gt\" is not one of In, NotIn, Exists, DoesNotExist");
  EXPECT_EQ(validate(expr("zone", "in", {"a"})).message(),
            "matchExpressions[0].operator: \"in\" is not one of In, NotIn, Exists, DoesNotExist");
  EXPECT_EQ(validate(expr("", "Exists")).message(), "matchExpressions[0].key: must not be empty");
  LabelSelector second = expr("zone", "In", {"a"});
  second.matchExpressions.push_back({"gpu", "Exists", {"1"}});
  EXPECT_EQ(validate(second).message(),
            "matchExpressions[1].values: must be empty for operator Exists");
  LabelSelector emptyKey;
  emptyKey.matchLabels = {{"", "x"}};
  EXPECT_EQ(validate(emptyKey).message(), "matchLabels: a key must not be empty");
  EXPECT_TRUE(validate(expr("zone", "In", {"a"})).ok());
  EXPECT_EQ(validate(emptyKey).code(), StatusCode::kInvalid);
}

TEST(LabelSelector, InvalidSelectorMatchesNothing) {
  // Each of these would match the labels if its malformed part were ignored.
  EXPECT_FALSE(matches(expr("zone", "NotIn"), {}));
  EXPECT_FALSE(matches(expr("gpu", "DoesNotExist", {"x"}), {}));
  EXPECT_FALSE(matches(expr("gpu", "Exists", {"x"}), {{"gpu", "x"}}));
  EXPECT_FALSE(matches(expr("mem", "Gt", {"4"}), {{"mem", "8"}}));
}

TEST(LabelSelector, Describe) {
  LabelSelector s;
  s.matchLabels = {{"type", "k80"}};
  s.matchExpressions = {{"zone", "In", {"a", "b"}},
                        {"gpu", "DoesNotExist", {}},
                        {"mem", "Exists", {}},
                        {"tier", "NotIn", {"low"}}};
  EXPECT_EQ(describe(s), "type=k80,zone in (a,b),!gpu,mem,tier notin (low)");
  LabelSelector twoLabels;
  twoLabels.matchLabels = {{"zone", "a"}, {"type", "k80"}};
  EXPECT_EQ(describe(twoLabels), "type=k80,zone=a");
  EXPECT_EQ(describe(expr("mem", "Gt", {"4"})), "mem Gt (4)");
}

}  // namespace
}  // namespace ker

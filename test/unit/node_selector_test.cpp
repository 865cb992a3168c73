#include "common/node_selector.h"

#include <gtest/gtest.h>

namespace ker {
namespace {

using Labels = std::map<std::string, std::string>;
using Req = NodeSelectorRequirement;

NodeSelector labelsTerm(std::vector<Req> exprs) {
  return NodeSelector{{NodeSelectorTerm{std::move(exprs), {}}}};
}

NodeSelector fieldsTerm(std::vector<Req> fields) {
  return NodeSelector{{NodeSelectorTerm{{}, std::move(fields)}}};
}

TEST(NodeSelector, EmptyTermListMatchesNothing) {
  EXPECT_FALSE(matches(NodeSelector{}, "n1", {{"zone", "a"}}));
  EXPECT_TRUE(validate(NodeSelector{}).ok());
}

TEST(NodeSelector, EmptyTermMatchesNothingButOtherTermsStillCount) {
  NodeSelector s{{NodeSelectorTerm{}}};
  EXPECT_FALSE(matches(s, "n1", {}));
  s.terms.push_back(NodeSelectorTerm{{}, {{"metadata.name", SelectorOperator::kIn, {"n1"}}}});
  EXPECT_TRUE(matches(s, "n1", {}));
  EXPECT_FALSE(matches(s, "n2", {}));
}

TEST(NodeSelector, MatchFieldsOnNodeName) {
  auto in = fieldsTerm({{"metadata.name", SelectorOperator::kIn, {"n1"}}});
  EXPECT_TRUE(matches(in, "n1", {}));
  EXPECT_FALSE(matches(in, "n2", {}));
  auto notIn = fieldsTerm({{"metadata.name", SelectorOperator::kNotIn, {"n1"}}});
  EXPECT_FALSE(matches(notIn, "n1", {}));
  EXPECT_TRUE(matches(notIn, "n2", {}));
}

TEST(NodeSelector, MatchFieldsAreValidatedAsTheApiDoes) {
  EXPECT_EQ(
      validate(fieldsTerm({{"metadata.name", SelectorOperator::kIn, {"n1", "n2"}}})).message(),
      "nodeSelectorTerms[0].matchFields[0].values: operator In on a field needs exactly one "
      "value");
  EXPECT_EQ(validate(fieldsTerm({{"metadata.name", SelectorOperator::kNotIn, {}}})).message(),
            "nodeSelectorTerms[0].matchFields[0].values: operator NotIn on a field needs exactly "
            "one value");
  EXPECT_EQ(validate(fieldsTerm({{"metadata.name", SelectorOperator::kExists, {}}})).message(),
            "nodeSelectorTerms[0].matchFields[0].operator: \"Exists\" is not one of In, NotIn for "
            "a field");
  EXPECT_EQ(
      validate(fieldsTerm({{"spec.unschedulable", SelectorOperator::kIn, {"true"}}})).message(),
      "nodeSelectorTerms[0].matchFields[0].key: \"spec.unschedulable\" is not a supported "
      "field (only metadata.name)");
  // An invalid field requirement makes its term match nothing, even the node it names.
  EXPECT_FALSE(
      matches(fieldsTerm({{"metadata.name", SelectorOperator::kIn, {"n1", "n2"}}}), "n1", {}));
  EXPECT_FALSE(matches(fieldsTerm({{"metadata.name", SelectorOperator::kExists, {}}}), "n1", {}));
  EXPECT_FALSE(
      matches(fieldsTerm({{"spec.unschedulable", SelectorOperator::kNotIn, {"true"}}}), "n1", {}));
}

TEST(NodeSelector, InNotInExistsDoesNotExist) {
  const Labels zoneA{{"zone", "a"}, {"gpu", ""}};
  EXPECT_TRUE(matches(labelsTerm({{"zone", SelectorOperator::kIn, {"a", "b"}}}), "n", zoneA));
  EXPECT_FALSE(matches(labelsTerm({{"zone", SelectorOperator::kIn, {"b"}}}), "n", zoneA));
  EXPECT_FALSE(matches(labelsTerm({{"rack", SelectorOperator::kIn, {"r1"}}}), "n", zoneA));
  EXPECT_FALSE(matches(labelsTerm({{"zone", SelectorOperator::kNotIn, {"a"}}}), "n", zoneA));
  EXPECT_TRUE(matches(labelsTerm({{"zone", SelectorOperator::kNotIn, {"b"}}}), "n", zoneA));
  EXPECT_TRUE(matches(labelsTerm({{"rack", SelectorOperator::kNotIn, {"r1"}}}), "n", zoneA));
  EXPECT_TRUE(matches(labelsTerm({{"gpu", SelectorOperator::kExists, {}}}), "n", zoneA));
  EXPECT_FALSE(matches(labelsTerm({{"rack", SelectorOperator::kExists, {}}}), "n", zoneA));
  EXPECT_TRUE(matches(labelsTerm({{"rack", SelectorOperator::kDoesNotExist, {}}}), "n", zoneA));
  EXPECT_FALSE(matches(labelsTerm({{"gpu", SelectorOperator::kDoesNotExist, {}}}), "n", zoneA));
}

TEST(NodeSelector, GtLtCompareIntegers) {
  const Labels l{{"cores", "16"},  {"neg", "-5"},     {"word", "many"},
                 {"float", "1.5"}, {"padded", " 16"}, {"huge", "99999999999999999999"}};
  EXPECT_TRUE(matches(labelsTerm({{"cores", SelectorOperator::kGt, {"8"}}}), "n", l));
  EXPECT_FALSE(matches(labelsTerm({{"cores", SelectorOperator::kGt, {"16"}}}), "n", l));
  EXPECT_TRUE(matches(labelsTerm({{"cores", SelectorOperator::kLt, {"17"}}}), "n", l));
  EXPECT_FALSE(matches(labelsTerm({{"cores", SelectorOperator::kLt, {"16"}}}), "n", l));
  EXPECT_TRUE(matches(labelsTerm({{"neg", SelectorOperator::kLt, {"-4"}}}), "n", l));
  EXPECT_TRUE(matches(labelsTerm({{"cores", SelectorOperator::kGt, {"+15"}}}), "n", l));
  // Integers are compared as numbers, not strings ("16" < "9" as text).
  EXPECT_TRUE(matches(labelsTerm({{"cores", SelectorOperator::kGt, {"9"}}}), "n", l));
  // A label that is not an int64 satisfies neither operator; nor does an absent one.
  for (const char* key : {"word", "float", "padded", "huge", "absent"}) {
    EXPECT_FALSE(matches(labelsTerm({{key, SelectorOperator::kGt, {"0"}}}), "n", l)) << key;
    EXPECT_FALSE(matches(labelsTerm({{key, SelectorOperator::kLt, {"0"}}}), "n", l)) << key;
  }
}

TEST(NodeSelector, GtLtNeedExactlyOneIntegerValue) {
  const Labels l{{"cores", "16"}};
  for (const auto& values : std::vector<std::vector<std::string>>{
           {}, {"1", "2"}, {"eight"}, {"8.0"}, {""}, {"+-8"}, {"99999999999999999999"}}) {
    auto s = labelsTerm({{"cores", SelectorOperator::kGt, values}});
    EXPECT_FALSE(validate(s).ok()) << ::testing::PrintToString(values);
    EXPECT_FALSE(matches(s, "n", l)) << ::testing::PrintToString(values);
  }
  EXPECT_EQ(validate(labelsTerm({{"cores", SelectorOperator::kLt, {"x"}}})).message(),
            "nodeSelectorTerms[0].matchExpressions[0].values[0]: \"x\" is not an integer "
            "(operator Lt)");
  EXPECT_EQ(validate(labelsTerm({{"cores", SelectorOperator::kGt, {"1", "2"}}})).message(),
            "nodeSelectorTerms[0].matchExpressions[0].values: operator Gt needs exactly one value");
  EXPECT_TRUE(
      validate(labelsTerm({{"cores", SelectorOperator::kGt, {"-9223372036854775808"}}})).ok());
}

TEST(NodeSelector, ExpressionValidation) {
  EXPECT_EQ(validate(labelsTerm({{"zone", SelectorOperator::kIn, {}}})).message(),
            "nodeSelectorTerms[0].matchExpressions[0].values: must be non-empty for operator In");
  EXPECT_EQ(validate(labelsTerm({{"zone", SelectorOperator::kExists, {"a"}}})).message(),
            "nodeSelectorTerms[0].matchExpressions[0].values: must be empty for operator Exists");
  nlohmann::json equals = {
      {"nodeSelectorTerms",
       {{{"matchExpressions", {{{"key", "zone"}, {"operator", "Equals"}, {"values", {"a"}}}}}}}}};
  try {
    readNodeSelector(equals, "spec.nodeAffinity.required");
    ADD_FAILURE() << "Equals was read";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator: "
              "\"Equals\" is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt");
  }
  EXPECT_EQ(validate(labelsTerm({{"", SelectorOperator::kExists, {}}})).message(),
            "nodeSelectorTerms[0].matchExpressions[0].key: must not be empty");
  EXPECT_FALSE(matches(labelsTerm({{"zone", SelectorOperator::kNotIn, {}}}), "n", {}));
  EXPECT_FALSE(matches(labelsTerm({{"zone", SelectorOperator::kDoesNotExist, {"a"}}}), "n", {}));
}

TEST(NodeSelector, RequirementsInATermAreAndedTermsAreOred) {
  NodeSelector s{{
      NodeSelectorTerm{{{"zone", SelectorOperator::kIn, {"a"}}},
                       {{"metadata.name", SelectorOperator::kIn, {"n1"}}}},
      NodeSelectorTerm{
          {{"zone", SelectorOperator::kIn, {"b"}}, {"cores", SelectorOperator::kGt, {"8"}}}, {}},
  }};
  EXPECT_TRUE(matches(s, "n1", {{"zone", "a"}}));
  EXPECT_FALSE(matches(s, "n2", {{"zone", "a"}}));
  EXPECT_FALSE(matches(s, "n1", {{"zone", "c"}}));
  EXPECT_TRUE(matches(s, "n9", {{"zone", "b"}, {"cores", "16"}}));
  EXPECT_FALSE(matches(s, "n9", {{"zone", "b"}, {"cores", "4"}}));
}

TEST(NodeSelector, BadTermDoesNotSpoilAGoodOne) {
  NodeSelector s{{
      NodeSelectorTerm{{{"cores", SelectorOperator::kGt, {"lots"}}}, {}},
      NodeSelectorTerm{{{"zone", SelectorOperator::kIn, {"a"}}}, {}},
  }};
  EXPECT_EQ(validate(s).message(),
            "nodeSelectorTerms[0].matchExpressions[0].values[0]: \"lots\" is not an integer "
            "(operator Gt)");
  EXPECT_TRUE(matches(s, "n", {{"zone", "a"}, {"cores", "100"}}));
  EXPECT_FALSE(matches(s, "n", {{"zone", "b"}, {"cores", "100"}}));
}

}  // namespace
}  // namespace ker

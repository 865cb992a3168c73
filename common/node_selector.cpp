#include "common/node_selector.h"

#include <optional>

#include "common/label_selector.h"

namespace ker {

namespace {

constexpr const char* kNameField = "metadata.name";

// As the API validates node field selectors: only metadata.name, only In/NotIn, one value.
Status validateField(const NodeSelectorRequirement& r) {
  if (r.key != kNameField) {
    return Status::invalid("key: \"" + r.key + "\" is not a supported field (only metadata.name)");
  }
  if (r.op != SelectorOperator::kIn && r.op != SelectorOperator::kNotIn) {
    return Status::invalid(std::string("operator: \"") + toString(r.op) +
                           "\" is not one of In, NotIn for a field");
  }
  if (r.values.size() != 1) {
    return Status::invalid(std::string("values: operator ") + toString(r.op) +
                           " on a field needs exactly one value");
  }
  return {};
}

Status validateTerm(const NodeSelectorTerm& term) {
  for (size_t i = 0; i < term.matchExpressions.size(); ++i) {
    const auto& r = term.matchExpressions[i];
    if (Status s = validateRequirement(r.key, r.op, r.values, SelectorDialect::kNodes); !s.ok()) {
      return Status::invalid("matchExpressions[" + std::to_string(i) + "]." + s.message());
    }
  }
  for (size_t i = 0; i < term.matchFields.size(); ++i) {
    if (Status s = validateField(term.matchFields[i]); !s.ok()) {
      return Status::invalid("matchFields[" + std::to_string(i) + "]." + s.message());
    }
  }
  return {};
}

// r is valid (validateExpression returned OK).
bool expressionMatches(const NodeSelectorRequirement& r,
                       const std::map<std::string, std::string>& labels) {
  if (r.op != SelectorOperator::kGt && r.op != SelectorOperator::kLt) {
    return setRequirementHolds(r.key, r.op, r.values, labels);
  }
  auto it = labels.find(r.key);
  if (it == labels.end()) {
    return false;
  }
  auto have = parseSelectorInteger(it->second);
  if (!have) {
    return false;  // a label that is not an integer satisfies neither Gt nor Lt
  }
  const int64_t want = *parseSelectorInteger(r.values[0]);
  return r.op == SelectorOperator::kGt ? *have > want : *have < want;
}

bool termMatches(const NodeSelectorTerm& term, const std::string& nodeName,
                 const std::map<std::string, std::string>& labels) {
  for (const auto& r : term.matchExpressions) {
    if (!expressionMatches(r, labels)) {
      return false;
    }
  }
  for (const auto& r : term.matchFields) {
    if ((nodeName == r.values[0]) != (r.op == SelectorOperator::kIn)) {
      return false;
    }
  }
  return true;
}

}  // namespace

Status validate(const NodeSelector& selector) {
  for (size_t i = 0; i < selector.terms.size(); ++i) {
    if (Status s = validateTerm(selector.terms[i]); !s.ok()) {
      return Status::invalid("nodeSelectorTerms[" + std::to_string(i) + "]." + s.message());
    }
  }
  return {};
}

// Like the scheduler's node affinity: an empty term is skipped, and a term that does not parse
// matches nothing without stopping the other terms from matching.
bool matches(const NodeSelector& selector, const std::string& nodeName,
             const std::map<std::string, std::string>& nodeLabels) {
  return std::any_of(selector.terms.begin(), selector.terms.end(), [&](const NodeSelectorTerm& t) {
    if (t.matchExpressions.empty() && t.matchFields.empty()) {
      return false;
    }
    return validateTerm(t).ok() && termMatches(t, nodeName, nodeLabels);
  });
}

}  // namespace ker

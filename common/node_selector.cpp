#include "common/node_selector.h"

#include <charconv>
#include <optional>

#include "common/label_selector.h"

namespace ker {

namespace {

constexpr const char* kNameField = "metadata.name";

// Parses a base-10 int64 the way Go's strconv.ParseInt(s, 10, 64) does: an optional sign, digits
// only, nothing around them, no overflow.
std::optional<int64_t> parseInt64(const std::string& s) {
  const char* begin = s.data();
  const char* end = s.data() + s.size();
  if (begin != end && *begin == '+') {
    ++begin;
    if (begin != end && *begin == '-') {
      return std::nullopt;
    }
  }
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end || begin == end) {
    return std::nullopt;
  }
  return value;
}

Status validateExpression(const NodeSelectorRequirement& r) {
  if (r.key.empty()) {
    return Status::invalid("key: must not be empty");
  }
  const std::string op = toString(r.op);
  switch (r.op) {
    case SelectorOperator::kIn:
    case SelectorOperator::kNotIn:
      if (r.values.empty()) {
        return Status::invalid("values: must be non-empty for operator " + op);
      }
      break;
    case SelectorOperator::kExists:
    case SelectorOperator::kDoesNotExist:
      if (!r.values.empty()) {
        return Status::invalid("values: must be empty for operator " + op);
      }
      break;
    case SelectorOperator::kGe:
    case SelectorOperator::kLe:
      return Status::invalid("operator: " + op + " is not one of " +
                             operatorNames(SelectorDialect::kNodes));
    case SelectorOperator::kGt:
    case SelectorOperator::kLt:
      if (r.values.size() != 1) {
        return Status::invalid("values: operator " + op + " needs exactly one value");
      }
      if (!parseInt64(r.values[0])) {
        return Status::invalid("values[0]: \"" + r.values[0] + "\" is not an integer (operator " +
                               op + ")");
      }
      break;
  }
  return {};
}

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
    if (Status s = validateExpression(term.matchExpressions[i]); !s.ok()) {
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
  auto have = parseInt64(it->second);
  if (!have) {
    return false;  // a label that is not an integer satisfies neither Gt nor Lt
  }
  const int64_t want = *parseInt64(r.values[0]);
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

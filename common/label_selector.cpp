#include "common/label_selector.h"

#include <algorithm>
#include <charconv>

#include "common/quantity.h"

namespace ker {

namespace {

bool contains(const std::vector<std::string>& values, const std::string& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

std::string joined(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) {
    out += (out.empty() ? "" : ",") + v;
  }
  return out;
}

// Whether a property holds against a comparison requirement whose value parsed; a property
// that is absent or not a quantity satisfies no comparison.
bool comparisonHolds(const LabelSelectorRequirement& r,
                     const std::map<std::string, std::string>& labels) {
  auto it = labels.find(r.key);
  if (it == labels.end()) {
    return false;
  }
  auto have = Quantity::parse(it->second);
  if (!have) {
    return false;
  }
  const auto order = *have <=> *Quantity::parse(r.values[0]);
  switch (r.op) {
    case SelectorOperator::kGt:
      return order > 0;
    case SelectorOperator::kGe:
      return order >= 0;
    case SelectorOperator::kLt:
      return order < 0;
    case SelectorOperator::kLe:
      return order <= 0;
    default:
      return false;
  }
}

}  // namespace

Status validateRequirement(const std::string& key, SelectorOperator op,
                           const std::vector<std::string>& values, SelectorDialect dialect) {
  if (key.empty()) {
    return Status::invalid("key: must not be empty");
  }
  const std::string name = toString(op);
  if (!admits(dialect, op)) {
    return Status::invalid("operator: " + name + " is not one of " + operatorNames(dialect));
  }
  if (isComparison(op)) {
    if (values.size() != 1) {
      return Status::invalid("values: operator " + name + " needs exactly one value");
    }
    if (dialect == SelectorDialect::kNodes && !parseSelectorInteger(values[0])) {
      return Status::invalid("values[0]: \"" + values[0] + "\" is not an integer (operator " +
                             name + ")");
    }
    if (dialect != SelectorDialect::kNodes && !Quantity::parse(values[0])) {
      return Status::invalid("values[0]: \"" + values[0] + "\" is not a quantity (operator " +
                             name + "; e.g. 40Gi, 1.5, 500m)");
    }
    return {};
  }
  const bool wantsValues = op == SelectorOperator::kIn || op == SelectorOperator::kNotIn;
  if (wantsValues && values.empty()) {
    return Status::invalid("values: must be non-empty for operator " + name);
  }
  if (!wantsValues && !values.empty()) {
    return Status::invalid("values: must be empty for operator " + name);
  }
  return {};
}

std::optional<int64_t> parseSelectorInteger(const std::string& s) {
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

Status validate(const LabelSelector& selector) {
  for (const auto& [key, value] : selector.matchLabels) {
    if (key.empty()) {
      return Status::invalid("matchLabels: a key must not be empty");
    }
  }
  for (size_t i = 0; i < selector.matchExpressions.size(); ++i) {
    const auto& r = selector.matchExpressions[i];
    if (Status s = validateRequirement(r.key, r.op, r.values, selector.dialect); !s.ok()) {
      return Status::invalid("matchExpressions[" + std::to_string(i) + "]." + s.message());
    }
  }
  return {};
}

// An invalid selector matches nothing: the API server refuses to build a selector from it,
// and failing closed never hands out a device the claim did not ask for.
bool matches(const LabelSelector& selector, const std::map<std::string, std::string>& labels) {
  if (!validate(selector).ok()) {
    return false;
  }
  for (const auto& [key, value] : selector.matchLabels) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) {
      return false;
    }
  }
  return std::all_of(selector.matchExpressions.begin(), selector.matchExpressions.end(),
                     [&](const LabelSelectorRequirement& r) {
                       return isComparison(r.op)
                                  ? comparisonHolds(r, labels)
                                  : setRequirementHolds(r.key, r.op, r.values, labels);
                     });
}

bool setRequirementHolds(const std::string& key, SelectorOperator op,
                         const std::vector<std::string>& values,
                         const std::map<std::string, std::string>& labels) {
  auto it = labels.find(key);
  const bool present = it != labels.end();
  switch (op) {
    case SelectorOperator::kIn:
      return present && contains(values, it->second);
    case SelectorOperator::kNotIn:
      return !present || !contains(values, it->second);
    case SelectorOperator::kExists:
      return present;
    case SelectorOperator::kDoesNotExist:
      return !present;
    case SelectorOperator::kGt:
    case SelectorOperator::kGe:
    case SelectorOperator::kLt:
    case SelectorOperator::kLe:
      break;
  }
  return false;
}

std::optional<std::string> unparsedComparison(const LabelSelector& selector,
                                              const std::map<std::string, std::string>& labels) {
  for (const auto& r : selector.matchExpressions) {
    if (!isComparison(r.op)) {
      continue;
    }
    auto it = labels.find(r.key);
    if (it != labels.end() && !Quantity::parse(it->second)) {
      return r.key + " \"" + it->second + "\" is not a quantity";
    }
  }
  return std::nullopt;
}

std::string describe(const LabelSelector& selector) {
  std::vector<std::string> parts;
  for (const auto& [key, value] : selector.matchLabels) {
    parts.push_back(key + "=" + value);
  }
  for (const auto& r : selector.matchExpressions) {
    switch (r.op) {
      case SelectorOperator::kIn:
        parts.push_back(r.key + " in (" + joined(r.values) + ")");
        break;
      case SelectorOperator::kNotIn:
        parts.push_back(r.key + " notin (" + joined(r.values) + ")");
        break;
      case SelectorOperator::kExists:
        parts.push_back(r.key);
        break;
      case SelectorOperator::kDoesNotExist:
        parts.push_back("!" + r.key);
        break;
      case SelectorOperator::kGt:
        parts.push_back(r.key + ">" + joined(r.values));
        break;
      case SelectorOperator::kGe:
        parts.push_back(r.key + ">=" + joined(r.values));
        break;
      case SelectorOperator::kLt:
        parts.push_back(r.key + "<" + joined(r.values));
        break;
      case SelectorOperator::kLe:
        parts.push_back(r.key + "<=" + joined(r.values));
        break;
    }
  }
  return joined(parts);
}

}  // namespace ker

#include "common/label_selector.h"

#include <algorithm>

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

Status validateRequirement(const LabelSelectorRequirement& r) {
  if (r.key.empty()) {
    return Status::invalid("key: must not be empty");
  }
  switch (r.op) {
    case SelectorOperator::kIn:
    case SelectorOperator::kNotIn:
      if (r.values.empty()) {
        return Status::invalid(std::string("values: must be non-empty for operator ") +
                               toString(r.op));
      }
      return {};
    case SelectorOperator::kExists:
    case SelectorOperator::kDoesNotExist:
      if (!r.values.empty()) {
        return Status::invalid(std::string("values: must be empty for operator ") + toString(r.op));
      }
      return {};
    case SelectorOperator::kGt:
    case SelectorOperator::kLt:
      break;
  }
  return Status::invalid(std::string("operator: ") + toString(r.op) +
                         " is not one of In, NotIn, Exists, DoesNotExist");
}

}  // namespace

Status validate(const LabelSelector& selector) {
  for (const auto& [key, value] : selector.matchLabels) {
    if (key.empty()) {
      return Status::invalid("matchLabels: a key must not be empty");
    }
  }
  for (size_t i = 0; i < selector.matchExpressions.size(); ++i) {
    if (Status s = validateRequirement(selector.matchExpressions[i]); !s.ok()) {
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
                       return setRequirementHolds(r.key, r.op, r.values, labels);
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
    case SelectorOperator::kLt:
      break;
  }
  return false;
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
      case SelectorOperator::kLt:
        parts.push_back(r.key + " " + toString(r.op) + " (" + joined(r.values) + ")");
        break;
    }
  }
  return joined(parts);
}

}  // namespace ker

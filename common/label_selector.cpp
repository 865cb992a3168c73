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
  if (r.op == "In" || r.op == "NotIn") {
    if (r.values.empty()) {
      return Status::invalid("values: must be non-empty for operator " + r.op);
    }
  } else if (r.op == "Exists" || r.op == "DoesNotExist") {
    if (!r.values.empty()) {
      return Status::invalid("values: must be empty for operator " + r.op);
    }
  } else {
    return Status::invalid("operator: \"" + r.op +
                           "\" is not one of In, NotIn, Exists, DoesNotExist");
  }
  return {};
}

bool requirementMatches(const LabelSelectorRequirement& r,
                        const std::map<std::string, std::string>& labels) {
  auto it = labels.find(r.key);
  const bool present = it != labels.end();
  if (r.op == "In") {
    return present && contains(r.values, it->second);
  }
  if (r.op == "NotIn") {
    return !present || !contains(r.values, it->second);
  }
  if (r.op == "Exists") {
    return present;
  }
  return !present;  // DoesNotExist; validate() has rejected every other operator
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
  return std::all_of(
      selector.matchExpressions.begin(), selector.matchExpressions.end(),
      [&](const LabelSelectorRequirement& r) { return requirementMatches(r, labels); });
}

std::string describe(const LabelSelector& selector) {
  std::vector<std::string> parts;
  for (const auto& [key, value] : selector.matchLabels) {
    parts.push_back(key + "=" + value);
  }
  for (const auto& r : selector.matchExpressions) {
    if (r.op == "In") {
      parts.push_back(r.key + " in (" + joined(r.values) + ")");
    } else if (r.op == "NotIn") {
      parts.push_back(r.key + " notin (" + joined(r.values) + ")");
    } else if (r.op == "Exists") {
      parts.push_back(r.key);
    } else if (r.op == "DoesNotExist") {
      parts.push_back("!" + r.key);
    } else {
      parts.push_back(r.key + " " + r.op + " (" + joined(r.values) + ")");
    }
  }
  return joined(parts);
}

}  // namespace ker

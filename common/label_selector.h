#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/kube_objects.h"
#include "common/status.h"

namespace ker {

// Evaluates a metav1.LabelSelector against a label set, with the API's semantics: matchLabels
// and matchExpressions ANDed; an empty selector matches everything. A selector that fails
// validate() matches nothing.
bool matches(const LabelSelector& selector, const std::map<std::string, std::string>& labels);

// OK when the selector is valid, else kInvalid saying why not (an empty key, Gt or Lt, values
// given to Exists/DoesNotExist, no values for In/NotIn).
Status validate(const LabelSelector& selector);

// Whether `labels` satisfy one set-based requirement on `key` (In, NotIn, Exists, DoesNotExist,
// with valid values): the rule label and node selectors share. Gt and Lt, node selectors' own,
// are false here.
bool setRequirementHolds(const std::string& key, SelectorOperator op,
                         const std::vector<std::string>& values,
                         const std::map<std::string, std::string>& labels);

// A short human-readable form, e.g. "type=k80,zone in (a,b)", for messages and events.
std::string describe(const LabelSelector& selector);

}  // namespace ker

#pragma once

#include <map>
#include <string>

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

// A short human-readable form, e.g. "type=k80,zone in (a,b)", for messages and events.
std::string describe(const LabelSelector& selector);

}  // namespace ker

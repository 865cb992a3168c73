#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/kube_objects.h"
#include "common/status.h"

namespace ker {

// Evaluates a selector against a label set (or a device's properties), with the API's semantics:
// matchLabels and matchExpressions ANDed; an empty selector matches everything. A selector that
// fails validate() matches nothing. A comparison (Gt, Ge, Lt, Le) holds when the value is a
// quantity that compares so with the requirement's: 40Gi >= 40Gi, 48Gi > 40Gi; an absent value
// or one that is not a quantity satisfies no comparison.
bool matches(const LabelSelector& selector, const std::map<std::string, std::string>& labels);

// OK when the selector is valid, else kInvalid saying why not (an empty key, an operator its
// dialect does not admit, values given to Exists/DoesNotExist, no values for In/NotIn, a
// comparison without exactly one value that is a quantity).
Status validate(const LabelSelector& selector);

// The one rule for a requirement's shape, whichever selector holds it: a key; an operator its
// dialect admits; values for In and NotIn and none for Exists and DoesNotExist; for a
// comparison exactly one value that reads as the dialect compares (a quantity for device
// properties, an integer for node labels). The message names the field: "key: …", "values: …".
Status validateRequirement(const std::string& key, SelectorOperator op,
                           const std::vector<std::string>& values, SelectorDialect dialect);

// A node selector's Gt or Lt value, as Go's strconv.ParseInt(s, 10, 64) reads it: an optional
// sign, digits only, nothing around them, no overflow.
std::optional<int64_t> parseSelectorInteger(const std::string& s);

// Whether `labels` satisfy one set-based requirement on `key` (In, NotIn, Exists, DoesNotExist,
// with valid values): the rule label and node selectors share. Comparisons, whose meaning is
// each dialect's own, are false here.
bool setRequirementHolds(const std::string& key, SelectorOperator op,
                         const std::vector<std::string>& values,
                         const std::map<std::string, std::string>& labels);

// Why the labels fail a comparison for want of a quantity, e.g. `memory "lots" is not a
// quantity`, naming the first such requirement; nullopt when none does.
std::optional<std::string> unparsedComparison(const LabelSelector& selector,
                                              const std::map<std::string, std::string>& labels);

// A short human-readable form, e.g. "type=k80,zone in (a,b),memory>=40Gi", for messages and
// events.
std::string describe(const LabelSelector& selector);

}  // namespace ker

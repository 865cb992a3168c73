#pragma once

#include <map>
#include <string>

#include "common/kube_objects.h"
#include "common/status.h"

namespace ker {

// Evaluates a core/v1 NodeSelector against a node's name and labels: terms ORed, requirements
// within a term ANDed, an empty term list matches nothing, a term with no requirements matches
// nothing. matchFields supports metadata.name (In/NotIn), as the API does. Gt/Lt parse both
// sides as integers; a non-integer never matches. A term that fails validate() matches nothing
// (other terms still can), as in the scheduler's node affinity.
bool matches(const NodeSelector& selector, const std::string& nodeName,
             const std::map<std::string, std::string>& nodeLabels);

// OK when valid, else kInvalid with the first problem and its path (nodeSelectorTerms[i]...):
// value counts, non-integer Gt/Lt values, and matchFields other than
// metadata.name In/NotIn with exactly one value.
Status validate(const NodeSelector& selector);

}  // namespace ker

#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ker {

// The items of a comma-separated list (flags, annotations): "a, b,,c " -> {"a", "b", "c"},
// each trimmed of spaces, tabs and line ends, empty ones dropped, order and repeats kept.
std::vector<std::string> splitCommaList(std::string_view list);

// The inverse: the items joined with "," (no spaces).
std::string joinCommaList(const std::vector<std::string>& items);

// Names joined with ", ", for messages people read.
std::string joinNames(const std::vector<std::string>& names);

}  // namespace ker

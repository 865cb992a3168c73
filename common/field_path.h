#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

// Paths of fields in parse errors ("spec.devices[2].path: expected a string"), shared by the
// parsers of API objects and of the node agent's file.
namespace ker {

// path.key, or key at the top.
inline std::string childPath(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// path[i].
inline std::string indexPath(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

// Throws std::invalid_argument "path: why".
[[noreturn]] inline void failAt(const std::string& path, const std::string& why) {
  throw std::invalid_argument(path + ": " + why);
}

}  // namespace ker

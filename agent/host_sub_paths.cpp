#include "agent/host_sub_paths.h"

namespace ker::agent {

namespace {

using json = nlohmann::json;

std::string stringAt(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::map<std::string, std::vector<std::string>> readHostSubPaths(const json& podSpec) {
  std::map<std::string, std::vector<std::string>> out;
  if (!podSpec.is_object()) {
    return out;
  }
  std::map<std::string, std::string> hostPaths;  // volume name -> its hostPath.path
  if (auto volumes = podSpec.find("volumes"); volumes != podSpec.end() && volumes->is_array()) {
    for (const auto& v : *volumes) {
      if (!v.is_object()) {
        continue;
      }
      auto hostPath = v.find("hostPath");
      if (hostPath != v.end() && hostPath->is_object() && !stringAt(*hostPath, "path").empty()) {
        hostPaths[stringAt(v, "name")] = stringAt(*hostPath, "path");
      }
    }
  }
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
    auto containers = podSpec.find(list);
    if (containers == podSpec.end() || !containers->is_array()) {
      continue;
    }
    for (const auto& c : *containers) {
      auto mounts = c.is_object() ? c.find("volumeMounts") : c.end();
      if (!c.is_object() || mounts == c.end() || !mounts->is_array()) {
        continue;
      }
      for (const auto& m : *mounts) {
        if (!m.is_object()) {
          continue;
        }
        auto volume = hostPaths.find(stringAt(m, "name"));
        const std::string subPath = stringAt(m, "subPath");
        const bool expr = !stringAt(m, "subPathExpr").empty();
        if (volume == hostPaths.end() || (subPath.empty() && !expr)) {
          continue;
        }
        std::string path = volume->second;
        while (path.size() > 1 && path.back() == '/') {
          path.pop_back();
        }
        if (!expr) {
          path = (path == "/" ? "" : path) + "/" + subPath;
        }
        out[stringAt(c, "name")].push_back(path);
      }
    }
  }
  return out;
}

}  // namespace ker::agent

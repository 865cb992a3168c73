#include "agent/spec_env_names.h"

namespace ker::agent {

std::map<std::string, std::vector<std::string>> readSpecEnvNames(const nlohmann::json& podSpec) {
  std::map<std::string, std::vector<std::string>> out;
  if (!podSpec.is_object()) {
    return out;
  }
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
    auto containers = podSpec.find(list);
    if (containers == podSpec.end() || !containers->is_array()) {
      continue;
    }
    for (const auto& c : *containers) {
      if (!c.is_object()) {
        continue;
      }
      auto name = c.find("name");
      auto env = c.find("env");
      if (name == c.end() || !name->is_string() || env == c.end() || !env->is_array()) {
        continue;
      }
      auto& names = out[name->get<std::string>()];
      for (const auto& e : *env) {
        auto n = e.is_object() ? e.find("name") : e.end();
        if (e.is_object() && n != e.end() && n->is_string()) {
          names.push_back(n->get<std::string>());
        }
      }
    }
  }
  return out;
}

}  // namespace ker::agent

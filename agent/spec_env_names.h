#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ker::agent {

// The variables each container of a pod spec sets in its `env` list, by container name (init,
// app and ephemeral containers): what the user wrote, as against what the container's image
// sets, which the runtime passes on mixed with these. Entries of the wrong shape are skipped.
std::map<std::string, std::vector<std::string>> readSpecEnvNames(const nlohmann::json& podSpec);

}  // namespace ker::agent

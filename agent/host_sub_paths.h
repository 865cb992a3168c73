#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ker::agent {

// The host paths a pod's containers reach through subPath mounts of hostPath volumes, by
// container name (init, app and ephemeral containers alike). The runtime is handed the kubelet's
// bind mount of such a path (under its volume-subpaths folder), not the path, so what it reaches
// is read from the spec: the volume's path joined with the subPath. A subPathExpr is expanded by
// the kubelet from the container's environment; its mount counts as the volume's whole path.
// Read leniently: what is of the wrong shape is skipped (the API server validated the pod).
std::map<std::string, std::vector<std::string>> readHostSubPaths(const nlohmann::json& podSpec);

}  // namespace ker::agent

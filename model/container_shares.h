#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// How a pod's containers ask for an extended resource in their resources (`nvidia.com/gpu: 2`),
// and which of a claim's devices each of them gets. The one home of Kubernetes' rule for how a
// pod's init, sidecar and app containers' requests add up.
namespace ker {

enum class ContainerKind {
  kInit,     // a regular init container: runs alone, before the sidecars after it start
  kSidecar,  // an init container with restartPolicy Always: runs beside the app containers
  kApp,      // spec.containers
};
const char* toString(ContainerKind kind);  // "Init", "Sidecar", "App"
std::optional<ContainerKind> parseContainerKind(std::string_view text);

// One container's request for one extended resource.
struct ContainerShare {
  std::string name;
  int64_t count = 0;
  ContainerKind kind = ContainerKind::kApp;
  bool operator==(const ContainerShare&) const = default;
};

// The pod's requests, by extended resource name: the containers asking for it (count > 0), in
// the pod's order (init containers first).
using ExtendedRequests = std::map<std::string, std::vector<ContainerShare>>;

// An extended resource name as Kubernetes defines one: domain-prefixed ("nvidia.com/gpu"), not
// in the kubernetes.io domain, not a quota's "requests." name.
bool isExtendedResourceName(std::string_view name);

// The extended resources a pod spec's containers ask for: each container's limit (or its
// request, when it sets no limit), a whole number (one that is not, or is above 2^30, reads as
// 2^30). Throws std::invalid_argument naming the field when a container or its resources are of
// the wrong shape.
ExtendedRequests readExtendedRequests(const nlohmann::json& podSpec);

// How many devices the pod needs for these shares, as Kubernetes sums a pod's requests: the
// sidecars and app containers run together and need theirs at once; a regular init container
// runs alone beside the sidecars declared before it. So the larger of (sidecars + apps) and,
// for each init container, (the sidecars before it + its own).
int64_t devicesNeeded(const std::vector<ContainerShare>& shares);

// Which of `devices` (a claim's allocation, in its order; devicesNeeded(shares) of them) each
// container gets: sidecars and app containers disjoint slices in declaration order, sidecars
// first; a regular init container the devices that follow those of the sidecars before it, which
// it uses before the app containers start. Containers without a share get none. Returns
// container name -> devices; a container whose slice runs past `devices` gets what there is.
std::map<std::string, std::vector<std::string>> shareDevices(
    const std::vector<ContainerShare>& shares, const std::vector<std::string>& devices);

}  // namespace ker

#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/api_client.h"
#include "common/informer.h"
#include "common/status.h"
#include "model/objects.h"
#include "model/typed_client.h"

namespace ker::agent {

// A pod as the node agent reads it: the model's Pod, and what only the agent's guard needs.
struct NodePod : Pod {
  // The host paths its containers reach through subPath mounts of hostPath volumes
  // (readHostSubPaths), by container name.
  std::map<std::string, std::vector<std::string>> hostSubPaths;
  // The variables each container's spec sets (readSpecEnvNames), by container name.
  std::map<std::string, std::vector<std::string>> specEnvNames;

  static NodePod fromJson(const nlohmann::json& obj);
};

}  // namespace ker::agent

namespace ker {
template <>
inline const Resource& resourceOf<agent::NodePod>() {
  return resources::kPods;
}
}  // namespace ker

namespace ker::agent {

// Where the agent reads a pod's spec when one of its containers is created: the runtime passes
// on the pod's identity and annotations, not the resources its containers ask for.
class PodSource {
 public:
  struct Result {
    std::shared_ptr<const NodePod> pod;  // nullptr: no pod of that UID exists
    Status status;                       // not OK when it could not be read
  };
  virtual ~PodSource() = default;
  // The pod ns/name whose UID is podUid.
  virtual Result get(const std::string& ns, const std::string& name, const std::string& podUid) = 0;
};

// The watch cache of the pods bound to this node, with a live read when it lacks the pod or
// has another one of that name (the bind wrote it a moment ago, or it was created again).
class CachedPodSource : public PodSource {
 public:
  // cache: pods with spec.nodeName = this node. live: the client for reads made while the
  // runtime waits; the caller's RequestDeadline bounds them.
  CachedPodSource(const Informer<NodePod>& cache, ApiClient& live) : cache_(cache), live_(live) {}
  Result get(const std::string& ns, const std::string& name, const std::string& podUid) override;
  uint64_t liveReads() const { return liveReads_.load(); }

 private:
  const Informer<NodePod>& cache_;
  ApiClient& live_;
  std::atomic<uint64_t> liveReads_{0};
};

}  // namespace ker::agent

#include "agent/pod_source.h"

#include <utility>

#include "agent/host_sub_paths.h"
#include "agent/live_read.h"
#include "agent/spec_env_names.h"
#include "common/resource.h"

namespace ker::agent {

NodePod NodePod::fromJson(const nlohmann::json& obj) {
  NodePod out;
  static_cast<Pod&>(out) = Pod::fromJson(obj);
  if (auto spec = obj.find("spec"); obj.is_object() && spec != obj.end() && spec->is_object()) {
    out.hostSubPaths = readHostSubPaths(*spec);
    out.specEnvNames = readSpecEnvNames(*spec);
  }
  return out;
}

PodSource::Result CachedPodSource::get(const std::string& ns, const std::string& name,
                                       const std::string& podUid) {
  if (auto cached = cache_.get(objectKey(ns, name)); cached && cached->meta.uid == podUid) {
    return {cached, {}};
  }
  liveReads_.fetch_add(1);
  auto [pod, status] = readLive<NodePod>([&] { return readObject<NodePod>(live_, ns, name); });
  if (pod && pod->meta.uid != podUid) {
    return {nullptr, {}};  // deleted and created again: this container's pod is gone
  }
  return {std::move(pod), std::move(status)};
}

}  // namespace ker::agent

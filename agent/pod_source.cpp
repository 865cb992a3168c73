#include "agent/pod_source.h"

#include <utility>

#include "agent/live_read.h"
#include "common/resource.h"

namespace ker::agent {

PodSource::Result CachedPodSource::get(const std::string& ns, const std::string& name,
                                       const std::string& podUid) {
  if (auto cached = cache_.get(objectKey(ns, name)); cached && cached->meta.uid == podUid) {
    return {cached, {}};
  }
  liveReads_.fetch_add(1);
  auto [pod, status] =
      readLive<Pod>([&] { return Pod::fromJson(live_.get(resources::kPods, ns, name)); });
  if (pod && pod->meta.uid != podUid) {
    return {nullptr, {}};  // deleted and created again: this container's pod is gone
  }
  return {std::move(pod), std::move(status)};
}

}  // namespace ker::agent

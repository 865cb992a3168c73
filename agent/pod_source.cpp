#include "agent/pod_source.h"

#include <utility>

#include "common/resource.h"

namespace ker::agent {

PodSource::Result CachedPodSource::get(const std::string& ns, const std::string& name,
                                       const std::string& podUid) {
  if (auto cached = cache_.get(objectKey(ns, name)); cached && cached->meta.uid == podUid) {
    return {cached, {}};
  }
  liveReads_.fetch_add(1);
  try {
    auto pod = std::make_shared<const Pod>(Pod::fromJson(live_.get(resources::kPods, ns, name)));
    if (pod->meta.uid != podUid) {
      return {nullptr, {}};  // deleted and created again: this container's pod is gone
    }
    return {std::move(pod), {}};
  } catch (const std::exception& e) {
    // As for claims: a container is refused by a decision on what could not be read, never by
    // an exception.
    Status read = statusFrom(e);
    if (read.isNotFound()) {
      return {nullptr, {}};
    }
    return {nullptr, std::move(read)};
  }
}

}  // namespace ker::agent

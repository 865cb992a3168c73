#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/api_client.h"

namespace ker::bench {

inline constexpr const char* kResource = "example.com/gpu";
inline constexpr int kDevicesPerNode = 8;

std::string nodeName(size_t i);
std::string deviceName(size_t node, int device);

// A Node as a kubelet on a GPU machine reports it: labels, annotations, capacity and
// allocatable, conditions with heartbeats, addresses, nodeInfo and ~50 images.
nlohmann::json kubeletNode(size_t i);
// Device `d` of node `i`, pinned to it by matchFields metadata.name. Every tenth node holds
// p100s only; the others four k80s and four p100s, so a k80 claim fails on 10% of nodes.
nlohmann::json device(size_t node, int d);
// A claim for `count` devices; `type` empty: k80 or p100 (matchExpressions In), else that
// type (matchLabels).
nlohmann::json claim(const std::string& ns, const std::string& name, int count,
                     const std::string& type);
nlohmann::json pod(const std::string& ns, const std::string& name,
                   const std::vector<std::string>& claims);
nlohmann::json namespaceObject(const std::string& name);

struct CreateStats {
  size_t created = 0;
  size_t existed = 0;  // 409 AlreadyExists: left by an earlier stage
  double seconds = 0;
  double perSecond() const {
    return seconds > 0 ? static_cast<double>(created + existed) / seconds : 0;
  }
};

// Creates make(0..count-1) through the API from `workers` threads at once. Throws on the
// first error other than AlreadyExists.
CreateStats createAll(ApiClient& api, const Resource& res, const std::string& ns, size_t from,
                      size_t to, const std::function<nlohmann::json(size_t)>& make, int workers);

// Runs fn(i) for i in [0, count) from `workers` threads; rethrows the first failure.
void parallelFor(size_t count, int workers, const std::function<void(size_t)>& fn);

}  // namespace ker::bench

#pragma once

#include <string>

#include "common/api_client.h"
#include "common/clocks.h"
#include "common/kube_objects.h"
#include "common/resource.h"
#include "common/status.h"
#include "model/objects.h"

// The API client for typed objects: the one place each kind is paired with the resource it is
// stored under and with its conversions, so a caller reads a Pod or writes a device's status
// without naming either. Failures come back as a Status (callApi), as everywhere past the client.
namespace ker {

// The resource a typed kind is stored under.
template <class T>
const Resource& resourceOf();
template <>
inline const Resource& resourceOf<ExtendedResource>() {
  return resources::kExtendedResources;
}
template <>
inline const Resource& resourceOf<ExtendedResourceClaim>() {
  return resources::kExtendedResourceClaims;
}
template <>
inline const Resource& resourceOf<ExtendedResourceClaimTemplate>() {
  return resources::kExtendedResourceClaimTemplates;
}
template <>
inline const Resource& resourceOf<Pod>() {
  return resources::kPods;
}
template <>
inline const Resource& resourceOf<Node>() {
  return resources::kNodes;
}

// GET of one object, parsed; throws the client's ApiError, for a caller inside a retry or
// not-found wrapper of the client's kind (withRetries, unlessNotFound). `ns` is ignored for a
// cluster-scoped kind.
template <class T>
T readObject(ApiClient& api, const std::string& ns, const std::string& name) {
  return T::fromJson(api.get(resourceOf<T>(), ns, name));
}

// GET of one object into `out` (untouched on failure), the failure as a Status.
template <class T>
Status getObject(ApiClient& api, const std::string& ns, const std::string& name, T& out) {
  return callApi([&] { out = readObject<T>(api, ns, name); });
}
// The same for a cluster-scoped kind.
template <class T>
Status getObject(ApiClient& api, const std::string& name, T& out) {
  return getObject(api, std::string(), name, out);
}

// Writes `next`'s status (its typed status over the object as read, its conditions derived at
// `now`), guarded by the resourceVersion it was read at, and puts the object as the API server
// stored it in `written` when given (untouched on failure).
template <class T>
Status writeStatus(ApiClient& api, const T& next, SystemTime now, T* written = nullptr) {
  return callApi([&] {
    nlohmann::json stored = api.updateStatus(resourceOf<T>(), next.meta.ns, next.toJson(now));
    if (written != nullptr) {
      *written = T::fromJson(stored);
    }
  });
}

}  // namespace ker

#include "scheduler/claim_lookup.h"

#include <memory>
#include <utility>

#include "common/api_error.h"
#include "common/resource.h"

namespace ker {

ClaimPtr liveClaim(ApiClient& api, const std::string& key) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos) {
    return nullptr;  // claims are namespaced: a key without one names none
  }
  try {
    return std::make_shared<const ExtendedResourceClaim>(ExtendedResourceClaim::fromJson(
        api.get(resources::kExtendedResourceClaims, key.substr(0, slash), key.substr(slash + 1))));
  } catch (const ApiError& e) {
    if (e.isNotFound()) {
      return nullptr;
    }
    throw;
  }
}

ClaimLookup cacheThenLive(ClaimLookup cached, ApiClient& api) {
  return [cached = std::move(cached), &api](const std::string& key) -> ClaimPtr {
    if (ClaimPtr claim = cached(key)) {
      return claim;
    }
    return liveClaim(api, key);
  };
}

}  // namespace ker

#include "scheduler/fit/claim_lookup.h"

#include <memory>
#include <utility>

#include "common/resource.h"
#include "common/status.h"
#include "model/objects.h"
#include "model/typed_client.h"

namespace ker {

ClaimPtr liveClaim(ApiClient& api, const std::string& key) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos) {
    return nullptr;  // claims are namespaced: a key without one names none
  }
  ClaimPtr claim;
  unlessNotFound([&] {
    claim = std::make_shared<const ExtendedResourceClaim>(
        readObject<ExtendedResourceClaim>(api, key.substr(0, slash), key.substr(slash + 1)));
  });
  return claim;
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

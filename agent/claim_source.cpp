#include "agent/claim_source.h"

#include "common/api_error.h"
#include "common/resource.h"

namespace ker::agent {

ClaimSource::Result CachedClaimSource::get(const std::string& ns, const std::string& name,
                                           const std::string& podUid) {
  auto cached = cache_.get(objectKey(ns, name));
  if (cached && cached->phase == ClaimPhase::kBound && cached->heldBy(podUid)) {
    return {cached, {}};
  }
  liveReads_.fetch_add(1);
  try {
    auto obj = live_.get(resources::kExtendedResourceClaims, ns, name);
    return {std::make_shared<const ExtendedResourceClaim>(ExtendedResourceClaim::fromJson(obj)),
            {}};
  } catch (const ApiError& e) {
    if (e.isNotFound()) {
      return {nullptr, {}};
    }
    return {nullptr, e.what()};
  } catch (const std::exception& e) {
    return {nullptr, e.what()};
  }
}

}  // namespace ker::agent

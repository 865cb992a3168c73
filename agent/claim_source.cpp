#include "agent/claim_source.h"

#include <utility>

#include "common/resource.h"
#include "model/objects.h"

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
  } catch (const std::exception& e) {
    // The injection's boundary: a container is never refused by an exception, only by a
    // decision on what could and could not be read.
    Status read = statusFrom(e);
    if (read.isNotFound()) {
      return {nullptr, {}};
    }
    return {nullptr, std::move(read)};
  }
}

}  // namespace ker::agent

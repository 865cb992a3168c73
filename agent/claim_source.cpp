#include "agent/claim_source.h"

#include <utility>

#include "agent/live_read.h"
#include "common/resource.h"
#include "model/objects.h"
#include "model/typed_client.h"

namespace ker::agent {

ClaimSource::Result CachedClaimSource::get(const std::string& ns, const std::string& name,
                                           const std::string& podUid) {
  auto cached = cache_.get(objectKey(ns, name));
  if (cached && cached->phase == ClaimPhase::kBound && cached->heldBy(podUid)) {
    return {cached, {}};
  }
  liveReads_.fetch_add(1);
  auto [claim, status] = readLive<ExtendedResourceClaim>(
      [&] { return readObject<ExtendedResourceClaim>(live_, ns, name); });
  return {std::move(claim), std::move(status)};
}

}  // namespace ker::agent

#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "common/api_client.h"
#include "common/informer.h"
#include "common/status.h"
#include "model/objects.h"

namespace ker::agent {

// Where the agent reads claims when a container is created.
class ClaimSource {
 public:
  struct Result {
    std::shared_ptr<const ExtendedResourceClaim> claim;  // nullptr: it does not exist
    Status status;                                       // not OK when it could not be read
  };
  virtual ~ClaimSource() = default;
  // The claim ns/name, as current as needed to tell whether it is Bound to pod podUid.
  virtual Result get(const std::string& ns, const std::string& name, const std::string& podUid) = 0;
};

// The watch cache of the claims bound on this node, with a live read for the one case the
// cache can lag in: a claim it does not show Bound to the pod (the bind wrote it a moment
// ago). A claim the cache shows Bound to the pod is trusted: only a release takes it away,
// and a release waits for the pod to be gone.
class CachedClaimSource : public ClaimSource {
 public:
  // cache: claims with status.nodeName = this node. live: the client for reads made while the
  // runtime waits; the caller's RequestDeadline bounds them.
  CachedClaimSource(const Informer<ExtendedResourceClaim>& cache, ApiClient& live)
      : cache_(cache), live_(live) {}
  Result get(const std::string& ns, const std::string& name, const std::string& podUid) override;
  uint64_t liveReads() const { return liveReads_.load(); }

 private:
  const Informer<ExtendedResourceClaim>& cache_;
  ApiClient& live_;
  std::atomic<uint64_t> liveReads_{0};
};

}  // namespace ker::agent

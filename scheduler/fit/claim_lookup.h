#pragma once

#include <string>

#include "common/api_client.h"
#include "scheduler/fit/planner.h"

namespace ker {

// The claim under key ("namespace/name") as the API server has it now; null when it does not
// exist. Other API errors are thrown.
ClaimPtr liveClaim(ApiClient& api, const std::string& key);

// Claims for filter and prioritize: from the cache, or read from the API when the cache does
// not have them. A claim created just before its pod, or asked for before the cache has
// synced, is then judged as it is rather than as missing, which would park the pod as
// unschedulable until some unrelated event.
ClaimLookup cacheThenLive(ClaimLookup cached, ApiClient& api);

}  // namespace ker

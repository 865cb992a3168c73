#pragma once

#include <nlohmann/json.hpp>
#include <vector>

namespace ker::bench {

// The bind stage of several runs (at least one), as benchBind reports each: every batch's
// latencies, rates and requests per bind are the medians over the runs, its binds and failures
// the totals, its first error the first any run saw, and the extender's peak memory the highest.
nlohmann::ordered_json medianBind(const std::vector<nlohmann::ordered_json>& runs);

// The controller stage of several runs (at least one): the run with the median release time,
// whole, so its request counts and CPU times belong to that time; the first run that did not
// finish instead, since a median would hide it. Every run's release and delete times are added.
nlohmann::ordered_json medianController(const std::vector<nlohmann::ordered_json>& runs);

}  // namespace ker::bench

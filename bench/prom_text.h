#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ker::bench {

// One series of a metric in Prometheus text exposition: its labels and value.
struct Sample {
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Every series named exactly `name` (no _bucket/_sum/_count suffix matching), in text order.
// Comment lines, malformed lines and other metrics are skipped.
std::vector<Sample> samplesOf(std::string_view text, std::string_view name);

// The sum of the series of `name` whose labels hold every pair of `match`; 0 when none.
double sumOf(std::string_view text, std::string_view name,
             const std::map<std::string, std::string>& match = {});

// How much each series of the counter `name` grew from `before` to `after`, summed by the
// values of `keyLabels` joined with " " (a missing label counts as ""), leaving out keys that
// did not grow. A series missing from `before` counts from 0.
std::map<std::string, double> counterGrowth(std::string_view before, std::string_view after,
                                            std::string_view name,
                                            const std::vector<std::string>& keyLabels);

}  // namespace ker::bench

#include "bench/run_summary.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>

#include "bench/http_load.h"

namespace ker::bench {

using ojson = nlohmann::ordered_json;

ojson medianBind(const std::vector<ojson>& runs) {
  static constexpr const char* kMedians[] = {"p50_ms",
                                             "p99_ms",
                                             "rps",
                                             "api_writes_per_bind_metric",
                                             "api_reads_per_bind_audit",
                                             "api_writes_per_bind_audit"};
  ojson out = runs.front();
  out["runs"] = runs.size();
  for (size_t b = 0; b < out["batches"].size(); ++b) {
    auto& row = out["batches"][b];
    std::map<std::string, std::vector<double>> values;
    size_t binds = 0;
    size_t failed = 0;
    for (const auto& r : runs) {
      const auto& batch = r["batches"][b];
      for (const char* key : kMedians) {
        values[key].push_back(batch[key].get<double>());
      }
      binds += batch["binds"].get<size_t>();
      failed += batch["failed"].get<size_t>();
      if (!row.contains("first_error") && batch.contains("first_error")) {
        row["first_error"] = batch["first_error"];
      }
    }
    for (const char* key : kMedians) {
      row[key] = median(values[key]);
    }
    row["binds"] = binds;
    row["failed"] = failed;
  }
  double peak = 0;
  for (const auto& r : runs) {
    peak = std::max(peak, r["extender_memory"]["peak_mb"].get<double>());
  }
  out["extender_memory"]["peak_mb"] = peak;
  return out;
}

ojson medianController(const std::vector<ojson>& runs) {
  ojson releases = ojson::array();
  ojson deletes = ojson::array();
  for (const auto& r : runs) {
    releases.push_back(r.value("release_seconds", 0.0));
    deletes.push_back(r.value("delete_seconds", 0.0));
  }
  std::vector<size_t> order(runs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return runs[a].value("release_seconds", 0.0) < runs[b].value("release_seconds", 0.0);
  });
  size_t chosen = order[(order.size() - 1) / 2];
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].value("done", false)) {
      chosen = i;
      break;
    }
  }
  ojson out = runs[chosen];
  out["runs"] = runs.size();
  out["release_seconds_runs"] = std::move(releases);
  out["delete_seconds_runs"] = std::move(deletes);
  return out;
}

}  // namespace ker::bench

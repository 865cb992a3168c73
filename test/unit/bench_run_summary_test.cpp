#include <gtest/gtest.h>

#include "bench/run_summary.h"

namespace ker::bench {
namespace {

using ojson = nlohmann::ordered_json;

ojson batch(double p50, double p99, double rps, double writes, size_t binds, size_t failed) {
  return {{"claims_per_pod", 2},
          {"binds", binds},
          {"failed", failed},
          {"p50_ms", p50},
          {"p99_ms", p99},
          {"rps", rps},
          {"api_writes_per_bind_metric", writes},
          {"api_reads_per_bind_audit", 3.0},
          {"api_writes_per_bind_audit", writes},
          {"write_budget_per_bind", 5}};
}

ojson bindRun(ojson batches, double peakMb) {
  return {{"nodes", 1000},
          {"batches", std::move(batches)},
          {"extender_memory", {{"rss_mb", 60.0}, {"peak_mb", peakMb}}}};
}

TEST(MedianBindTest, TakesEachStatisticsMedianAndTotalsTheCounts) {
  const ojson b = medianBind({
      bindRun({batch(20, 90, 30, 6, 75, 0), batch(60, 200, 100, 3, 425, 1)}, 70),
      bindRun({batch(40, 50, 10, 6, 75, 2), batch(50, 300, 120, 3, 425, 0)}, 90),
      bindRun({batch(30, 70, 20, 7, 75, 0), batch(70, 250, 110, 3, 425, 0)}, 80),
  });
  EXPECT_EQ(b["runs"], 3);
  ASSERT_EQ(b["batches"].size(), 2u);
  const auto& first = b["batches"][0];
  EXPECT_EQ(first["p50_ms"], 30.0);
  EXPECT_EQ(first["p99_ms"], 70.0);
  EXPECT_EQ(first["rps"], 20.0);
  EXPECT_EQ(first["api_writes_per_bind_metric"], 6.0);
  EXPECT_EQ(first["binds"], 225u);
  EXPECT_EQ(first["failed"], 2u);
  const auto& second = b["batches"][1];
  // Each statistic on its own: p50 from the first run, p99 and rate from the third.
  EXPECT_EQ(second["p50_ms"], 60.0);
  EXPECT_EQ(second["p99_ms"], 250.0);
  EXPECT_EQ(second["rps"], 110.0);
  EXPECT_EQ(second["failed"], 1u);
  EXPECT_EQ(second["write_budget_per_bind"], 5);
  EXPECT_EQ(b["extender_memory"]["peak_mb"], 90.0);
}

TEST(MedianBindTest, RequestsPerBindAreMediansAndTheFirstErrorIsKept) {
  ojson runs[] = {bindRun({batch(20, 90, 30, 6, 75, 0)}, 70),
                  bindRun({batch(20, 90, 30, 6, 75, 1)}, 70),
                  bindRun({batch(20, 90, 30, 6, 75, 1)}, 70)};
  const double reads[] = {2, 9, 3};
  const double auditWrites[] = {6, 8, 7};
  for (int i = 0; i < 3; ++i) {
    runs[i]["batches"][0]["api_reads_per_bind_audit"] = reads[i];
    runs[i]["batches"][0]["api_writes_per_bind_audit"] = auditWrites[i];
  }
  runs[1]["batches"][0]["first_error"] = "conflict";
  runs[2]["batches"][0]["first_error"] = "timeout";
  const ojson b = medianBind({runs[0], runs[1], runs[2]});
  const auto& row = b["batches"][0];
  EXPECT_EQ(row["api_reads_per_bind_audit"], 3.0);
  EXPECT_EQ(row["api_writes_per_bind_audit"], 7.0);
  EXPECT_EQ(row["failed"], 2u);
  EXPECT_EQ(row["first_error"], "conflict");
}

TEST(MedianBindTest, OneRunIsReportedAsItIs) {
  const ojson run = bindRun({batch(20, 90, 30, 6, 75, 0)}, 70);
  ojson b = medianBind({run});
  EXPECT_EQ(b["runs"], 1);
  b.erase("runs");
  EXPECT_EQ(b, run);
}

ojson controllerRun(double release, double deletes, double writesPerPod) {
  return {{"done", true},
          {"pods", 1000},
          {"delete_seconds", deletes},
          {"release_seconds", release},
          {"api_writes_per_pod", writesPerPod}};
}

TEST(MedianControllerTest, ReportsTheRunWithTheMedianReleaseTimeWhole) {
  const ojson c = medianController(
      {controllerRun(11.0, 7.0, 3.9), controllerRun(6.5, 4.0, 3.7), controllerRun(8.0, 5.0, 3.8)});
  EXPECT_EQ(c["release_seconds"], 8.0);
  // The median run's own figures, not the medians of each.
  EXPECT_EQ(c["delete_seconds"], 5.0);
  EXPECT_EQ(c["api_writes_per_pod"], 3.8);
  EXPECT_EQ(c["runs"], 3);
  EXPECT_EQ(c["release_seconds_runs"], ojson({11.0, 6.5, 8.0}));
  EXPECT_EQ(c["delete_seconds_runs"], ojson({7.0, 4.0, 5.0}));
}

TEST(MedianControllerTest, OfTwoRunsTakesTheFaster) {
  const ojson c = medianController({controllerRun(9.0, 5.0, 3.7), controllerRun(12.0, 6.0, 3.7)});
  EXPECT_EQ(c["release_seconds"], 9.0);
}

TEST(MedianControllerTest, ARunThatDidNotFinishIsReportedInsteadOfTheMedian) {
  ojson stuck = {{"done", false},
                 {"pods", 1000},
                 {"delete_seconds", 5.0},
                 {"release_seconds", 180.0},
                 {"not_done", "3 claims still Bound after 180 s"}};
  const ojson c = medianController({controllerRun(8.0, 5.0, 3.7), stuck});
  EXPECT_FALSE(c["done"].get<bool>());
  EXPECT_EQ(c["not_done"], "3 claims still Bound after 180 s");
  EXPECT_EQ(c["release_seconds_runs"], ojson({8.0, 180.0}));
}

TEST(MedianControllerTest, ARunThatNeverStartedCountsAsNotFinished) {
  // benchController reports a controller that never became ready without any times.
  const ojson never = {{"done", false}, {"pods", 1000}, {"not_done", "not ready"}};
  const ojson c = medianController({controllerRun(8.0, 5.0, 3.7), never});
  EXPECT_EQ(c["not_done"], "not ready");
  EXPECT_EQ(c["release_seconds_runs"], ojson({8.0, 0.0}));
}

}  // namespace
}  // namespace ker::bench

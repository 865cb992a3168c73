#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "bench/report.h"

namespace ker::bench {
namespace {

using ojson = nlohmann::ordered_json;

ojson verb(size_t nodes, const std::string& mode, const std::string& name, int claims, double p99,
           double rpsC8, double ratioToFloor = 1) {
  return {{"nodes", nodes},
          {"mode", mode},
          {"verb", name},
          {"claims_per_pod", claims},
          {"ratio_p99_to_floor", ratioToFloor},
          {"c1", {{"p50_ms", p99 / 2}, {"p99_ms", p99}}},
          {"c8", {{"rps", rpsC8}}}};
}

ojson cluster(size_t nodes, ojson verbs, double peakMb) {
  return {{"nodes", nodes},
          {"devices", nodes * 8},
          {"population", ojson::object()},
          {"memory_after_nodenames", {{"peak_mb", peakMb}}},
          {"verbs", std::move(verbs)}};
}

ojson bindBatch(int claims, int devices, double writes) {
  return {{"claims_per_pod", claims},
          {"devices_per_pod", devices},
          {"concurrency", 1},
          {"binds", 10},
          {"failed", 0},
          {"p50_ms", 20.0},
          {"p99_ms", 40.0},
          {"rps", 30.0},
          {"api_writes_per_bind_metric", writes},
          {"api_reads_per_bind_audit", 2.0},
          {"api_writes_per_bind_audit", writes},
          {"write_budget_per_bind", devices + 2}};
}

// A whole run's results: a small cluster that meets every target and a large one that does
// not, binds, and the controller.
ojson results() {
  return {{"generated_at", "2026-01-12T09:41:27Z"},
          {"machine", {{"cores", 2}, {"note", "shared"}}},
          {"clusters",
           {cluster(100,
                    {verb(100, "NodeNames", "filter", 1, 0.2, 20000),
                     verb(100, "NodeNames", "prioritize", 1, 0.2, 20000)},
                    20),
            cluster(5000,
                    {verb(5000, "NodeNames", "filter", 1, 1.5, 2500),
                     verb(5000, "NodeNames", "filter", 2, 2.5, 1900),
                     verb(5000, "NodeNames", "prioritize", 1, 1.0, 2600),
                     verb(5000, "NodeNames", "prioritize", 2, 1.2, 2600),
                     verb(5000, "NodeList", "filter", 1, 200, 9, 2.5),
                     verb(5000, "NodeList", "filter", 2, 210, 9, 3.5),
                     verb(5000, "NodeList", "prioritize", 1, 150, 9, 9)},
                    250)}},
          {"bind",
           {{"nodes", 1000}, {"runs", 3}, {"batches", {bindBatch(1, 1, 3), bindBatch(2, 3, 6)}}}},
          {"controller",
           {{"done", true},
            {"pods", 1000},
            {"claims_bound", 1500},
            {"devices_bound", 2000},
            {"delete_seconds", 5.0},
            {"release_seconds", 8.5},
            {"release_seconds_runs", {9.5, 8.5, 7.0}},
            {"api_reads_per_pod", 0.0},
            {"api_writes_per_pod", 3.7}}}};
}

class ReportTest : public testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/ker-report-test.XXXXXX";
    ASSERT_NE(mkdtemp(name), nullptr);
    dir_ = name;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The judged targets by name, each with its verdict text.
  std::map<std::string, std::string> judged(ojson r) {
    md_ = writeResults(r, dir_);
    std::map<std::string, std::string> out;
    for (const auto& t : r["targets"]) {
      out[t["target"].get<std::string>()] = t["text"].get<std::string>();
    }
    return out;
  }
  std::string dir_;
  std::string md_;
};

TEST_F(ReportTest, JudgesTheLargestClusterByItsWorstClaimCount) {
  const auto t = judged(results());
  // The 2-claim filter's p99 and rate decide, not the 1-claim ones, and not the 100-node run.
  EXPECT_EQ(t.at("NodeNames filter p99, 5000 nodes"),
            "MISS 2.50 ms vs <= 2.00 ms (1.25x the bound)");
  EXPECT_EQ(t.at("NodeNames prioritize p99, 5000 nodes"), "PASS 1.20 ms vs <= 2.00 ms (40% under)");
  EXPECT_EQ(t.at("NodeNames filter req/s at concurrency 8, 5000 nodes"),
            "MISS 1900.00 req/s vs >= 2000.00 req/s (95% of the bound)");
  EXPECT_EQ(t.at("extender peak RSS (VmHWM) with 5000 nodes and 40000 devices cached, NodeNames "
                 "load"),
            "MISS 250.00 MB vs <= 200.00 MB (1.25x the bound)");
  // Only filter counts for NodeList: prioritize's ratio of 9 is not judged.
  EXPECT_EQ(t.at("NodeList filter p99 / transport floor p99, 5000 nodes (p99 210 ms)"),
            "MISS 3.50 x vs <= 3.00 x (1.17x the bound)");
  EXPECT_EQ(t.size(), 8u);
}

TEST_F(ReportTest, JudgesEveryBindBatchAgainstItsWriteBudgetAndListsTheControllersRuns) {
  const auto t = judged(results());
  EXPECT_EQ(t.at("bind API writes, 1 claim(s) / 1 device(s) per pod, concurrency 1"),
            "PASS 3.00 writes vs <= 3.00 writes (0% under)");
  EXPECT_EQ(t.at("bind API writes, 2 claim(s) / 3 device(s) per pod, concurrency 1"),
            "MISS 6.00 writes vs <= 5.00 writes (1.20x the bound)");
  EXPECT_EQ(t.at("1000 releases by the controller"), "PASS 8.50 s vs <= 10.00 s (15% under)");
  EXPECT_NE(md_.find("after 8.50 s (the median run of 3: 9.50 s, 8.50 s, 7.00 s;"),
            std::string::npos)
      << md_;
  EXPECT_NE(md_.find("medians of 3 runs"), std::string::npos) << md_;
}

TEST_F(ReportTest, AControllerThatDidNotFinishIsAMissThatSaysWhy) {
  ojson r = results();
  r["controller"] = {
      {"done", false}, {"pods", 1000}, {"not_done", "12 claims still Bound after 180 s"}};
  const auto t = judged(r);
  EXPECT_EQ(t.at("1000 releases by the controller within 10 s"),
            "NOT DONE: 12 claims still Bound after 180 s");
  EXPECT_NE(md_.find("NOT DONE: 12 claims still Bound after 180 s"), std::string::npos);
}

TEST_F(ReportTest, WritesTheJudgedResultsAndTheTableItReturns) {
  ojson r = results();
  const std::string md = writeResults(r, dir_);
  std::ifstream mdFile(dir_ + "/latest.md");
  std::stringstream written;
  written << mdFile.rdbuf();
  EXPECT_EQ(written.str(), md);
  std::ifstream jsonFile(dir_ + "/latest.json");
  const ojson back = ojson::parse(jsonFile);
  EXPECT_EQ(back["targets"], r["targets"]);
  EXPECT_EQ(back["targets"].size(), 8u);
  // bench/plot.py draws it beside latest.md.
  EXPECT_NE(md.find("(extender-p99.svg)"), std::string::npos) << md;
}

TEST_F(ReportTest, ConstrainedClaimsAreJudgedAgainstTheSameRunsFilterAndKeptOutOfTheOthers) {
  ojson r = results();
  auto constrainedVerb = [](const std::string& name, int claims, double p99) {
    ojson v = verb(5000, "NodeNames", name, claims, p99, 100);
    v["constrained"] = true;
    return v;
  };
  r["clusters"][1]["verbs"].push_back(constrainedVerb("filter", 1, 3.0));
  r["clusters"][1]["verbs"].push_back(constrainedVerb("filter", 2, 5.5));
  r["clusters"][1]["verbs"].push_back(constrainedVerb("prioritize", 2, 9.0));
  const auto t = judged(r);
  // The worst constrained filter against the worst unconstrained one (2.5 ms); prioritize and
  // their rates are not part of it, and leave the unconstrained targets as they were.
  EXPECT_EQ(t.at("NodeNames filter p99 with a constraint on every claim / without, 5000 nodes "
                 "(p99 5.50 ms against 2.50 ms)"),
            "MISS 2.20 x vs <= 2.00 x (1.10x the bound)");
  EXPECT_EQ(t.at("NodeNames filter p99, 5000 nodes"),
            "MISS 2.50 ms vs <= 2.00 ms (1.25x the bound)");
  EXPECT_EQ(t.at("NodeNames prioritize p99, 5000 nodes"), "PASS 1.20 ms vs <= 2.00 ms (40% under)");
  EXPECT_EQ(t.at("NodeNames filter req/s at concurrency 8, 5000 nodes"),
            "MISS 1900.00 req/s vs >= 2000.00 req/s (95% of the bound)");
  EXPECT_EQ(t.size(), 9u);
  EXPECT_NE(md_.find("| 5000 | NodeNames | filter | 2c |"), std::string::npos) << md_;
}

TEST_F(ReportTest, StagesThatWereNotRunAreNotJudged) {
  ojson r = results();
  r.erase("bind");
  r.erase("controller");
  r["clusters"][1]["verbs"] = {verb(5000, "NodeList", "filter", 1, 200, 9, 2.5)};
  const auto t = judged(r);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t.begin()->second, "PASS 2.50 x vs <= 3.00 x (17% under)");
  EXPECT_EQ(md_.find("## bind"), std::string::npos);
  EXPECT_EQ(md_.find("## controller"), std::string::npos);
}

}  // namespace
}  // namespace ker::bench

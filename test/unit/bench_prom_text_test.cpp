#include <gtest/gtest.h>

#include "bench/prom_text.h"

namespace ker::bench {
namespace {

constexpr const char* kBefore = R"(# HELP scheduler_schedule_attempts_total Number of attempts.
# TYPE scheduler_schedule_attempts_total counter
scheduler_schedule_attempts_total{profile="default-scheduler",result="error"} 2
scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 10
scheduler_schedule_attempts_total_extra 99
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 3
)";

constexpr const char* kAfter =
    R"(scheduler_schedule_attempts_total{profile="default-scheduler",result="error"} 2
scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 510
scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"} 7
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 505
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 4
extended_resource_scheduler_decisions_total{verb="bind",result="failed"} 3
extended_resource_scheduler_decisions_total{verb="bind",result="bound"} 497
extended_resource_scheduler_decisions_total{verb="filter",result="passed"} 1e+06
weird{a="x\"y,z",b="q"} 1.5
)";

TEST(PromTextTest, ReadsLabelsAndValuesOfOneMetricOnly) {
  const auto s = samplesOf(kBefore, "scheduler_schedule_attempts_total");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].labels.at("result"), "error");
  EXPECT_EQ(s[0].value, 2);
  EXPECT_EQ(s[1].labels.at("profile"), "default-scheduler");
  EXPECT_EQ(s[1].value, 10);
}

TEST(PromTextTest, UnescapesQuotedLabelValues) {
  const auto s = samplesOf(kAfter, "weird");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].labels.at("a"), "x\"y,z");
  EXPECT_EQ(s[0].labels.at("b"), "q");
  EXPECT_EQ(s[0].value, 1.5);
}

TEST(PromTextTest, SumsTheSeriesMatchingEveryLabel) {
  const char* name = "extended_resource_scheduler_decisions_total";
  EXPECT_EQ(sumOf(kAfter, name, {{"verb", "bind"}, {"result", "failed"}}), 3);
  EXPECT_EQ(sumOf(kAfter, name, {{"verb", "bind"}}), 500);
  EXPECT_EQ(sumOf(kAfter, name), 1e6 + 500);
  EXPECT_EQ(sumOf(kAfter, name, {{"verb", "preempt"}}), 0);
  EXPECT_EQ(sumOf(kAfter, "absent_metric"), 0);
}

TEST(PromTextTest, CounterGrowthByKeyLabelsCountsNewSeriesFromZero) {
  const auto g = counterGrowth(kBefore, kAfter, "scheduler_schedule_attempts_total", {"result"});
  EXPECT_EQ(g.size(), 2u);  // error did not grow
  EXPECT_EQ(g.at("scheduled"), 500);
  EXPECT_EQ(g.at("unschedulable"), 7);

  const auto r = counterGrowth(kBefore, kAfter, "apiserver_request_total",
                               {"verb", "resource", "subresource"});
  // Both codes of the binding summed into one key.
  EXPECT_EQ(r.at("POST pods binding"), 504);
  EXPECT_EQ(r.at("GET  /metrics"), 1);
}

}  // namespace
}  // namespace ker::bench

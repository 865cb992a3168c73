#include "common/metrics.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace ker::metrics {
namespace {

TEST(Metrics, CounterAndGaugeRender) {
  Registry r;
  auto& reqs = r.counter("requests_total", "Requests served.", {"code", "path"});
  reqs.labels({"200", "/b"}).inc();
  reqs.labels({"200", "/a"}).inc(2);
  reqs.labels({"500", "/a"}).inc();
  r.gauge("in_flight", "Requests in flight.").get().set(3);
  r.gaugeFunc("cache_size", "Cached objects.", [] { return 42.0; });

  EXPECT_EQ(r.render(),
            "# HELP cache_size Cached objects.\n"
            "# TYPE cache_size gauge\n"
            "cache_size 42\n"
            "# HELP in_flight Requests in flight.\n"
            "# TYPE in_flight gauge\n"
            "in_flight 3\n"
            "# HELP requests_total Requests served.\n"
            "# TYPE requests_total counter\n"
            "requests_total{code=\"200\",path=\"/a\"} 2\n"
            "requests_total{code=\"200\",path=\"/b\"} 1\n"
            "requests_total{code=\"500\",path=\"/a\"} 1\n");
}

TEST(Metrics, EscapesLabelValuesAndHelp) {
  Registry r;
  r.counter("c", "line1\nback\\slash \"quoted\"", {"v"}).labels({"a\\b\"c\nd"}).inc();
  EXPECT_EQ(r.render(),
            "# HELP c line1\\nback\\\\slash \"quoted\"\n"
            "# TYPE c counter\n"
            "c{v=\"a\\\\b\\\"c\\nd\"} 1\n");
}

TEST(Metrics, HistogramBucketsAreCumulative) {
  Registry r;
  auto& h = r.histogram("latency_seconds", "Latency.", {"op"}, {0.125, 1, 2.5});
  auto& get = h.labels({"get"});
  // Binary fractions keep the sum exact.
  get.observe(0.0625);
  get.observe(0.125);  // bounds are inclusive
  get.observe(0.75);
  get.observe(30);
  EXPECT_EQ(r.render(),
            "# HELP latency_seconds Latency.\n"
            "# TYPE latency_seconds histogram\n"
            "latency_seconds_bucket{op=\"get\",le=\"0.125\"} 2\n"
            "latency_seconds_bucket{op=\"get\",le=\"1\"} 3\n"
            "latency_seconds_bucket{op=\"get\",le=\"2.5\"} 3\n"
            "latency_seconds_bucket{op=\"get\",le=\"+Inf\"} 4\n"
            "latency_seconds_sum{op=\"get\"} 30.9375\n"
            "latency_seconds_count{op=\"get\"} 4\n");
}

TEST(Metrics, DefaultBucketsSpanHttpLatencies) {
  const auto& b = defaultBuckets();
  ASSERT_FALSE(b.empty());
  EXPECT_DOUBLE_EQ(b.front(), 0.0001);
  EXPECT_DOUBLE_EQ(b.back(), 10);
  EXPECT_TRUE(std::is_sorted(b.begin(), b.end()));
  Registry r;
  r.histogram("h", "x").get().observe(0.003);
  const std::string out = r.render();
  EXPECT_NE(out.find("h_bucket{le=\"0.0001\"} 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("h_bucket{le=\"0.005\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("h_bucket{le=\"+Inf\"} 1\n"), std::string::npos) << out;
}

TEST(Metrics, ReRegistrationReturnsTheSameFamily) {
  Registry r;
  auto& a = r.counter("x_total", "x", {"k"});
  auto& b = r.counter("x_total", "x", {"k"});
  EXPECT_EQ(&a, &b);
  EXPECT_EQ(&a.labels({"v"}), &b.labels({"v"}));
  EXPECT_THROW(r.gauge("x_total", "x", {"k"}), std::invalid_argument);
  EXPECT_THROW(r.counter("x_total", "x", {"other"}), std::invalid_argument);
  EXPECT_THROW(r.counterFunc("x_total", "x", [] { return 1.0; }), std::invalid_argument);
}

TEST(Metrics, RejectsInvalidNamesAndLabelCounts) {
  Registry r;
  EXPECT_THROW(r.counter("1abc", "x"), std::invalid_argument);
  EXPECT_THROW(r.counter("a-b", "x"), std::invalid_argument);
  EXPECT_THROW(r.counter("ok", "x", {"bad-label"}), std::invalid_argument);
  EXPECT_THROW(r.counter("ok2", "x", {"__reserved"}), std::invalid_argument);
  EXPECT_THROW(r.counter("ok3", "x", {"a", "a"}), std::invalid_argument);
  EXPECT_THROW(r.histogram("h", "x", {"le"}), std::invalid_argument);
  EXPECT_THROW(r.histogram("h2", "x", {}, {1, 0.5}), std::invalid_argument);
  auto& c = r.counter("ok_total", "x", {"a"});
  EXPECT_THROW(c.labels({}), std::invalid_argument);
  EXPECT_THROW(c.labels({"1", "2"}), std::invalid_argument);
  // A failed registration leaves nothing half-registered behind.
  EXPECT_EQ(r.render().find("h2"), std::string::npos);
}

TEST(Metrics, ConcurrentUpdatesAreNotLost) {
  Registry r;
  auto& c = r.counter("hits_total", "x", {"worker"});
  auto& h = r.histogram("obs", "x");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) {
        c.labels({std::to_string(i % 3)}).inc();
        h.get().observe(0.001 * t);
        if (i % 1000 == 0) {
          r.render();
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  double total = 0;
  for (const char* w : {"0", "1", "2"}) {
    total += c.labels({w}).value();
  }
  EXPECT_EQ(total, 40000);
  EXPECT_EQ(h.get().snapshot().count, 40000u);
}

TEST(Metrics, SpecialValues) {
  Registry r;
  auto& g = r.gauge("g", "x", {"k"});
  g.labels({"inf"}).set(std::numeric_limits<double>::infinity());
  g.labels({"nan"}).set(std::numeric_limits<double>::quiet_NaN());
  g.labels({"neg"}).set(-1.5);
  g.labels({"big"}).set(1e21);
  g.labels({"million"}).set(1e6);
  g.labels({"under"}).set(123456);
  g.labels({"tiny"}).set(0.00001);
  const std::string out = r.render();
  EXPECT_NE(out.find("g{k=\"inf\"} +Inf\n"), std::string::npos) << out;
  EXPECT_NE(out.find("g{k=\"nan\"} NaN\n"), std::string::npos) << out;
  EXPECT_NE(out.find("g{k=\"neg\"} -1.5\n"), std::string::npos) << out;
  EXPECT_NE(out.find("g{k=\"big\"} 1e+21\n"), std::string::npos) << out;
  EXPECT_NE(out.find("g{k=\"million\"} 1e+06\n"), std::string::npos) << out;
  EXPECT_NE(out.find("g{k=\"under\"} 123456\n"), std::string::npos) << out;
  EXPECT_NE(out.find("g{k=\"tiny\"} 1e-05\n"), std::string::npos) << out;
}

TEST(Metrics, ComputedSeriesAreExactlyThoseOfTheLastCall) {
  Registry r;
  std::vector<LabeledValue> now = {{{"b", "2"}, 1}, {{"a", "1"}, 1}};
  r.gaugeSeriesFunc("held", "Held things.", {"thing", "n"}, [&] { return now; });
  EXPECT_EQ(r.render(),
            "# HELP held Held things.\n"
            "# TYPE held gauge\n"
            "held{thing=\"a\",n=\"1\"} 1\n"
            "held{thing=\"b\",n=\"2\"} 1\n");
  // A series gone from the source is gone from the page; a malformed one and a repeated label
  // set are left out rather than written as a page Prometheus would reject.
  now = {{{"b", "2"}, 3}, {{"b", "2"}, 4}, {{"c"}, 1}};
  EXPECT_EQ(r.render(),
            "# HELP held Held things.\n"
            "# TYPE held gauge\n"
            "held{thing=\"b\",n=\"2\"} 3\n");
  now.clear();
  EXPECT_EQ(r.render(), "# HELP held Held things.\n# TYPE held gauge\n");
  EXPECT_THROW(r.gauge("held", "Held things.", {"thing", "n"}), std::invalid_argument);
  EXPECT_THROW(r.gaugeSeriesFunc("held", "again", {"thing", "n"},
                                 [] { return std::vector<LabeledValue>{}; }),
               std::invalid_argument);
}

}  // namespace
}  // namespace ker::metrics

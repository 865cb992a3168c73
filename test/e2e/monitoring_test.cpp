// The dashboard and alerts of deploy/monitoring query what the running components serve: every
// metric of this project they name is on a component's /metrics page (the checker,
// test/monitoring/check.sh, has already parsed their queries and checked kube-scheduler's).
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "e2e_fixture.h"

namespace ker::e2e {
namespace {

using MonitoringTest = E2eTest;

// The families a metrics page declares (# TYPE lines), with a histogram's sample names.
std::set<std::string> familiesOf(const std::string& page) {
  std::set<std::string> out;
  std::istringstream lines(page);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string hash, type, name, kind;
    if (words >> hash >> type >> name >> kind && hash == "#" && type == "TYPE") {
      out.insert(name);
      if (kind == "histogram") {
        for (const char* suffix : {"_bucket", "_sum", "_count"}) {
          out.insert(name + suffix);
        }
      }
    }
  }
  return out;
}

TEST_F(MonitoringTest, EveryProjectMetricTheDashboardAndAlertsQueryIsServed) {
  std::string names;
  // Its progress lines (building promcheck on a fresh machine) go to stderr: not names.
  ASSERT_EQ(
      itest::runShell("{ " + itest::shellQuote(env_->repoRoot() + "/test/monitoring/check.sh") +
                          " --print-metrics 2>/dev/null; }",
                      &names),
      0)
      << "test/monitoring/check.sh --print-metrics failed";

  std::set<std::string> served;
  const std::pair<const char*, int> components[] = {{"extended-resource-node-agent", 8082},
                                                    {"extended-resource-controller", 8080},
                                                    {"extended-resource-scheduler", 8889}};
  for (const auto& [app, port] : components) {
    const std::string page = scrapeMetrics(app, port);
    ASSERT_FALSE(page.empty()) << app;
    served.merge(familiesOf(page));
  }

  std::istringstream queried(names);
  int checked = 0;
  for (std::string name; std::getline(queried, name);) {
    // kube-scheduler's and the vendor exporter's: the checker holds them to their sources.
    if (name.starts_with("scheduler_") || name.starts_with("DCGM_") ||
        name == "leader_election_master_status") {
      continue;
    }
    ++checked;
    EXPECT_TRUE(served.count(name)) << name << " is queried but no component serves it";
  }
  EXPECT_GT(checked, 20) << names;
}

}  // namespace
}  // namespace ker::e2e

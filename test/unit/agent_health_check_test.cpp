#include <gtest/gtest.h>

#include <chrono>

#include "agent/device_probe.h"
#include "agent/health_check.h"

namespace ker::agent {
namespace {

using namespace std::chrono_literals;

TEST(HealthCheckTest, ExitZeroIsHealthy) {
  CheckResult r = runHealthCheck({"/bin/sh", "-c", "exit 0"}, {}, 5s);
  EXPECT_TRUE(r.healthy) << r.problem;
}

TEST(HealthCheckTest, AFailureReportsItsStatusAndFirstLine) {
  CheckResult r =
      runHealthCheck({"/bin/sh", "-c", "echo \"ECC errors: 12\"; echo more; exit 3"}, {}, 5s);
  EXPECT_FALSE(r.healthy);
  EXPECT_EQ(r.problem, "health check exited with 3: ECC errors: 12");
}

// The first line goes into the device's status, which the API server takes only as UTF-8: a
// byte that is not is replaced, and a long line is cut between characters.
TEST(HealthCheckTest, ItsOutputIsMadeUtf8AndCutBetweenCharacters) {
  CheckResult r = runHealthCheck({"/bin/sh", "-c", "printf 'bad \\377 byte'; exit 1"}, {}, 5s);
  EXPECT_EQ(r.problem, "health check exited with 1: bad \xEF\xBF\xBD byte");
  // 199 ASCII bytes, then a two-byte character the 200-byte limit would split.
  r = runHealthCheck({"/bin/sh", "-c", "printf '%0199d\\303\\251tail' 0; exit 1"}, {}, 5s);
  EXPECT_EQ(r.problem, "health check exited with 1: " + std::string(199, '0') + "…");
}

TEST(HealthCheckTest, TheDeviceIsNamedInTheEnvironment) {
  CheckResult r = runHealthCheck({"sh", "-c", "[ \"$EXTENDED_RESOURCE_DEVICE_ID\" = GPU-0 ]"},
                                 {{"EXTENDED_RESOURCE_DEVICE_ID", "GPU-0"}}, 5s);
  EXPECT_TRUE(r.healthy) << r.problem;
}

TEST(HealthCheckTest, ACommandThatCannotStartIsUnhealthy) {
  CheckResult r = runHealthCheck({"/nonexistent/check"}, {}, 5s);
  EXPECT_FALSE(r.healthy);
  EXPECT_EQ(r.problem, "health check exited with 127");
  EXPECT_FALSE(runHealthCheck({}, {}, 5s).healthy);
}

TEST(HealthCheckTest, AHungCheckIsKilledAtItsTimeoutWithItsChildren) {
  const auto start = std::chrono::steady_clock::now();
  // The background sleep keeps the output pipe open: the whole process group must go.
  CheckResult r = runHealthCheck({"/bin/sh", "-c", "sleep 30 & sleep 30"}, {}, 300ms);
  EXPECT_FALSE(r.healthy);
  EXPECT_EQ(r.problem, "health check timed out after 300ms");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(HealthCheckTest, TheProbeRunsTheDevicesCheckAfterItsNodesAndMounts) {
  DeviceProbe probe("");
  DeviceSpec d;
  d.name = "gpu0";
  d.deviceID = "GPU-0";
  d.healthCheck = HealthCheckSpec{{"/bin/sh", "-c", "echo overheated; exit 1"}, 5s};
  HealthObservation seen = probe.check(d, {});
  EXPECT_FALSE(seen.healthy);
  EXPECT_EQ(seen.problem, "health check exited with 1: overheated");
  d.deviceNodes = {{"/dev/ker-test-missing-node", "rw"}};
  EXPECT_EQ(probe.check(d, {}).problem, "device node /dev/ker-test-missing-node is missing");
  d.deviceNodes = {{"/dev/null", "rw"}};
  d.healthCheck->command = {"/bin/sh", "-c", "exit 0"};
  EXPECT_TRUE(probe.check(d, {}).healthy);
}

}  // namespace
}  // namespace ker::agent

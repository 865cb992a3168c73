#include "controller/controller_flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "flag_args.h"

namespace ker {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Status parse(const std::vector<std::string>& args, ControllerSettings& out) {
  return parseSettings<ControllerFlags>(args, out);
}

TEST(ControllerFlags, DefaultsAreControllerAppConfigsWithProtectionOn) {
  ControllerSettings got;
  ASSERT_TRUE(parse({}, got).ok());
  const ControllerAppConfig want;
  const ControllerAppConfig& c = got.app;
  EXPECT_EQ(c.controller.workers, want.controller.workers);
  EXPECT_EQ(c.controller.deviceWorkers, want.controller.deviceWorkers);
  EXPECT_EQ(c.controller.reconciler.orphanGrace, want.controller.reconciler.orphanGrace);
  EXPECT_EQ(c.controller.reconciler.deviceOrphanGrace,
            want.controller.reconciler.deviceOrphanGrace);
  EXPECT_EQ(c.controller.reconciler.schedulerName, want.controller.reconciler.schedulerName);
  EXPECT_EQ(c.resyncPeriod, want.resyncPeriod);
  EXPECT_EQ(c.leaderElect, want.leaderElect);
  EXPECT_EQ(c.leaderElection.name, want.leaderElection.name);
  EXPECT_EQ(c.leaderElection.ns, want.leaderElection.ns);
  EXPECT_EQ(c.leaderElection.leaseDuration, want.leaderElection.leaseDuration);
  EXPECT_EQ(c.leaderElection.renewDeadline, want.leaderElection.renewDeadline);
  EXPECT_EQ(c.leaderElection.retryPeriod, want.leaderElection.retryPeriod);
  EXPECT_EQ(c.leaderElection.identity, "");  // ControllerApp fills it
  EXPECT_EQ(c.metricsBindAddress, want.metricsBindAddress);
  // The defaults the binary sets apart from the library's.
  EXPECT_TRUE(c.controller.reconciler.protectInUse);
  EXPECT_EQ(c.controller.classParamsNamespace, "extended-resource-classes");
  EXPECT_EQ(got.kubeconfig, "");
  EXPECT_EQ(got.log.format, LogSettings{}.format);
  EXPECT_EQ(got.log.verbosity, LogSettings{}.verbosity);
}

TEST(ControllerFlags, HelpShowsTheConfigsDefaultsAndAliases) {
  FlagSet flags("extended-resource-controller", "");
  const ControllerFlags controller(flags);
  const std::string usage = flags.usage();
  for (const char* text :
       {"concurrent claim reconciles (releases) (default 16)", "(default 4)", "(default 5m)",
        "(default 2m)", "(default 45s)", "(default \"extended-resource-scheduler\")",
        "Lease name (also --leader-elect-resource-name) (default \"extended-resource-controller\")",
        "Lease namespace (also --leader-elect-resource-namespace) (default \"kube-system\")",
        "(default \"leases\")", "(default 15s)", "(default 10s)", "(default 2s)",
        "(default \":8080\")", "keeps none (default \"extended-resource-classes\")"}) {
    EXPECT_NE(usage.find(text), std::string::npos) << text << "\n" << usage;
  }
}

TEST(ControllerFlags, ValidInputFillsTheConfig) {
  ControllerSettings got;
  ASSERT_TRUE(parse({"--kubeconfig=/k",
                     "--workers=2",
                     "--device-workers=3",
                     "--resync-period=1m",
                     "--orphan-grace-period=3s",
                     "--device-orphan-grace-period=4s",
                     "--freed-device-write-delay=7s",
                     "--protect-in-use=false",
                     "--scheduler-name=s",
                     "--leader-elect=false",
                     "--leader-elect-resource-name=l",
                     "--leader-elect-resource-namespace=n",
                     "--leader-elect-resource-lock=leases",
                     "--leader-elect-lease-duration=4s",
                     "--leader-elect-renew-deadline=2s",
                     "--leader-elect-retry-period=500ms",
                     "--metrics-bind-address=127.0.0.1:9",
                     "--log-format=json",
                     "--v=2",
                     "--class-params-namespace=params"},
                    got)
                  .ok());
  const ControllerAppConfig& c = got.app;
  EXPECT_EQ(c.controller.classParamsNamespace, "params");
  EXPECT_EQ(got.kubeconfig, "/k");
  EXPECT_EQ(c.controller.workers, 2);
  EXPECT_EQ(c.controller.deviceWorkers, 3);
  EXPECT_EQ(c.resyncPeriod, seconds(60));
  EXPECT_EQ(c.controller.reconciler.orphanGrace, seconds(3));
  EXPECT_EQ(c.controller.reconciler.deviceOrphanGrace, seconds(4));
  EXPECT_EQ(c.controller.reconciler.freedDeviceWriteDelay, seconds(7));
  EXPECT_FALSE(c.controller.reconciler.protectInUse);
  EXPECT_EQ(c.controller.reconciler.schedulerName, "s");
  EXPECT_FALSE(c.leaderElect);
  EXPECT_EQ(c.leaderElection.name, "l");
  EXPECT_EQ(c.leaderElection.ns, "n");
  EXPECT_EQ(c.leaderElection.leaseDuration, seconds(4));
  EXPECT_EQ(c.leaderElection.renewDeadline, seconds(2));
  EXPECT_EQ(c.leaderElection.retryPeriod, milliseconds(500));
  EXPECT_EQ(c.metricsBindAddress, "127.0.0.1:9");
  EXPECT_EQ(got.log.format, log::Format::kJson);
  EXPECT_EQ(got.log.verbosity, 2);
}

TEST(ControllerFlags, TheClassParamsCanBeOff) {
  ControllerSettings got;
  ASSERT_TRUE(parse({"--class-params-namespace="}, got).ok());
  EXPECT_EQ(got.app.controller.classParamsNamespace, "");
}

TEST(ControllerFlags, MetricsCanBeOff) {
  for (const char* off : {"--metrics-bind-address=0", "--metrics-bind-address="}) {
    ControllerSettings got;
    EXPECT_TRUE(parse({off}, got).ok()) << off;
  }
}

TEST(ControllerFlags, EachBadValueNamesItsFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--workers=0"}, "--workers must be 1 to 1024, got 0"},
      {{"--workers=1025"}, "--workers must be 1 to 1024, got 1025"},
      {{"--device-workers=0"}, "--device-workers must be 1 to 1024, got 0"},
      {{"--metrics-bind-address=8080"},
       "--metrics-bind-address must be host:port, :port, or 0 for none, got \"8080\""},
      {{"--leader-elect-resource-lock=configmaps"},
       "--leader-elect-resource-lock must be leases, got \"configmaps\""},
      {{"--leader-elect-retry-period=0s"}, "--leader-elect-retry-period must be positive, got 0s"},
      {{"--orphan-grace-period=0s"}, "--orphan-grace-period must be positive, got 0s"},
      {{"--device-orphan-grace-period=0s"},
       "--device-orphan-grace-period must be positive, got 0s"},
      {{"--freed-device-write-delay=0s"}, "--freed-device-write-delay must be positive, got 0s"},
      {{"--leader-elect-retry-period=10s"},
       "--leader-elect-retry-period must be below --leader-elect-renew-deadline, got 10s and "
       "10s"},
      {{"--leader-elect-renew-deadline=15s"},
       "--leader-elect-renew-deadline must be below --leader-elect-lease-duration, got 15s and "
       "15s"},
      {{"--log-format=xml"}, "--log-format must be text or json, got \"xml\""},

      {{"--v=100"}, "--v must be 0 to 99, got 100"},
  };
  for (const Case& c : cases) {
    ControllerSettings got;
    const Status s = parse(c.args, got);
    EXPECT_EQ(s.code(), StatusCode::kInvalid) << c.args[0] << ": " << s;
    EXPECT_EQ(s.message(), c.message);
  }
}

}  // namespace
}  // namespace ker

// extended-resource-controller: releases the claims of deleted or finished pods, marks claims
// Lost when their devices go, and repairs what an interrupted bind left behind.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <exception>

#include "common/flags.h"
#include "common/http_server.h"
#include "common/kube_client.h"
#include "common/logging.h"
#include "common/signals.h"
#include "controller/controller_app.h"

int main(int argc, char** argv) {
  ker::blockTerminationSignals();
  ker::ignoreBrokenPipes();
  ker::FlagSet flags("extended-resource-controller",
                     "Reconciles ExtendedResources and ExtendedResourceClaims with the pods that "
                     "hold them.");
  using std::chrono::milliseconds;
  using std::chrono::minutes;
  using std::chrono::seconds;
  auto* kubeconfig = flags.addString(
      "kubeconfig", "",
      "kubeconfig file (default: $KUBECONFIG, else in-cluster, else ~/.kube/config)");
  auto* workers = flags.addInt("workers", 16, "concurrent claim reconciles (releases)");
  auto* deviceWorkers = flags.addInt("device-workers", 4, "concurrent device reconciles");
  auto* resync = flags.addDuration("resync-period", minutes(5),
                                   "how often every claim and device is reconciled again");
  auto* grace = flags.addDuration("orphan-grace-period", minutes(2),
                                  "how long a half-written bind may stay so before it is repaired");
  auto* deviceGrace = flags.addDuration(
      "device-orphan-grace-period", seconds(45),
      "the same for a device Bound to a claim that does not list it (the smaller of the two "
      "applies); keep it above the extender's --bind-deadline");
  auto* protectInUse = flags.addBool(
      "protect-in-use", true,
      "put the protection finalizers on claims and devices, so one deleted while a pod holds "
      "it stays until that pod is gone (the ClusterRole must allow patching them); false "
      "leaves deletions alone");
  auto* schedulerName = flags.addString("scheduler-name", "extended-resource-scheduler",
                                        "schedulerName of the pods whose claims are served");
  auto* leaderElect = flags.addBool("leader-elect", true, "run only while holding the lease");
  auto* leaseName =
      flags.addString("leader-elect-lease-name", "extended-resource-controller", "Lease name");
  auto* leaseNamespace =
      flags.addString("leader-elect-namespace", "kube-system", "Lease namespace");
  // component-base's names for the same two settings.
  flags.addAlias("leader-elect-resource-name", "leader-elect-lease-name");
  flags.addAlias("leader-elect-resource-namespace", "leader-elect-namespace");
  auto* resourceLock = flags.addString("leader-elect-resource-lock", "leases",
                                       "the lock object (only leases, as component-base)");
  auto* leaseDuration = flags.addDuration("leader-elect-lease-duration", seconds(15),
                                          "how long others wait after they last saw it renewed");
  auto* renewDeadline = flags.addDuration("leader-elect-renew-deadline", seconds(10),
                                          "give up leading when not renewed for this long");
  auto* retryPeriod = flags.addDuration("leader-elect-retry-period", seconds(2),
                                        "between acquire and renew attempts");
  auto* metricsAddress = flags.addString("metrics-bind-address", ":8080",
                                         "host:port for /healthz, /readyz, /metrics (0: off)");
  auto* logFormat = flags.addString("log-format", "text", "text or json");
  auto* verbosity = flags.addInt("v", 0, "log verbosity");
  if (auto r = flags.parse(argc, argv); r.status != ker::FlagParseResult::kOk) {
    r.print();
    return r.exitCode();
  }
  auto format = ker::log::parseFormat(*logFormat);
  ker::ControllerAppConfig config;
  config.controller.workers = static_cast<int>(*workers);
  config.controller.deviceWorkers = static_cast<int>(*deviceWorkers);
  config.controller.reconciler.orphanGrace = *grace;
  config.controller.reconciler.deviceOrphanGrace = *deviceGrace;
  config.controller.reconciler.schedulerName = *schedulerName;
  config.controller.reconciler.protectInUse = *protectInUse;
  config.resyncPeriod = *resync;
  config.leaderElect = *leaderElect;
  config.leaderElection.name = *leaseName;
  config.leaderElection.ns = *leaseNamespace;
  config.leaderElection.leaseDuration = *leaseDuration;
  config.leaderElection.renewDeadline = *renewDeadline;
  config.leaderElection.retryPeriod = *retryPeriod;
  config.leaderElection.identity = ker::defaultIdentity();
  config.metricsBindAddress = *metricsAddress;
  try {
    if (!format || *workers < 1 || *deviceWorkers < 1 ||
        (*metricsAddress != "0" && !metricsAddress->empty() &&
         !ker::parseBindAddress(*metricsAddress))) {
      throw std::invalid_argument(
          "--log-format is text|json, --workers and --device-workers at least 1, "
          "--metrics-bind-address host:port");
    }
    if (*resourceLock != "leases") {
      throw std::invalid_argument("--leader-elect-resource-lock: only \"leases\" is supported");
    }
    ker::LeaderElector::validate(config.leaderElection);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "invalid flags: %s\n", e.what());
    return 2;
  }
  ker::log::init(*format, static_cast<int>(*verbosity));

  try {
    ker::KubeClient api(ker::KubeConfig::load(*kubeconfig));
    // Losing the lease ends the process like a termination signal, but with a failure code.
    ker::ControllerApp app(api, config, [] { ::kill(::getpid(), SIGTERM); });
    app.start();
    int sig = ker::waitForTerminationSignal();
    const bool lost = app.leadershipLost();
    ker::log::info("shutting down", {{"signal", sig}, {"leadershipLost", lost}});
    app.stop();
    return lost ? 1 : 0;
  } catch (const std::exception& e) {
    ker::log::error("fatal", {{"error", e.what()}});
    return 1;
  }
}

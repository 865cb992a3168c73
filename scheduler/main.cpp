// extended-resource-scheduler: the scheduler extender that kube-scheduler calls to filter,
// prioritize and bind pods that claim devices.
#include <chrono>
#include <cstdio>
#include <exception>

#include "common/flags.h"
#include "common/kube_client.h"
#include "common/logging.h"
#include "common/signals.h"
#include "scheduler/extender_app.h"

int main(int argc, char** argv) {
  ker::blockTerminationSignals();
  ker::ignoreBrokenPipes();
  ker::FlagSet flags("extended-resource-scheduler",
                     "Scheduler extender that allocates ExtendedResources to the claims of pods "
                     "scheduled by the extended-resource-scheduler profile.");
  auto* kubeconfig = flags.addString(
      "kubeconfig", "",
      "kubeconfig file (default: $KUBECONFIG, else in-cluster, else ~/.kube/config)");
  auto* bindAddress = flags.addString("bind-address", "0.0.0.0", "address to serve the verbs on");
  auto* port = flags.addInt("port", 8888, "port to serve filter, prioritize and bind on");
  auto* healthPort = flags.addInt(
      "health-port", 0,
      "plain-HTTP port for /healthz, /readyz, /metrics (0: served on --port, with its TLS)");
  auto* healthBindAddress =
      flags.addString("health-bind-address", "0.0.0.0", "address for --health-port");
  auto* tlsCert = flags.addString("tls-cert-file", "", "serving certificate (enables HTTPS)");
  auto* tlsKey = flags.addString("tls-private-key-file", "", "serving certificate's key");
  auto* clientCa =
      flags.addString("client-ca-file", "", "CA for client certificates (enables mutual TLS)");
  auto* prefix = flags.addString("path-prefix", "/", "path of kube-scheduler's urlPrefix");
  auto* scoring = flags.addString("scoring", "binpack",
                                  "binpack: prefer nodes left with the fewest matching free "
                                  "devices; spread: the most");
  // The defaults are ExtenderConfig's, so they have one home.
  const ker::ExtenderConfig defaults;
  auto* maxBody = flags.addInt("max-body-bytes", static_cast<int64_t>(defaults.maxBodyBytes),
                               "largest request body accepted");
  auto* httpThreads = flags.addInt(
      "http-threads", static_cast<int64_t>(defaults.threads),
      "threads serving the verbs, each holding one connection (kube-scheduler opens one per "
      "bind in flight): the most binds served at once (1 to 1024)");
  auto* bindDeadline =
      flags.addDuration("bind-deadline", defaults.bindDeadline,
                        "a bind starts no write after this, and calls in flight are cut off; "
                        "keep it below the controller's --device-orphan-grace-period (45s)");
  auto* requiredPlugin = flags.addString(
      "node-agent-plugin", "extended-resource-node-agent",
      "the node agent's NRI plugin name, added to each bound pod's required-plugins annotation "
      "so its containers are refused while the agent is away (\"\": nodes without the agent)");
  auto* preemption = flags.addBool(
      "preemption", true,
      "a pod that fits no node because pods of lower priority hold its matching devices "
      "preempts them (deletes them and keeps the devices for it); needs list/watch/delete on "
      "pods and patch on pods/status");
  auto* schedulerName = flags.addString(
      "scheduler-name", "extended-resource-scheduler",
      "schedulerName of the pods it serves: --preemption watches the bound ones for their "
      "priorities (\"\": every bound pod)");
  auto* logFormat = flags.addString("log-format", "text", "text or json");
  auto* verbosity = flags.addInt("v", 0, "log verbosity");
  if (auto r = flags.parse(argc, argv); r.status != ker::FlagParseResult::kOk) {
    r.print();
    return r.exitCode();
  }
  auto format = ker::log::parseFormat(*logFormat);
  if (!format || (*scoring != "binpack" && *scoring != "spread") ||
      (tlsCert->empty() != tlsKey->empty()) || (!clientCa->empty() && tlsCert->empty()) ||
      *maxBody <= 0 || bindDeadline->count() <= 0 || *httpThreads < 1 || *httpThreads > 1024) {
    std::fprintf(stderr,
                 "invalid flags: --log-format is text|json, --scoring is binpack|spread, "
                 "--tls-cert-file and --tls-private-key-file go together, "
                 "--client-ca-file needs them, --max-body-bytes and --bind-deadline "
                 "are positive, and --http-threads is 1 to 1024\n");
    return 2;
  }
  ker::log::init(*format, static_cast<int>(*verbosity));

  try {
    ker::KubeClient api(ker::KubeConfig::load(*kubeconfig));
    ker::ExtenderConfig config;
    config.bindAddress = *bindAddress;
    config.port = static_cast<int>(*port);
    config.healthPort = static_cast<int>(*healthPort);
    config.healthBindAddress = *healthBindAddress;
    config.tlsCertFile = *tlsCert;
    config.tlsKeyFile = *tlsKey;
    config.clientCaFile = *clientCa;
    config.pathPrefix = *prefix;
    config.scoring =
        *scoring == "spread" ? ker::ScoringStrategy::kSpread : ker::ScoringStrategy::kBinpack;
    config.maxBodyBytes = static_cast<size_t>(*maxBody);
    config.threads = static_cast<size_t>(*httpThreads);
    config.bindDeadline = *bindDeadline;
    config.requiredPlugin = *requiredPlugin;
    config.preemption = *preemption;
    config.schedulerName = *schedulerName;
    ker::ExtenderApp app(api, config);
    app.start();
    int sig = ker::waitForTerminationSignal();
    ker::log::info("shutting down", {{"signal", sig}});
    app.stop();
  } catch (const std::exception& e) {
    ker::log::error("fatal", {{"error", e.what()}});
    return 1;
  }
  return 0;
}

// extended-resource-node-agent: publishes this node's devices as ExtendedResources, reports
// their health, and, as an NRI plugin of the container runtime, gives each container the
// devices its pod's claims were allocated.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "agent/agent_app.h"
#include "common/flags.h"
#include "common/http_server.h"
#include "common/kube_client.h"
#include "common/logging.h"
#include "common/objects.h"
#include "common/signals.h"

int main(int argc, char** argv) {
  ker::blockTerminationSignals();
  ker::ignoreBrokenPipes();
  ker::FlagSet flags("extended-resource-node-agent",
                     "Publishes this node's devices and puts the allocated ones into containers.");
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  const char* envNode = std::getenv("NODE_NAME");
  auto* kubeconfig = flags.addString(
      "kubeconfig", "",
      "kubeconfig file (default: $KUBECONFIG, else in-cluster, else ~/.kube/config)");
  auto* node = flags.addString("node-name", envNode ? envNode : "",
                               "this node's name (default: $NODE_NAME)");
  auto* nodeFile = flags.addString("node-file", "/etc/extended-resource/node-devices.yaml",
                                   "the node configuration file listing this node's devices");
  auto* hostRoot = flags.addString("host-root", "",
                                   "where the host's filesystem is seen, prefixed to device node "
                                   "and mount source paths (\"\" on the host, /host in a pod)");
  auto* socket =
      flags.addString("nri-socket", "/var/run/nri/nri.sock", "the container runtime's NRI socket");
  auto* pluginName = flags.addString("nri-plugin-name", "extended-resource-node-agent",
                                     "the name the agent registers with (pods name it in the "
                                     "runtime's required-plugins annotation)");
  auto* pluginIndex =
      flags.addString("nri-plugin-index", "10", "two digits: the agent's place among plugins");
  auto* syncPeriod = flags.addDuration("sync-period", seconds(5),
                                       "how often the node file is re-read and device health "
                                       "checked");
  auto* liveTimeout = flags.addDuration(
      "live-read-timeout", milliseconds(1000),
      "limit of a claim read made while the runtime waits (below its request timeout, 2s)");
  auto* metricsAddress = flags.addString("metrics-bind-address", ":8082",
                                         "host:port for /healthz, /readyz, /metrics (0: off)");
  auto* logFormat = flags.addString("log-format", "text", "text or json");
  auto* verbosity = flags.addInt("v", 0, "log verbosity");
  if (auto r = flags.parse(argc, argv); r.status != ker::FlagParseResult::kOk) {
    r.print();
    return r.exitCode();
  }
  auto format = ker::log::parseFormat(*logFormat);
  std::string problem;
  if (!format) {
    problem = "--log-format is text or json";
  } else if (!ker::isDns1123Subdomain(*node) || node->size() > 63) {
    problem = "--node-name (or $NODE_NAME) must be this node's name, at most 63 characters";
  } else if (*metricsAddress != "0" && !metricsAddress->empty() &&
             !ker::parseBindAddress(*metricsAddress)) {
    problem = "--metrics-bind-address is host:port";
  } else if (syncPeriod->count() <= 0 || liveTimeout->count() <= 0) {
    problem = "--sync-period and --live-read-timeout must be positive";
  } else if (pluginIndex->size() != 2 ||
             !std::isdigit(static_cast<unsigned char>((*pluginIndex)[0])) ||
             !std::isdigit(static_cast<unsigned char>((*pluginIndex)[1]))) {
    problem = "--nri-plugin-index is two digits";
  }
  if (!problem.empty()) {
    std::fprintf(stderr, "invalid flags: %s\n", problem.c_str());
    return 2;
  }
  ker::log::init(*format, static_cast<int>(*verbosity));

  ker::agent::AgentAppConfig config;
  config.node = *node;
  config.nodeFile = *nodeFile;
  config.hostRoot = *hostRoot;
  config.runtime.socketPath = *socket;
  config.runtime.pluginName = *pluginName;
  config.runtime.pluginIndex = *pluginIndex;
  config.syncPeriod = *syncPeriod;
  config.metricsBindAddress = *metricsAddress;
  try {
    ker::KubeConfig kc = ker::KubeConfig::load(*kubeconfig);
    ker::KubeClient api(kc, {.userAgent = "extended-resource-node-agent",
                             .fieldManager = "extended-resource-node-agent"});
    ker::KubeClient live(kc, {.requestTimeout = *liveTimeout,
                              .connectTimeout = *liveTimeout,
                              .maxRetries = 0,
                              .userAgent = "extended-resource-node-agent",
                              .fieldManager = "extended-resource-node-agent"});
    ker::agent::AgentApp app(api, live, config);
    app.start();
    int sig = ker::waitForTerminationSignal();
    ker::log::info("shutting down", {{"signal", sig}});
    app.stop();
    return 0;
  } catch (const std::exception& e) {
    ker::log::error("fatal", {{"error", e.what()}});
    return 1;
  }
}

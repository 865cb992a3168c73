// extended-resource-node-agent: publishes this node's devices as ExtendedResources, reports
// their health, and, as an NRI plugin of the container runtime, gives each container the
// devices its pod's claims were allocated.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "agent/agent_app.h"
#include "agent/agent_flags.h"
#include "common/flags.h"
#include "common/kube_client.h"
#include "common/logging.h"
#include "common/signals.h"

int main(int argc, char** argv) {
  ker::blockTerminationSignals();
  ker::ignoreBrokenPipes();
  ker::FlagSet flags("extended-resource-node-agent",
                     "Publishes this node's devices and puts the allocated ones into containers.");
  const char* envNode = std::getenv("NODE_NAME");
  const ker::agent::AgentFlags agentFlags(flags, envNode ? envNode : "");
  if (auto r = flags.parse(argc, argv); r.status != ker::FlagParseResult::kOk) {
    r.print();
    return r.exitCode();
  }
  ker::agent::AgentSettings settings;
  if (ker::Status s = agentFlags.settings(settings); !s.ok()) {
    std::fprintf(stderr, "invalid flags: %s\n", s.message().c_str());
    return 2;
  }
  ker::log::init(settings.log.format, settings.log.verbosity);

  try {
    ker::KubeConfig kc = ker::KubeConfig::load(settings.kubeconfig);
    ker::KubeClient api(kc, {.userAgent = "extended-resource-node-agent",
                             .fieldManager = "extended-resource-node-agent"});
    ker::KubeClient live(kc, {.requestTimeout = settings.app.liveReadBudget,
                              .connectTimeout = settings.app.liveReadBudget,
                              .maxRetries = 0,
                              .userAgent = "extended-resource-node-agent",
                              .fieldManager = "extended-resource-node-agent"});
    ker::agent::AgentApp app(api, live, settings.app);
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

#include "agent/agent_app.h"

#include <atomic>
#include <thread>

#include "agent/agent_metrics.h"
#include "agent/claim_source.h"
#include "agent/container_stopper.h"
#include "agent/device_attribution.h"
#include "agent/device_probe.h"
#include "agent/injection_plugin.h"
#include "agent/inventory_plan.h"
#include "agent/node_sync.h"
#include "common/event_recorder.h"
#include "common/http_server.h"
#include "common/informer.h"
#include "common/logging.h"
#include "common/resource.h"
#include "model/objects.h"

namespace ker::agent {

struct AgentApp::Impl {
  Impl(ApiClient& api, ApiClient& liveApi, AgentAppConfig cfg)
      : config(std::move(cfg)),
        metrics(registry),
        devices(api, resources::kExtendedResources,
                {.name = "node-devices",
                 .labelSelector = managedSelector(config.node),
                 .resyncPeriod = std::chrono::minutes(5)}),
        claims(api, resources::kExtendedResourceClaims,
               {.name = "node-claims", .fieldSelector = "status.nodeName=" + config.node}),
        events(api, {.component = "extended-resource-node-agent", .instance = config.node}),
        probe(config.hostRoot, config.cdiSpecDirs),
        claimSource(claims, liveApi),
        sync({.node = config.node, .nodeFile = config.nodeFile, .period = config.syncPeriod}, api,
             devices, claims, probe, events, metrics),
        plugin({.node = config.node,
                .pluginName = config.runtime.pluginName,
                .claims = &claimSource,
                .inventory = [this] { return sync.inventory(); },
                .probe = &probe,
                .metrics = &metrics,
                .stopper = &stopper,
                .users = &users,
                .guard = config.guard}),
        runtime(config.runtime, &plugin, &metrics) {
    auto wake = [this](const auto&...) { sync.wake(); };
    devices.addHandlers({.onAdd = wake, .onUpdate = wake, .onDelete = wake});
    registry.gaugeFunc("extended_resource_agent_node_file_current",
                       "1 when the node file in force is the one on disk (0 while it is "
                       "invalid or unreadable).",
                       [this] { return sync.fileCurrent() ? 1.0 : 0.0; });
    registry.counterFunc("extended_resource_agent_claim_live_reads_total",
                         "Claims read from the API because the cache did not show them bound to "
                         "the pod.",
                         [this] { return static_cast<double>(claimSource.liveReads()); });
    registry.counterFunc("extended_resource_agent_events_sent_total", "Events posted.",
                         [this] { return static_cast<double>(events.stats().sent.load()); });
    exportAttribution(registry, config.node, users, [this] { return sync.inventory(); });
    if (config.admissionPolicy) {
      policy = std::make_unique<AdmissionPolicyCheck>(api, *config.admissionPolicy, &registry);
    }
    if (auto bind = parseBindAddress(config.metricsBindAddress)) {
      server = std::make_unique<HttpServer>(probeServerOptions(bind->first, bind->second));
      server->mountHealth(readyChecks());
      server->mountMetrics(registry);
    }
  }

  std::vector<ReadyCheck> readyChecks() const {
    return {readyWhen(
                "informers-synced", [this] { return devices.hasSynced() && claims.hasSynced(); },
                "the device and claim caches have not synced"),
            readyWhen(
                "runtime-registered", [this] { return runtime.connected(); },
                "not registered with the runtime's NRI socket " + config.runtime.socketPath),
            admissionPolicyReadyCheck(policy.get())};
  }

  AgentAppConfig config;
  metrics::Registry registry;
  AgentMetrics metrics;
  Informer<ExtendedResource> devices;
  Informer<ExtendedResourceClaim> claims;
  EventRecorder events;
  DeviceProbe probe;
  ContainerStopper stopper;  // the host's /proc: the agent runs in the host's PID namespace
  DeviceUsers users;
  CachedClaimSource claimSource;
  NodeSync sync;
  InjectionPlugin plugin;
  RuntimeConnection runtime;
  std::unique_ptr<AdmissionPolicyCheck> policy;
  std::unique_ptr<HttpServer> server;
  std::atomic<bool> stopRuntime{false};
  std::thread runtimeThread;
  bool started = false;
  bool stopped = false;
};

AgentApp::AgentApp(ApiClient& api, ApiClient& liveApi, AgentAppConfig config)
    : impl_(std::make_unique<Impl>(api, liveApi, std::move(config))) {}

AgentApp::~AgentApp() {
  stop();
}

void AgentApp::start() {
  Impl& m = *impl_;
  if (m.server) {
    m.server->start();
  }
  m.events.start();
  m.devices.start();
  m.claims.start();
  m.sync.start();
  if (m.policy) {
    m.policy->start();
  }
  // The claim cache first, so the first containers are answered from it; a live read covers
  // anything it does not show yet, so the wait is bounded.
  if (!m.claims.waitForSync(std::chrono::seconds(10))) {
    log::warn("claim cache not synced after 10s; serving the runtime with live reads");
  }
  m.runtimeThread = std::thread([&m] { m.runtime.run(m.stopRuntime); });
  m.started = true;
  log::info("node agent started", {{"node", m.config.node},
                                   {"nodeFile", m.config.nodeFile},
                                   {"runtimeSocket", m.config.runtime.socketPath}});
}

void AgentApp::stop() {
  Impl& m = *impl_;
  if (m.stopped) {
    return;
  }
  m.stopped = true;
  m.stopRuntime = true;
  if (m.runtimeThread.joinable()) {
    m.runtimeThread.join();
  }
  m.sync.stop();
  m.claims.stop();
  m.devices.stop();
  m.events.flush(std::chrono::seconds(2));
  m.events.stop();
  if (m.policy) {
    m.policy->stop();
  }
  if (m.server) {
    m.server->stop();
  }
}

bool AgentApp::ready() const {
  return allReady(impl_->readyChecks());
}

int AgentApp::metricsPort() const {
  return impl_->server ? impl_->server->port() : 0;
}

}  // namespace ker::agent

#include "agent/agent_app.h"

#include <atomic>
#include <thread>

#include "agent/agent_metrics.h"
#include "agent/capacity.h"
#include "agent/capacity_sync.h"
#include "agent/claim_source.h"
#include "agent/container_stopper.h"
#include "agent/device_attribution.h"
#include "agent/device_probe.h"
#include "agent/injection_plugin.h"
#include "agent/inventory_plan.h"
#include "agent/node_sync.h"
#include "agent/pod_source.h"
#include "common/event_recorder.h"
#include "common/http_server.h"
#include "common/informer.h"
#include "common/logging.h"
#include "common/resource.h"
#include "model/objects.h"
#include "model/resource_class.h"

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
        pods(api, resources::kPods,
             {.name = "node-pods", .fieldSelector = "spec.nodeName=" + config.node}),
        classes(api, resources::kExtendedResourceClasses, {.name = "classes"}),
        nodeObject(api, resources::kNodes,
                   {.name = "node", .fieldSelector = "metadata.name=" + config.node}),
        events(api, {.component = "extended-resource-node-agent", .instance = config.node}),
        probe(config.hostRoot, config.cdiSpecDirs),
        claimSource(claims, liveApi),
        podSource(pods, liveApi),
        sync({.node = config.node,
              .nodeFile = config.nodeFile,
              .stateDir = config.stateDir,
              .period = config.syncPeriod,
              .healthChecked = [this] { capacity.wake(); }},
             api, devices, claims, probe, events, metrics),
        capacity(
            {.node = config.node, .stateDir = config.stateDir}, api, classes, nodeObject,
            [this] { return sync.inventory(); }, [this] { return sync.health(); }, metrics),
        plugin({.node = config.node,
                .pluginName = config.runtime.pluginName,
                .claims = &claimSource,
                .inventory = [this] { return sync.inventory(); },
                .published =
                    [this] {
                      std::vector<ExtendedResource> out;
                      for (const auto& d : devices.list()) {
                        out.push_back(*d);
                      }
                      return out;
                    },
                .probe = &probe,
                .metrics = &metrics,
                .stopper = &stopper,
                .users = &users,
                .guard = config.guard,
                .pods = &podSource,
                .readBudget = config.liveReadBudget,
                .classes = [this]() -> std::optional<ClassTable> {
                  if (!classes.hasSynced()) {
                    return std::nullopt;
                  }
                  return ClassTable(classes.list());
                }}),
        runtime(config.runtime, &plugin, &metrics) {
    auto wake = [this](const auto&...) { sync.wake(); };
    devices.addHandlers({.onAdd = wake, .onUpdate = wake, .onDelete = wake});
    auto recount = [this](const auto&...) { capacity.wake(); };
    classes.addHandlers({.onAdd = recount, .onUpdate = recount, .onDelete = recount});
    nodeObject.addHandlers({.onAdd = recount, .onUpdate = recount});
    registry.gaugeFunc("extended_resource_agent_node_file_current",
                       "1 when the node file in force is the one on disk, or there is none and "
                       "the node has no devices (0 while it is invalid, unreadable, or "
                       "missing after one parsed or while devices of the node are published).",
                       [this] { return sync.fileCurrent() ? 1.0 : 0.0; });
    registry.gaugeFunc(
        "extended_resource_agent_devices_known",
        "0 while no node file is in force (its file is missing or cannot be used, and no copy "
        "of one that parsed was kept): the agent gives no device and refuses containers "
        "reaching /dev; 1 otherwise.",
        [this] { return sync.inventory() ? 1.0 : 0.0; });
    registry.counterFunc("extended_resource_agent_claim_live_reads_total",
                         "Claims read from the API because the cache did not show them bound to "
                         "the pod.",
                         [this] { return static_cast<double>(claimSource.liveReads()); });
    registry.counterFunc("extended_resource_agent_pod_live_reads_total",
                         "Pods read from the API because the cache did not show them (while an "
                         "ExtendedResourceClass exists, a container's pod is read for its "
                         "requests).",
                         [this] { return static_cast<double>(podSource.liveReads()); });
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
                "informers-synced",
                [this] {
                  return devices.hasSynced() && claims.hasSynced() && pods.hasSynced() &&
                         classes.hasSynced() && nodeObject.hasSynced();
                },
                "the device, claim, pod, class and node caches have not synced"),
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
  Informer<NodePod> pods;  // bound to this node: their containers' requests
  Informer<ExtendedResourceClass> classes;
  Informer<NodeResources> nodeObject;  // this node: what its status shows
  EventRecorder events;
  DeviceProbe probe;
  ContainerStopper stopper;  // the host's /proc: the agent runs in the host's PID namespace
  DeviceUsers users;
  CachedClaimSource claimSource;
  CachedPodSource podSource;
  NodeSync sync;
  CapacitySync capacity;
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
  m.pods.start();
  m.classes.start();
  m.nodeObject.start();
  m.capacity.start();
  if (m.policy) {
    m.policy->start();
  }
  // The claim and pod caches first, so the first containers are answered from them; a live
  // read covers anything they do not show yet, so the wait is bounded. Until the classes are
  // read, a pod asking for an extended resource is refused (the kubelet retries). The devices
  // too: the runtime's first list is matched against them (DeviceUsers::reset).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto left = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                 std::chrono::steady_clock::now());
  };
  // Each one waited for (within what is left), even after another timed out.
  bool synced = m.claims.waitForSync(left());
  synced = m.pods.waitForSync(left()) && synced;
  synced = m.classes.waitForSync(left()) && synced;
  synced = m.devices.waitForSync(left()) && synced;
  if (!synced) {
    log::warn(
        "claim, pod, class or device cache not synced after 10s; serving the runtime with live "
        "reads");
  }
  m.sync.start();  // after the device cache: a node without a file may have published devices
  m.runtimeThread = std::thread([&m] { m.runtime.run(m.stopRuntime); });
  m.started = true;
  log::info("node agent started", {{"node", m.config.node},
                                   {"nodeFile", m.config.nodeFile},
                                   {"stateDir", m.config.stateDir},
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
  m.capacity.stop();
  m.sync.stop();
  m.nodeObject.stop();
  m.classes.stop();
  m.pods.stop();
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

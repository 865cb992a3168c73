#include "controller/controller_app.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/event_recorder.h"
#include "common/http_server.h"
#include "common/informer.h"
#include "common/logging.h"
#include "common/metrics.h"
#include "controller/allocation_latency.h"
#include "controller/census.h"
#include "model/objects.h"

namespace ker {

namespace {

LeaderElectionConfig withIdentity(LeaderElectionConfig c) {
  if (c.identity.empty()) {
    c.identity = defaultIdentity();
  }
  return c;
}

InformerOptions informerOptions(Millis resync) {
  InformerOptions o;
  o.resyncPeriod = resync;
  return o;
}

}  // namespace

struct ControllerApp::Impl {
  Impl(ApiClient& apiClient, ControllerAppConfig c, std::function<void()> onLost)
      : api(apiClient),
        config(std::move(c)),
        onLeadershipLost(std::move(onLost)),
        electionConfig(withIdentity(config.leaderElection)),
        events(api,
               [&] {
                 EventRecorderOptions o;
                 o.instance = electionConfig.identity;
                 // Room for a mass release or a burst of binds (an event per claim), and
                 // posters enough for them: with one, a 500-pod burst left most of its
                 // claims' Bound events queued for seconds after the pods were bound.
                 o.queueSize = 10000;
                 o.posters = 4;
                 return o;
               }()),
        pods(api, resources::kPods),
        claims(api, resources::kExtendedResourceClaims, informerOptions(config.resyncPeriod)),
        devices(api, resources::kExtendedResources, informerOptions(config.resyncPeriod)),
        templates(api, resources::kExtendedResourceClaimTemplates,
                  informerOptions(config.resyncPeriod)),
        classes(api, resources::kExtendedResourceClasses, informerOptions(config.resyncPeriod)),
        nodes(api, resources::kNodes) {
    if (config.leaderElect) {
      elector = std::make_unique<LeaderElector>(
          api, electionConfig,
          LeaderCallbacks{
              .onStartedLeading = [this] { mayStart(); },
              .onStoppedLeading = [this] { stoppedLeading(); },
              .onNewLeader =
                  [](const std::string& id) {
                    log::info("new leader observed", {{"leader", id}});
                  },
          });
    }
    controller = std::make_unique<Controller>(
        api, pods, claims, devices, &events, registry,
        [this] { return !elector || elector->isLeader(); }, config.controller);
    controller->watchTemplates(templates);
    controller->watchClasses(classes);
    controller->watchNodes(nodes);

    exportCensus(
        registry, [this] { return devices.list(); }, [this] { return claims.list(); });
    auto& allocation = registry.histogram(
        "extended_resource_pod_allocation_seconds",
        "Time from a device pod's creation to bound (PodScheduled) and to running (Ready), by "
        "stage, as its conditions date them; observed by the leader.",
        {"stage"}, {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600});
    pods.addHandlers({.onUpdate = [this, &allocation](const auto& before, const auto& after) {
      if (!leading()) {
        return;
      }
      for (const auto& s : stagesReached(*before, *after)) {
        allocation.labels({toString(s.stage)}).observe(s.seconds);
      }
    }});
    registry.gaugeFunc("extended_resource_controller_leader",
                       "1 while this process holds the lease and may write.",
                       [this] { return leading() ? 1.0 : 0.0; });
    registry.counterFunc("extended_resource_controller_events_sent_total", "Events posted.",
                         [this] { return static_cast<double>(events.stats().sent.load()); });
    registry.counterFunc("extended_resource_controller_events_dropped_total",
                         "Events dropped because the queue was full or the recorder stopped.",
                         [this] { return static_cast<double>(events.stats().dropped.load()); });
    registry.counterFunc("extended_resource_controller_events_failed_total",
                         "Events the API refused or could not be sent.",
                         [this] { return static_cast<double>(events.stats().failed.load()); });

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
                "informers-synced", [this] { return synced(); },
                "the pod, claim, device, template, class and node caches have not synced"),
            admissionPolicyReadyCheck(policy.get())};
  }

  bool synced() const {
    return pods.hasSynced() && claims.hasSynced() && devices.hasSynced() && templates.hasSynced() &&
           classes.hasSynced() && nodes.hasSynced();
  }
  bool leading() const { return elector ? elector->isLeader() : started.load(); }

  void mayStart() {
    {
      std::lock_guard lock(mu);
      allowed = true;
    }
    cv.notify_all();
  }

  void stoppedLeading() {
    bool fatal;
    {
      std::lock_guard lock(mu);
      fatal = !stopping;
      lost = lost || fatal;
    }
    cv.notify_all();
    if (fatal) {
      log::error("leadership lost: stopping all writes", {{"identity", electionConfig.identity}});
      if (onLeadershipLost) {
        onLeadershipLost();
      }
    }
  }

  // Starts the loop once allowed to (leading, or no election) and the caches have synced.
  void run() {
    std::unique_lock lock(mu);
    cv.wait(lock, [this] { return stopping || lost || allowed; });
    while (!stopping && !lost && !synced()) {
      cv.wait_for(lock, std::chrono::milliseconds(50));
    }
    if (stopping || lost) {
      return;
    }
    started = true;
    lock.unlock();
    log::info("caches synced; starting the reconcile loop");
    controller->start();
  }

  ApiClient& api;
  const ControllerAppConfig config;
  const std::function<void()> onLeadershipLost;
  const LeaderElectionConfig electionConfig;
  metrics::Registry registry;
  EventRecorder events;
  Informer<WatchedPod> pods;
  Informer<ExtendedResourceClaim> claims;
  Informer<ExtendedResource> devices;
  Informer<ExtendedResourceClaimTemplate> templates;
  Informer<ExtendedResourceClass> classes;
  Informer<Node> nodes;
  std::unique_ptr<LeaderElector> elector;
  std::unique_ptr<Controller> controller;
  std::unique_ptr<AdmissionPolicyCheck> policy;
  std::unique_ptr<HttpServer> server;

  mutable std::mutex mu;
  std::condition_variable cv;
  bool allowed = false;
  bool stopping = false;
  bool lost = false;
  std::atomic<bool> started{false};
  bool stopped = false;
  std::thread runner;
};

ControllerApp::ControllerApp(ApiClient& api, ControllerAppConfig config,
                             std::function<void()> onLeadershipLost)
    : impl_(std::make_unique<Impl>(api, std::move(config), std::move(onLeadershipLost))) {}

ControllerApp::~ControllerApp() {
  stop();
}

void ControllerApp::start() {
  Impl& i = *impl_;
  if (i.server) {
    i.server->start();
    log::info("serving health and metrics", {{"port", i.server->port()}});
  }
  i.events.start();
  i.pods.start();
  i.claims.start();
  i.devices.start();
  i.templates.start();
  i.classes.start();
  i.nodes.start();
  if (i.policy) {
    i.policy->start();
  }
  i.runner = std::thread([&i] { i.run(); });
  if (i.elector) {
    log::info("starting leader election",
              {{"lease", i.electionConfig.ns + "/" + i.electionConfig.name},
               {"identity", i.electionConfig.identity}});
    i.elector->start();
  } else {
    i.mayStart();
  }
}

void ControllerApp::stop() {
  Impl& i = *impl_;
  bool lost;
  {
    std::lock_guard lock(i.mu);
    if (i.stopped) {
      return;
    }
    i.stopped = true;
    i.stopping = true;
    lost = i.lost;
  }
  i.cv.notify_all();
  if (i.runner.joinable()) {
    i.runner.join();
  }
  // The loop stops writing before the lease is given up, so no successor ever overlaps it.
  i.controller->stop();
  if (i.elector) {
    i.elector->stop();
  }
  i.pods.stop();
  i.claims.stop();
  i.devices.stop();
  i.templates.stop();
  i.classes.stop();
  i.nodes.stop();
  if (!lost) {
    i.events.flush(std::chrono::seconds(2));
  }
  i.events.stop();
  if (i.policy) {
    i.policy->stop();
  }
  if (i.server) {
    i.server->stop();
  }
}

bool ControllerApp::ready() const {
  return allReady(impl_->readyChecks());
}
bool ControllerApp::leading() const {
  return impl_->leading();
}

bool ControllerApp::leadershipLost() const {
  std::lock_guard lock(impl_->mu);
  return impl_->lost;
}

int ControllerApp::metricsPort() const {
  return impl_->server ? impl_->server->port() : 0;
}

}  // namespace ker

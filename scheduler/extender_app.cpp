#include "scheduler/extender_app.h"

#include <cstdlib>

#include "common/api_error.h"
#include "common/event_recorder.h"
#include "common/http_server.h"
#include "common/informer.h"
#include "common/logging.h"
#include "common/metrics.h"
#include "model/objects.h"
#include "model/typed_client.h"
#include "scheduler/bind/binder.h"
#include "scheduler/extender.h"
#include "scheduler/extender_handlers.h"
#include "scheduler/fit/claim_lookup.h"
#include "scheduler/preemption/preemption_worker.h"

namespace ker {

namespace {

std::string joinPath(const std::string& prefix, const std::string& verb) {
  std::string p = prefix.empty() || prefix.front() != '/' ? "/" + prefix : prefix;
  while (p.size() > 1 && p.back() == '/') {
    p.pop_back();
  }
  return (p == "/" ? "" : p) + "/" + verb;
}

HttpServerOptions serverOptions(const std::string& address, int port, const ExtenderConfig& c,
                                bool tls) {
  HttpServerOptions o;
  o.bindAddress = address;
  o.port = port;
  o.maxBodyBytes = c.maxBodyBytes;
  o.threads = c.threads;
  if (tls) {
    o.certFile = c.tlsCertFile;
    o.keyFile = c.tlsKeyFile;
    o.clientCaFile = c.clientCaFile;
    o.allowedClientNames = c.tlsAllowedClientNames;
  }
  return o;
}

std::string boundPodsSelector(const std::string& schedulerName) {
  return schedulerName.empty() ? "spec.nodeName!="
                               : "spec.nodeName!=,spec.schedulerName=" + schedulerName;
}

}  // namespace

struct ExtenderApp::Impl {
  Impl(ApiClient& apiClient, ExtenderConfig c)
      : api(apiClient),
        config(std::move(c)),
        devices(api, resources::kExtendedResources),
        claims(api, resources::kExtendedResourceClaims),
        nodes(api, resources::kNodes),
        classes(api, resources::kExtendedResourceClasses),
        // Pods not yet bound: one leaving this view was deleted or bound, and what the
        // filter held for it is let go at once rather than when the hold expires.
        unboundPods(api, resources::kPods,
                    {.name = "unbound pods", .fieldSelector = "spec.nodeName="}),
        // Bound pods of this profile, for the priorities of the pods holding claims (preemption
        // only): the extender binds only pods of its profile, so no other pod holds a claim.
        boundPods(api, resources::kPods,
                  {.name = "bound pods", .fieldSelector = boundPodsSelector(config.schedulerName)}),
        budgets(api, resources::kPodDisruptionBudgets, {.name = "pod disruption budgets"}),
        events(api, {.component = "extended-resource-scheduler"}),
        preemptionWorker(
            api, events,
            {.schedulerName = config.schedulerName,
             .onFailed =
                 [this](const std::string& preemptorUid) { index.dropNomination(preemptorUid); }}),
        binder(api, index,
               [this](const std::string& node) {
                 if (auto cached = nodes.get(node)) {
                   return cached->meta.labels;
                 }
                 return readObject<Node>(api, "", node).meta.labels;
               },
               {.deadline = config.bindDeadline,
                .requiredPlugin = config.requiredPlugin,
                .schedulerName = config.schedulerName,
                .scoring = config.scoring},
               {.pods = [this](const std::string& key) { return unboundPods.get(key); },
                .claims = [this](const std::string& key) { return claims.get(key); },
                .classes = [this] { return classes.list(); }}),
        extender(
            index, cacheThenLive([this](const std::string& key) { return claims.get(key); }, api),
            [this](const std::string& node) { return nodes.get(node); }, binder, config.scoring,
            [this](const std::string& key) { return claims.get(key); }),
        handlers(extender, registry, [this] { return awaitSynced(kSyncWait); }) {
#ifdef KER_FAILPOINTS
    if (const char* n = std::getenv("KER_FAILPOINT_STALE_DEVICE_WRITES")) {
      const int writes = std::atoi(n);
      binder.injectStaleDeviceWrites(writes);
      log::warn("failpoint: the next device writes carry a stale resourceVersion",
                {{"writes", writes}});
    }
#endif
    extender.serveClasses([this] { return classes.list(); });
    devices.addHandlers({
        .onAdd = [this](const auto& d) { index.upsert(d); },
        .onUpdate = [this](const auto&, const auto& d) { index.upsert(d); },
        .onDelete = [this](const auto& d) { index.remove(d->meta.name); },
    });
    auto hold = [this](const ExtendedResourceClaim& c) {
      const std::string key = objectKey(c.meta.ns, c.meta.name);
      index.setClaim(key, c.heldByResource(), allocationOf(c));
    };
    claims.addHandlers({
        .onAdd = [hold](const auto& c) { hold(*c); },
        .onUpdate = [hold](const auto&, const auto& c) { hold(*c); },
        .onDelete =
            [this](const auto& c) {
              const std::string key = objectKey(c->meta.ns, c->meta.name);
              index.setClaimDevices(key, DeviceIndex::Holds{});
              index.claimDeleted(key, allocationOf(*c));
            },
    });
    if (config.preemption) {
      extender.enablePreemption({
          // Until the budgets are listed every budget would read as unviolated: no pod is
          // known then, so none is a victim.
          .pods = [this](const std::string& key) -> PodPtr {
            return budgets.hasSynced() ? boundPods.get(key) : nullptr;
          },
          .submit =
              [this](PreemptionOrder order) { return preemptionWorker.submit(std::move(order)); },
          .lowestPriority = [this] { return priorityFloor.lowest(); },
          .budgets = [this] { return budgets.list(); },
      });
      boundPods.addHandlers({
          .onAdd = [this](const auto& p) { priorityFloor.set(p->meta.uid, p->priority); },
          .onUpdate = [this](const auto&,
                             const auto& p) { priorityFloor.set(p->meta.uid, p->priority); },
          .onDelete = [this](const auto& p) { priorityFloor.erase(p->meta.uid); },
      });
      registry.counterFunc(
          "extended_resource_scheduler_preemptions_total",
          "Preemptions decided by the filter: victims handed to the worker.",
          [this] { return static_cast<double>(extender.stats().preemptions.load()); });
      registry.gaugeFunc("extended_resource_scheduler_nominations",
                         "Pods whose preemption keeps devices for them.",
                         [this] { return static_cast<double>(index.nominatedPods()); });
    }
    unboundPods.addHandlers({
        .onUpdate =
            [this](const auto&, const auto& p) {
              if (p->meta.deleting) {
                extender.forgetPod(p->meta.uid);
              }
            },
        .onDelete = [this](const auto& p) { extender.forgetPod(p->meta.uid); },
    });
    registry.gaugeFunc("extended_resource_scheduler_cached_devices", "Devices in the cache.",
                       [this] { return static_cast<double>(index.size()); });
    registry.gaugeFunc("extended_resource_scheduler_cached_claims", "Claims in the cache.",
                       [this] { return static_cast<double>(claims.size()); });
    registry.gaugeFunc("extended_resource_scheduler_cached_nodes", "Nodes in the cache.",
                       [this] { return static_cast<double>(nodes.size()); });
    registry.gaugeFunc("extended_resource_scheduler_held_devices",
                       "Device names that Bound or Lost claims list, never offered to others.",
                       [this] { return static_cast<double>(index.claimedCount()); });
    registry.gaugeFunc("extended_resource_scheduler_reserved_devices",
                       "Devices held by binds in flight.",
                       [this] { return static_cast<double>(index.holdCount(HoldKind::kBind)); });
    registry.gaugeFunc("extended_resource_scheduler_filter_holds",
                       "Pods whose devices the filter holds until their bind.",
                       [this] { return static_cast<double>(index.filteredPods()); });
    registry.counterFunc(
        "extended_resource_scheduler_allocation_conflicts_total",
        "Bind writes that lost an optimistic-concurrency race and were re-decided.",
        [this] { return static_cast<double>(binder.stats().conflicts.load()); });
    registry.counterFunc("extended_resource_scheduler_bind_undos_total",
                         "Bind attempts rolled back.",
                         [this] { return static_cast<double>(binder.stats().undos.load()); });
    registry.counterFunc("extended_resource_scheduler_api_writes_total",
                         "API writes made by binds.",
                         [this] { return static_cast<double>(binder.stats().apiWrites.load()); });

    const bool tls = !config.tlsCertFile.empty();
    main =
        std::make_unique<HttpServer>(serverOptions(config.bindAddress, config.port, config, tls));
    auto route = [this](auto method) {
      return [this, method](const HttpRequest& req) { return (handlers.*method)(req.body); };
    };
    main->post(joinPath(config.pathPrefix, "filter"), route(&ExtenderHandlers::filter));
    main->post(joinPath(config.pathPrefix, "prioritize"), route(&ExtenderHandlers::prioritize));
    main->post(joinPath(config.pathPrefix, "bind"), route(&ExtenderHandlers::bind));
    main->post(joinPath(config.pathPrefix, "preempt"), route(&ExtenderHandlers::preempt));
    HttpServer* healthServer = main.get();
    if (config.healthPort != 0) {
      health = std::make_unique<HttpServer>(
          probeServerOptions(config.healthBindAddress, config.healthPort));
      healthServer = health.get();
    }
    if (config.admissionPolicy) {
      policy = std::make_unique<AdmissionPolicyCheck>(api, *config.admissionPolicy, &registry);
    }
    healthServer->mountHealth(readyChecks());
    healthServer->mountMetrics(registry);
  }

  std::vector<ReadyCheck> readyChecks() const {
    return {readyWhen(
                "informers-synced", [this] { return synced() && preemptionSynced(); },
                "the device, claim, node and class caches (with --preemption, the bound pod and "
                "PodDisruptionBudget caches too) have not synced"),
            admissionPolicyReadyCheck(policy.get())};
  }

  // What requests wait for.
  bool synced() const {
    return devices.hasSynced() && claims.hasSynced() && nodes.hasSynced() && classes.hasSynced();
  }
  // With preemption, victims come from the bound pods and are counted against the budgets. Until
  // both are listed, requests are still served but no victim is added (the `pods` hook knows no
  // pod), and readiness says so.
  bool preemptionSynced() const {
    return !config.preemption || (boundPods.hasSynced() && budgets.hasSynced());
  }
  // A request that comes while the caches are still listing (just after start) is answered
  // once they have, rather than refused.
  bool awaitSynced(std::chrono::milliseconds wait) const {
    if (synced()) {
      return true;
    }
    const auto deadline = std::chrono::steady_clock::now() + wait;
    auto left = [&] {
      return std::max(std::chrono::milliseconds(0),
                      std::chrono::ceil<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now()));
    };
    return devices.waitForSync(left()) && claims.waitForSync(left()) && nodes.waitForSync(left()) &&
           classes.waitForSync(left());
  }
  static constexpr std::chrono::milliseconds kSyncWait{std::chrono::seconds(5)};

  ApiClient& api;
  ExtenderConfig config;
  metrics::Registry registry;
  DeviceIndex index;
  Informer<ExtendedResource> devices;
  Informer<ExtendedResourceClaim> claims;
  Informer<Node> nodes;
  Informer<ExtendedResourceClass> classes;
  Informer<Pod> unboundPods;
  Informer<Pod> boundPods;
  PriorityFloor priorityFloor;
  Informer<PodDisruptionBudget> budgets;
  EventRecorder events;
  PreemptionWorker preemptionWorker;
  Binder binder;
  Extender extender;
  ExtenderHandlers handlers;
  std::unique_ptr<AdmissionPolicyCheck> policy;
  std::unique_ptr<HttpServer> main;
  std::unique_ptr<HttpServer> health;
};

ExtenderApp::ExtenderApp(ApiClient& api, ExtenderConfig config)
    : impl_(std::make_unique<Impl>(api, std::move(config))) {}

ExtenderApp::~ExtenderApp() {
  stop();
}

void ExtenderApp::start() {
  impl_->devices.start();
  impl_->claims.start();
  impl_->nodes.start();
  impl_->classes.start();
  impl_->unboundPods.start();
  if (impl_->config.preemption) {
    impl_->boundPods.start();
    impl_->budgets.start();
    impl_->events.start();
    impl_->preemptionWorker.start();
  }
  if (impl_->policy) {
    impl_->policy->start();
  }
  impl_->main->start();
  if (impl_->health) {
    impl_->health->start();
  }
  log::info("extender serving", {{"address", impl_->config.bindAddress},
                                 {"port", impl_->main->port()},
                                 {"tls", impl_->main->tls()}});
}

void ExtenderApp::stop() {
  if (!impl_) {
    return;
  }
  impl_->main->stop();
  if (impl_->health) {
    impl_->health->stop();
  }
  impl_->devices.stop();
  impl_->claims.stop();
  impl_->nodes.stop();
  impl_->classes.stop();
  impl_->unboundPods.stop();
  impl_->preemptionWorker.stop();
  impl_->events.stop();
  impl_->boundPods.stop();
  impl_->budgets.stop();
  if (impl_->policy) {
    impl_->policy->stop();
  }
}

bool ExtenderApp::ready() const {
  return allReady(impl_->readyChecks());
}
int ExtenderApp::port() const {
  return impl_->main->port();
}
int ExtenderApp::healthPort() const {
  return impl_->health ? impl_->health->port() : impl_->main->port();
}

}  // namespace ker

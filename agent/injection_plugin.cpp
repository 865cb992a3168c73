#include "agent/injection_plugin.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "agent/device_identity.h"
#include "common/comma_list.h"
#include "common/logging.h"
#include "common/request_deadline.h"

namespace ker::agent {

namespace {

PodIdentity identityOf(const nri::PodSandbox& pod) {
  PodIdentity id;
  id.uid = pod.uid();
  id.ns = pod.namespace_();
  id.name = pod.name();
  id.annotations.insert(pod.annotations().begin(), pod.annotations().end());
  return id;
}

const char* resultOf(const Injection& inj) {
  if (const auto* adj = std::get_if<Adjustment>(&inj)) {
    return onlyEmptiesVariables(*adj) ? "emptied" : "injected";
  }
  return std::holds_alternative<Refusal>(inj) ? "refused" : "untouched";
}

}  // namespace

ContainerRequest containerRequestOf(const nri::Container& c) {
  ContainerRequest out;
  for (const auto& kv : c.env()) {
    out.envNames.push_back(kv.substr(0, kv.find('=')));
  }
  for (const auto& m : c.mounts()) {
    out.mountSources.push_back(m.source());
    out.mountsSubPath |= m.source().find(kSubPathMountFolder) != std::string::npos;
  }
  for (const auto& d : c.linux().devices()) {
    out.devices[d.path()] = DeviceNumber{d.type() == "b" ? 'b' : 'c', d.major(), d.minor()};
  }
  out.name = c.name();
  return out;
}

RuntimeContainer runtimeContainerOf(const nri::Container& c) {
  RuntimeContainer out;
  out.id = c.id();
  out.name = c.name();
  out.podSandboxId = c.pod_sandbox_id();
  out.running = c.state() == nri::CONTAINER_RUNNING;
  out.stopped = c.state() == nri::CONTAINER_STOPPED;
  out.pid = c.pid();
  out.annotations.insert(c.annotations().begin(), c.annotations().end());
  out.request = containerRequestOf(c);
  for (const auto& kv : c.env()) {
    if (const size_t eq = kv.find('='); eq != std::string::npos && eq + 1 < kv.size()) {
      out.valuedEnvNames.push_back(kv.substr(0, eq));
    }
  }
  return out;
}

void toAdjustment(const Adjustment& adj, nri::ContainerAdjustment* out) {
  (*out->mutable_annotations())[kInjectedAnnotation] = joinCommaList(adj.deviceNames);
  (*out->mutable_annotations())[kInjectedKeysAnnotation] =
      nlohmann::json(adj.deviceKeys).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  for (const auto& [k, v] : adj.env) {
    auto* kv = out->add_env();
    kv->set_key(k);
    kv->set_value(v);
  }
  for (const auto& name : adj.cdiDevices) {
    out->add_cdi_devices()->set_name(name);
  }
  for (const auto& m : adj.mounts) {
    auto* mount = out->add_mounts();
    mount->set_destination(m.destination);
    mount->set_source(m.source);
    mount->set_type("bind");
    mount->add_options("rbind");
    mount->add_options(m.readOnly ? "ro" : "rw");
  }
  for (const auto& d : adj.devices) {
    auto* dev = out->mutable_linux()->add_devices();
    dev->set_path(d.path);
    dev->set_type(std::string(1, d.info.type));
    dev->set_major(d.info.major);
    dev->set_minor(d.info.minor);
    dev->mutable_file_mode()->set_value(d.info.fileMode);
    dev->mutable_uid()->set_value(d.info.uid);
    dev->mutable_gid()->set_value(d.info.gid);
    auto* rule = out->mutable_linux()->mutable_resources()->add_devices();
    rule->set_allow(true);
    rule->set_type(std::string(1, d.info.type));
    rule->mutable_major()->set_value(d.info.major);
    rule->mutable_minor()->set_value(d.info.minor);
    rule->set_access(d.permissions);
  }
}

std::chrono::milliseconds readBudgetFor(std::chrono::milliseconds configured,
                                        std::chrono::milliseconds runtimeTimeout) {
  using std::chrono::milliseconds;
  if (runtimeTimeout <= milliseconds(0)) {
    return configured;
  }
  const milliseconds kept =
      std::min(std::max(runtimeTimeout / 4, milliseconds(250)), runtimeTimeout / 2);
  return std::max(milliseconds(1), std::min(configured, runtimeTimeout - kept));
}

nri::Status InjectionPlugin::configure(const nri::ConfigureRequest& req,
                                       nri::ConfigureResponse* resp) {
  const auto budget =
      readBudgetFor(deps_.readBudget, std::chrono::milliseconds(req.request_timeout()));
  readBudgetMs_ = budget.count();
  log::info("registered with the container runtime", {{"runtime", req.runtime_name()},
                                                      {"version", req.runtime_version()},
                                                      {"requestTimeoutMs", req.request_timeout()},
                                                      {"readBudgetMs", budget.count()}});
  syncPods_.clear();  // a new connection: a split Synchronize of an earlier one is void
  syncContainers_.clear();
  resp->set_events(nri::eventBit(nri::CREATE_CONTAINER) | nri::eventBit(nri::POST_START_CONTAINER) |
                   nri::eventBit(nri::STOP_CONTAINER) | nri::eventBit(nri::REMOVE_CONTAINER));
  return nri::Status::ok();
}

nri::Status InjectionPlugin::synchronize(const nri::SynchronizeRequest& req,
                                         nri::SynchronizeResponse* resp) {
  for (const auto& p : req.pods()) {
    syncPods_[p.id()] = identityOf(p);
  }
  for (const auto& c : req.containers()) {
    syncContainers_.push_back(runtimeContainerOf(c));
  }
  if (req.more()) {
    resp->set_more(true);
    return nri::Status::ok();
  }
  const std::map<std::string, PodIdentity> pods = std::move(syncPods_);
  const std::vector<RuntimeContainer> containers = std::move(syncContainers_);
  syncPods_.clear();
  syncContainers_.clear();
  const auto inventory = deps_.inventory();
  deps_.users->reset(
      pods, containers,
      knownKeys(inventory ? *inventory : NodeFile{},
                deps_.published ? deps_.published() : std::vector<ExtendedResource>{}));
  evict(planEvictions(pods, containers, deps_.pluginName));
  evict(guardEvictions(pods, containers));
  return nri::Status::ok();
}

std::string InjectionPlugin::probeSource(const std::string& path,
                                         ContainerRequest& container) const {
  std::string source = deps_.probe->resolve(path);
  // A filesystem's name ("proc", "tmpfs") is no host path.
  if (!source.empty() && source.front() == '/') {
    if (auto node = deps_.probe->deviceNode(source)) {
      container.mountedNodes[source] = node->number();
    }
  }
  return source;
}

void InjectionPlugin::probeMounts(ContainerRequest& container) const {
  for (auto& source : container.mountSources) {
    source = probeSource(source, container);
  }
}

std::map<DeviceNumber, std::string> InjectionPlugin::managedNumbers(
    const NodeFile& inventory) const {
  std::map<DeviceNumber, std::string> out;
  for (const auto& d : inventory.devices) {
    for (const auto& n : d.deviceNodes) {
      if (auto node = deps_.probe->deviceNode(n.path)) {
        out.emplace(node->number(), n.path);
      }
    }
  }
  return out;
}

std::vector<Eviction> InjectionPlugin::guardEvictions(
    const std::map<std::string, PodIdentity>& pods, std::vector<RuntimeContainer> containers) {
  const auto inventory = deps_.inventory();
  for (auto& c : containers) {
    auto pod = pods.find(c.podSandboxId);
    if (c.running && !c.annotations.contains(kInjectedAnnotation) && pod != pods.end() &&
        deps_.guard.checks(pod->second.ns)) {
      probeMounts(c.request);
    }
  }
  std::map<DeviceNumber, std::string> numbers;
  if (inventory && std::any_of(containers.begin(), containers.end(),
                               [](const auto& c) { return managedNumbersNeeded(c.request); })) {
    numbers = managedNumbers(*inventory);
  }
  std::vector<std::string> names;
  for (const auto& c : containers) {
    names.insert(names.end(), c.valuedEnvNames.begin(), c.valuedEnvNames.end());
  }
  return planGuardEvictions(pods, containers, inventory.get(), numbers,
                            publishedResources(inventory.get(), names), deps_.guard,
                            deps_.pluginName, static_cast<uint32_t>(::getpid()));
}

std::set<std::string> InjectionPlugin::publishedResources(
    const NodeFile* inventory, const std::vector<std::string>& envNames) {
  std::set<std::string> out;
  const bool asked = inventory && deps_.published &&
                     std::any_of(envNames.begin(), envNames.end(), [&](const std::string& name) {
                       return namedAsDeviceVariable(*inventory, name);
                     });
  if (asked) {
    for (const auto& d : deps_.published()) {
      out.insert(d.rawResourceName);
    }
  }
  return out;
}

nri::Status InjectionPlugin::stopContainer(const nri::StopContainerRequest& req,
                                           nri::StopContainerResponse*) {
  deps_.users->remove(req.container().id());
  return nri::Status::ok();
}

nri::Status InjectionPlugin::lifecycleEvent(nri::Event event, const nri::PodSandbox& pod,
                                            const nri::Container* container) {
  if (event == nri::REMOVE_CONTAINER && container != nullptr) {
    deps_.users->remove(container->id());
  }
  if (event == nri::POST_START_CONTAINER && container != nullptr) {
    const std::map<std::string, PodIdentity> pods{{pod.id(), identityOf(pod)}};
    const RuntimeContainer started = runtimeContainerOf(*container);
    evict(planEvictions(pods, {started}, deps_.pluginName));
    evict(guardEvictions(pods, {started}));
  }
  return nri::Status::ok();
}

void InjectionPlugin::evict(const std::vector<Eviction>& plan) {
  for (const auto& e : plan) {
    Status s = deps_.stopper->stop(e.pid, e.containerId);
    if (!s.ok()) {
      log::error("container started without the node agent's answer; could not stop it",
                 {{"pod", e.pod},
                  {"container", e.container},
                  {"containerID", e.containerId},
                  {"pid", e.pid},
                  {"error", s.toString()}});
      continue;
    }
    deps_.metrics->evictions.inc();
    log::warn(
        "container started without the node agent's answer; stopped it so it is created "
        "again",
        {{"pod", e.pod},
         {"container", e.container},
         {"containerID", e.containerId},
         {"pid", e.pid},
         {"reason", e.reason}});
  }
}

Injection InjectionPlugin::decide(const PodIdentity& pod, const ContainerRequest& container) {
  InjectionInput in;
  in.pod = &pod;
  in.node = deps_.node;
  in.named = namedClaims(pod);
  in.container = container;
  // Only the guard reads the mounts: their symlinks are resolved (on the host) for it alone.
  if (deps_.guard.checks(pod.ns)) {
    probeMounts(in.container);
  }
  in.guard = deps_.guard;
  auto inventory = deps_.inventory();
  in.inventory = inventory.get();
  in.publishedResources = publishedResources(in.inventory, in.container.envNames);
  const std::optional<ClassTable> classes = deps_.classes ? deps_.classes() : ClassTable();
  in.classes = classes ? &*classes : nullptr;
  // Without classes no request needs a claim, and a pod naming none is answered without lookups
  // unless a subPath mount's host path is to be checked, or a device variable it carries may be
  // one its spec sets.
  const bool checkSubPaths = deps_.guard.checks(pod.ns) && in.container.mountsSubPath;
  const bool checkVariables =
      deps_.guard.checks(pod.ns) &&
      std::any_of(in.container.envNames.begin(), in.container.envNames.end(),
                  [&](const std::string& name) {
                    return deviceVariable(in.inventory, in.publishedResources, name);
                  });
  if (in.named.invalid.empty() && fromApiServer(pod) &&
      (!classes || !classes->empty() || checkSubPaths || checkVariables)) {
    PodSource::Result r = deps_.pods->get(pod.ns, pod.name, pod.uid);
    if (!r.status.ok()) {
      in.podUnreadable = r.status.message();
    } else if (!r.pod) {
      in.podUnreadable = "no pod of uid " + pod.uid + " exists";
    } else if (!r.pod->invalid.empty()) {
      in.podUnreadable = r.pod->invalid;
    } else {
      in.requests = r.pod->extendedRequests;
      in.schedulerName = r.pod->schedulerName;
      auto specEnv = r.pod->specEnvNames.find(container.name);
      in.container.specEnvNames =
          specEnv == r.pod->specEnvNames.end() ? std::vector<std::string>{} : specEnv->second;
      if (auto paths = r.pod->hostSubPaths.find(container.name);
          checkSubPaths && paths != r.pod->hostSubPaths.end()) {
        for (const auto& path : paths->second) {
          in.container.subPathSources.push_back(probeSource(path, in.container));
        }
      }
    }
  }
  if (inventory && deps_.guard.checks(pod.ns) && managedNumbersNeeded(in.container)) {
    in.managedNumbers = managedNumbers(*inventory);
  }
  if (!in.named.invalid.empty() || in.named.names.empty()) {
    return decideInjection(in);  // no claims to look up
  }
  std::vector<std::shared_ptr<const ExtendedResourceClaim>> keep;
  std::vector<const ExtendedResourceClaim*> found;
  for (const auto& name : in.named.names) {
    ClaimSource::Result r = deps_.claims->get(pod.ns, name, pod.uid);
    if (!r.status.ok()) {
      in.unreadable[name] = r.status.message();
      continue;
    }
    in.claims[name] = r.claim.get();
    if (r.claim) {
      found.push_back(r.claim.get());
      keep.push_back(std::move(r.claim));
    }
  }
  if (!inventory) {
    return decideInjection(in);  // no device of the node is known, none is given
  }
  std::vector<std::string> allocated;
  for (const auto* c : found) {
    allocated.insert(allocated.end(), c->allocated.begin(), c->allocated.end());
  }
  if (deps_.published && std::any_of(allocated.begin(), allocated.end(), [&](const auto& name) {
        return inventory->find(name) == nullptr;
      })) {
    in.renamed = renamedEntries(*inventory, allocated, deps_.published());
  }
  std::vector<std::string> keys;
  for (const auto& name : allocated) {
    if (const DeviceSpec* d = entryFor(*inventory, in.renamed, name)) {
      const auto more = deviceKeys(*d);
      keys.insert(keys.end(), more.begin(), more.end());
    }
  }
  in.users = deps_.users->of(keys);
  for (const auto& path : deviceNodePaths(found, *inventory, in.renamed)) {
    in.deviceNodes[path] = deps_.probe->deviceNode(path);
  }
  const bool namesCdi = std::any_of(allocated.begin(), allocated.end(), [&](const auto& name) {
    const DeviceSpec* d = entryFor(*inventory, in.renamed, name);
    return d != nullptr && !d->cdiDevice.empty();
  });
  if (namesCdi) {
    in.cdiDevices = deps_.probe->cdiDevices().names;
    in.cdiSpecDirs = deps_.probe->cdiSpecDirs();
  }
  return decideInjection(in);
}

nri::Status InjectionPlugin::createContainer(const nri::CreateContainerRequest& req,
                                             nri::CreateContainerResponse* resp) {
  const auto start = std::chrono::steady_clock::now();
  const PodIdentity pod = identityOf(req.pod());
  Injection inj = [&]() -> Injection {
    RequestDeadline fence(start + std::chrono::milliseconds(readBudgetMs_.load()));
    try {
      return decide(pod, containerRequestOf(req.container()));
    } catch (const std::exception& e) {
      // A fault of ours, not an answer (decide turns those into values): the container waits as
      // for any refusal, where an escaping exception would end the agent and let containerd
      // start it without its devices.
      return Refusal{RefusalReason::kAgentFault,
                     std::string("the node agent failed to decide: ") + e.what()};
    }
  }();
  const char* result = resultOf(inj);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  deps_.metrics->containers.labels({result}).inc();
  deps_.metrics->createLatency.labels({result}).observe(seconds);
  const std::string podKey = objectKey(pod.ns, pod.name);
  if (auto* refusal = std::get_if<Refusal>(&inj)) {
    deps_.metrics->refusals.labels({toString(refusal->reason)}).inc();
    log::warn("refused container creation", {{"pod", podKey},
                                             {"podUID", pod.uid},
                                             {"container", req.container().name()},
                                             {"reason", toString(refusal->reason)},
                                             {"message", refusal->message}});
    return nri::Status::rpcError(nri::RpcCode::kFailedPrecondition,
                                 "extended-resource-node-agent: " + refusal->message);
  }
  if (auto* adj = std::get_if<Adjustment>(&inj)) {
    toAdjustment(*adj, resp->mutable_adjust());
    deps_.users->add(
        req.container().id(),
        DeviceUse{req.container().id(), req.container().name(), pod.uid, pod.ns, pod.name}, *adj);
    if (onlyEmptiesVariables(*adj)) {
      log::info("emptied device variables the image sets",
                {{"pod", podKey}, {"podUID", pod.uid}, {"container", req.container().name()}});
    } else {
      log::info("injected devices", {{"pod", podKey},
                                     {"podUID", pod.uid},
                                     {"container", req.container().name()},
                                     {"devices", adj->deviceNames}});
    }
  }
  return nri::Status::ok();
}

}  // namespace ker::agent

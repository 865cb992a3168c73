#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/agent_metrics.h"
#include "agent/claim_source.h"
#include "agent/container_stopper.h"
#include "agent/device_probe.h"
#include "agent/device_users.h"
#include "agent/injection.h"
#include "agent/node_file.h"
#include "agent/pod_source.h"
#include "model/resource_class.h"
#include "nri/plugin_service.h"

namespace ker::agent {

// The agent's side of NRI: asks for CreateContainer, gathers what decideInjection needs (the
// pod's identity from the runtime, its requests from the PodSource while any class exists, the
// claims from the ClaimSource, the device nodes from the host) and turns its decision into a
// ContainerAdjustment or a refusal. It also stops the containers that started without it
// (planEvictions), as soon as it learns of them.
class InjectionPlugin : public nri::Plugin {
 public:
  struct Deps {
    std::string node;
    std::string pluginName;  // as registered, and as the pods' required-plugins lists name it
    ClaimSource* claims = nullptr;
    // The devices in force (NodeSync::inventory); nullptr while none are.
    std::function<std::shared_ptr<const NodeFile>()> inventory;
    // This node's published ExtendedResources (unset: none): what tells the devices of a
    // container that has no keys annotation when its names have left the inventory.
    std::function<std::vector<ExtendedResource>()> published = {};
    const DeviceProbe* probe = nullptr;
    AgentMetrics* metrics = nullptr;
    const ContainerStopper* stopper = nullptr;
    DeviceUsers* users = nullptr;  // kept current from the runtime's reports
    DeviceGuard guard;
    PodSource* pods = nullptr;  // read only while `classes` gives a table that is not empty
    // The time createContainer's reads (the pod, then each claim) share: a deadline on all of
    // them, so that several slow ones cannot add up past the runtime's request timeout (and
    // shortened below the timeout the runtime reports: readBudgetFor).
    std::chrono::milliseconds readBudget{std::chrono::seconds(1)};
    // The ExtendedResourceClasses, nullopt while they have not been read; unset: none.
    std::function<std::optional<ClassTable>()> classes = {};
  };
  explicit InjectionPlugin(Deps deps)
      : deps_(std::move(deps)), readBudgetMs_(deps_.readBudget.count()) {}

  nri::Status configure(const nri::ConfigureRequest& req, nri::ConfigureResponse* resp) override;
  // Stops, at once, the running containers that started without the agent (planEvictions,
  // and of pods naming no claims planGuardEvictions): the runtime lists every container to a
  // plugin that (re)connects, so this is where the agent learns of those created while it was
  // stalled, dead or dropped. A list too large for one message comes
  // in parts (`more` set on all but the last, and echoed, as the runtime requires): the parts
  // are gathered, and the whole list taken in at the last.
  nri::Status synchronize(const nri::SynchronizeRequest& req,
                          nri::SynchronizeResponse* resp) override;
  nri::Status createContainer(const nri::CreateContainerRequest& req,
                              nri::CreateContainerResponse* resp) override;
  // The container has stopped (the runtime reports it once its process is gone): its devices
  // are free on this node.
  nri::Status stopContainer(const nri::StopContainerRequest& req,
                            nri::StopContainerResponse* resp) override;
  // PostStartContainer: a container the agent found created but not started gets its
  // process only now, and is stopped now (by the same two rules). RemoveContainer: its devices are
  // free.
  nri::Status lifecycleEvent(nri::Event event, const nri::PodSandbox& pod,
                             const nri::Container* container) override;

  // The decision for one container, without the protocol (also what createContainer logs).
  Injection decide(const PodIdentity& pod, const ContainerRequest& container = {});

 private:
  // Stops each container of the plan. A failure is logged as an error and leaves the
  // container running (as it does where the agent lacks hostPID or CAP_KILL); the next
  // Synchronize, after a reconnection, tries again.
  void evict(const std::vector<Eviction>& plan);
  // planGuardEvictions over these containers, with the mount sources of those it checks
  // resolved on the host.
  std::vector<Eviction> guardEvictions(const std::map<std::string, PodIdentity>& pods,
                                       std::vector<RuntimeContainer> containers);
  // What the guard reads of the host for a container it checks: its mount sources with
  // symlinks resolved, and which of them are device nodes.
  void probeMounts(ContainerRequest& container) const;
  // One host path a container mounts, resolved; noted in container.mountedNodes when it is a
  // device node.
  std::string probeSource(const std::string& path, ContainerRequest& container) const;
  // The numbers of the device nodes of `inventory` that the host has (managedNumbers).
  std::map<DeviceNumber, std::string> managedNumbers(const NodeFile& inventory) const;
  // The resources of this node's published devices (deviceVariable), read only when one of
  // `envNames` may be a device variable.
  std::set<std::string> publishedResources(const NodeFile* inventory,
                                           const std::vector<std::string>& envNames);

  Deps deps_;
  // readBudgetFor(deps_.readBudget, the request timeout the runtime's configure reported).
  std::atomic<int64_t> readBudgetMs_;

  // The parts of a split Synchronize so far. Touched only on the thread that drives the
  // session, which calls configure before a new connection's Synchronize.
  std::map<std::string, PodIdentity> syncPods_;
  std::vector<RuntimeContainer> syncContainers_;
};

// The time one answer's API reads may take: `configured`, but short enough that the answer
// reaches a runtime that gives up after `runtimeTimeout` (0: it reported none) with a quarter of
// that timeout, at least 250 ms, left for the rest of the decision (the device nodes, the CDI
// specs) and the reply. An answer too late is as bad as none: the runtime drops the agent and
// creates the container without it.
std::chrono::milliseconds readBudgetFor(std::chrono::milliseconds configured,
                                        std::chrono::milliseconds runtimeTimeout);

// What an NRI container's own spec asks for (its variables, mounts and device nodes).
ContainerRequest containerRequestOf(const nri::Container& c);

// The NRI form of an Adjustment.
void toAdjustment(const Adjustment& adj, nri::ContainerAdjustment* out);

}  // namespace ker::agent

#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agent/agent_metrics.h"
#include "agent/claim_source.h"
#include "agent/device_probe.h"
#include "agent/injection.h"
#include "agent/node_file.h"
#include "nri/plugin_service.h"

namespace ker::agent {

// The agent's side of NRI: asks for CreateContainer only, gathers what decideInjection needs
// (the pod's identity from the runtime, the claims from the ClaimSource, the device nodes from
// the host) and turns its decision into a ContainerAdjustment or a refusal.
class InjectionPlugin : public nri::Plugin {
 public:
  struct Deps {
    std::string node;
    std::string pluginName;  // as registered, and as the pods' required-plugins lists name it
    ClaimSource* claims = nullptr;
    std::function<std::shared_ptr<const NodeFile>()> inventory;
    const DeviceProbe* probe = nullptr;
    AgentMetrics* metrics = nullptr;
  };
  explicit InjectionPlugin(Deps deps) : deps_(std::move(deps)) {}

  nri::Status configure(const nri::ConfigureRequest& req, nri::ConfigureResponse* resp) override;
  // Finds containers that started without the agent (startedWithoutDevices); they are stopped
  // with the answer to the next container creation, the only answer NRI takes evictions in.
  nri::Status synchronize(const nri::SynchronizeRequest& req,
                          nri::SynchronizeResponse* resp) override;
  nri::Status createContainer(const nri::CreateContainerRequest& req,
                              nri::CreateContainerResponse* resp) override;

  // The decision for one container, without the protocol (also what createContainer logs).
  Injection decide(const PodIdentity& pod);

 private:
  Deps deps_;
  // Container IDs to stop, and why. Only the session's thread calls the plugin.
  std::vector<std::pair<std::string, std::string>> pendingEvictions_;
};

// The NRI form of an Adjustment.
void toAdjustment(const Adjustment& adj, nri::ContainerAdjustment* out);

}  // namespace ker::agent

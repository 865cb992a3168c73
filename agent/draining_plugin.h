#pragma once

#include <atomic>

#include "nri/plugin_service.h"

namespace ker::agent {

// The agent's plugin as the runtime sees it on one connection. Until drain() it passes every
// request to `inner`; from then on it refuses each container creation (Unavailable, which
// fails that creation and has the kubelet retry it) and passes the rest. A creation the
// runtime sends to a connection the agent has just closed is not refused: NRI counts the
// agent as consulted and creates the container without its devices. So the agent stops by
// draining first, until the runtime is quiet, and closes only then.
class DrainingPlugin : public nri::Plugin {
 public:
  explicit DrainingPlugin(nri::Plugin* inner) : inner_(inner) {}

  void drain() { draining_ = true; }

  nri::Status configure(const nri::ConfigureRequest& req, nri::ConfigureResponse* resp) override;
  nri::Status synchronize(const nri::SynchronizeRequest& req,
                          nri::SynchronizeResponse* resp) override;
  nri::Status createContainer(const nri::CreateContainerRequest& req,
                              nri::CreateContainerResponse* resp) override;
  nri::Status updateContainer(const nri::UpdateContainerRequest& req,
                              nri::UpdateContainerResponse* resp) override;
  nri::Status stopContainer(const nri::StopContainerRequest& req,
                            nri::StopContainerResponse* resp) override;
  nri::Status lifecycleEvent(nri::Event event, const nri::PodSandbox& pod,
                             const nri::Container* container) override;
  void shutdown() override { inner_->shutdown(); }

 private:
  nri::Plugin* inner_;
  std::atomic<bool> draining_{false};
};

}  // namespace ker::agent

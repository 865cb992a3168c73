#include "agent/draining_plugin.h"

#include "common/logging.h"

namespace ker::agent {

nri::Status DrainingPlugin::configure(const nri::ConfigureRequest& req,
                                      nri::ConfigureResponse* resp) {
  return inner_->configure(req, resp);
}

nri::Status DrainingPlugin::synchronize(const nri::SynchronizeRequest& req,
                                        nri::SynchronizeResponse* resp) {
  return inner_->synchronize(req, resp);
}

nri::Status DrainingPlugin::createContainer(const nri::CreateContainerRequest& req,
                                            nri::CreateContainerResponse* resp) {
  if (!draining_) {
    return inner_->createContainer(req, resp);
  }
  log::info("container refused: the node agent is stopping",
            {{"pod", req.pod().namespace_() + "/" + req.pod().name()},
             {"podUID", req.pod().uid()},
             {"container", req.container().name()}});
  return nri::Status::rpcError(nri::RpcCode::kUnavailable,
                               "the extended-resource node agent is stopping; the kubelet "
                               "retries this container once the agent is back");
}

nri::Status DrainingPlugin::updateContainer(const nri::UpdateContainerRequest& req,
                                            nri::UpdateContainerResponse* resp) {
  return inner_->updateContainer(req, resp);
}

nri::Status DrainingPlugin::stopContainer(const nri::StopContainerRequest& req,
                                          nri::StopContainerResponse* resp) {
  return inner_->stopContainer(req, resp);
}

nri::Status DrainingPlugin::lifecycleEvent(nri::Event event, const nri::PodSandbox& pod,
                                           const nri::Container* container) {
  return inner_->lifecycleEvent(event, pod, container);
}

}  // namespace ker::agent

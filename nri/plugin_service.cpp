#include "nri/plugin_service.h"

namespace ker::nri {
namespace {

template <typename Req, typename Resp, typename Fn>
Status unary(const IncomingRequest& request, std::string* response, Fn&& fn) {
  Req req;
  if (!req.ParseFromArray(request.payload.data(), static_cast<int>(request.payload.size()))) {
    return Status::rpcError(RpcCode::kInvalidArgument,
                            "cannot decode the " + std::string(request.method) + " request");
  }
  Resp resp;
  Status s = fn(req, &resp);
  if (s.isOk()) {
    *response = resp.SerializeAsString();
  }
  return s;
}

bool validPluginName(std::string_view name) {
  if (name.empty()) {
    return false;
  }
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.' || c == '+';
    if (!ok) {
      return false;
    }
  }
  return true;
}

}  // namespace

Status Plugin::synchronize(const SynchronizeRequest&, SynchronizeResponse*) {
  return Status();
}
Status Plugin::createContainer(const CreateContainerRequest&, CreateContainerResponse*) {
  return Status();
}
Status Plugin::updateContainer(const UpdateContainerRequest&, UpdateContainerResponse*) {
  return Status();
}
Status Plugin::stopContainer(const StopContainerRequest&, StopContainerResponse*) {
  return Status();
}
Status Plugin::lifecycleEvent(Event, const PodSandbox&, const Container*) {
  return Status();
}

Status PluginDispatcher::handle(const IncomingRequest& request, std::string* response) {
  if (request.service != kPluginService) {
    return Status::rpcError(RpcCode::kUnimplemented, "service " + std::string(request.service));
  }
  const std::string_view m = request.method;
  Plugin* p = plugin_;
  if (m == "Configure") {
    return unary<ConfigureRequest, ConfigureResponse>(
        request, response, [p](auto& req, auto* resp) { return p->configure(req, resp); });
  }
  if (m == "Synchronize") {
    return unary<SynchronizeRequest, SynchronizeResponse>(
        request, response, [p](auto& req, auto* resp) { return p->synchronize(req, resp); });
  }
  if (m == "CreateContainer") {
    return unary<CreateContainerRequest, CreateContainerResponse>(
        request, response, [p](auto& req, auto* resp) { return p->createContainer(req, resp); });
  }
  if (m == "UpdateContainer") {
    return unary<UpdateContainerRequest, UpdateContainerResponse>(
        request, response, [p](auto& req, auto* resp) { return p->updateContainer(req, resp); });
  }
  if (m == "StopContainer") {
    return unary<StopContainerRequest, StopContainerResponse>(
        request, response, [p](auto& req, auto* resp) { return p->stopContainer(req, resp); });
  }
  if (m == "Shutdown") {
    return unary<Empty, Empty>(request, response, [p](auto&, auto*) {
      p->shutdown();
      return Status();
    });
  }
  if (m == "StateChange") {
    return unary<StateChangeEvent, Empty>(request, response, [p](auto& req, auto*) {
      return p->lifecycleEvent(req.event(), req.pod(),
                               req.has_container() ? &req.container() : nullptr);
    });
  }
  struct PodEvent {
    std::string_view method;
    Event event;
  };
  for (auto [method, event] :
       {PodEvent{"RunPodSandbox", RUN_POD_SANDBOX}, PodEvent{"StopPodSandbox", STOP_POD_SANDBOX},
        PodEvent{"RemovePodSandbox", REMOVE_POD_SANDBOX}}) {
    if (m == method) {
      // The three requests share ContainerEventRequest's field 1 (pod).
      return unary<ContainerEventRequest, Empty>(request, response, [p, event](auto& req, auto*) {
        return p->lifecycleEvent(event, req.pod(), nullptr);
      });
    }
  }
  for (auto [method, event] : {PodEvent{"PostCreateContainer", POST_CREATE_CONTAINER},
                               PodEvent{"StartContainer", START_CONTAINER},
                               PodEvent{"PostStartContainer", POST_START_CONTAINER},
                               PodEvent{"PostUpdateContainer", POST_UPDATE_CONTAINER},
                               PodEvent{"RemoveContainer", REMOVE_CONTAINER}}) {
    if (m == method) {
      return unary<ContainerEventRequest, Empty>(request, response, [p, event](auto& req, auto*) {
        return p->lifecycleEvent(event, req.pod(), &req.container());
      });
    }
  }
  return Status::rpcError(RpcCode::kUnimplemented, "method " + std::string(m));
}

Status registerPlugin(Session* session, std::string_view name, std::string_view index,
                      std::chrono::milliseconds timeout) {
  if (!validPluginName(name)) {
    return Status::invalidArgument("invalid plugin name \"" + std::string(name) +
                                   "\": use letters, digits and -_.+");
  }
  if (index.size() != 2 || index[0] < '0' || index[0] > '9' || index[1] < '0' || index[1] > '9') {
    return Status::invalidArgument("invalid plugin index \"" + std::string(index) +
                                   "\": must be two digits");
  }
  RegisterPluginRequest req;
  req.set_plugin_name(std::string(name));
  req.set_plugin_idx(std::string(index));
  req.set_nri_version(std::string(kNriVersion));
  std::string response;
  return session->call(kRuntimeService, "RegisterPlugin", req.SerializeAsString(), &response,
                       timeout);
}

}  // namespace ker::nri

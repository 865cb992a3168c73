#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "nri/proto/nri.pb.h"
#include "nri/session.h"
#include "nri/status.h"

namespace ker::nri {

// ttrpc service names: upstream's proto package plus the service, as its generated clients send.
inline constexpr std::string_view kRuntimeService = "nri.pkg.api.v1alpha1.Runtime";
inline constexpr std::string_view kPluginService = "nri.pkg.api.v1alpha1.Plugin";
// The upstream release whose wire format nri.proto follows; sent on registration, where the
// runtime only logs it.
inline constexpr std::string_view kNriVersion = "v0.12.3";

// The event-subscription bit of an event in ConfigureResponse.events (upstream's EventMask).
constexpr int32_t eventBit(Event e) {
  return int32_t{1} << (static_cast<int>(e) - 1);
}

// What the node agent implements of NRI's plugin service. Every method runs on the thread
// that drives the Session and must answer within the runtime's request timeout (see
// ConfigureRequest.request_timeout): containerd drops a plugin that times out and goes on
// without it. Returning an rpcError refuses the request with that code and message; for
// CreateContainer that fails the container's creation. The defaults accept and change nothing.
class Plugin {
 public:
  virtual ~Plugin() = default;

  // The first request after registration; the response's events say what to deliver.
  virtual Status configure(const ConfigureRequest& req, ConfigureResponse* resp) = 0;
  // The pods and containers that exist, possibly split over several requests (more = true).
  virtual Status synchronize(const SynchronizeRequest& req, SynchronizeResponse* resp);
  virtual Status createContainer(const CreateContainerRequest& req, CreateContainerResponse* resp);
  virtual Status updateContainer(const UpdateContainerRequest& req, UpdateContainerResponse* resp);
  virtual Status stopContainer(const StopContainerRequest& req, StopContainerResponse* resp);
  // The remaining pod and container events (RunPodSandbox, StartContainer, RemoveContainer,
  // ...) with their pod and, for container events, their container.
  virtual Status lifecycleEvent(Event event, const PodSandbox& pod, const Container* container);
  // The runtime is going down.
  virtual void shutdown() {}
};

// Adapts a Plugin to the Session: decodes each request by method, calls the plugin, encodes
// its answer. A request that does not parse is InvalidArgument; an unknown service or method
// is Unimplemented, as upstream's ttrpc server answers (containerd then falls back to
// StateChange for events a plugin lacks).
class PluginDispatcher : public RequestHandler {
 public:
  explicit PluginDispatcher(Plugin* plugin) : plugin_(plugin) {}
  Status handle(const IncomingRequest& request, std::string* response) override;

 private:
  Plugin* plugin_;
};

// Registers the plugin with the runtime (Runtime.RegisterPlugin) and returns once the runtime
// accepted it; Configure and Synchronize are served during and after it through the session's
// handler. name: letters, digits and "-_.+"; index: two digits, the plugin's place in the
// runtime's invocation order (both checked here first, as the runtime checks them).
Status registerPlugin(Session* session, std::string_view name, std::string_view index,
                      std::chrono::milliseconds timeout);

}  // namespace ker::nri

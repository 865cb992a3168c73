#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "agent/agent_metrics.h"
#include "agent/leaving_registration.h"
#include "model/objects.h"
#include "nri/plugin_service.h"

namespace ker::agent {

// The agent's registration with the container runtime's NRI socket, kept up for as long as
// the agent runs: connect, register, serve the runtime's requests on this thread; when the
// runtime goes away (restart, socket not there yet), wait and connect again. On stop it
// leaves (see leave).
class RuntimeConnection {
 public:
  struct Options {
    std::string socketPath = "/var/run/nri/nri.sock";
    std::string pluginName = kNodeAgentPluginName;
    std::string pluginIndex = "10";
    std::chrono::milliseconds registerTimeout{std::chrono::seconds(5)};
    std::chrono::milliseconds minBackoff{200};
    std::chrono::milliseconds maxBackoff{std::chrono::seconds(5)};
    // Stopping, within the DaemonSet's grace period of 10 s together with the rest of the
    // agent's stop (AgentApp::stop): how long the leaving registration may take to be
    // accepted and configured; how long the runtime must have sent nothing before the
    // connection closes, and the most that drain may take (an answer under way may add up to
    // its read budget); how long to wait for the runtime to close its end, and then to let it
    // mark the plugin closed; how long the leaving registration then waits for a Synchronize
    // that has not come (see leave).
    std::chrono::milliseconds leaveTimeout{500};
    std::chrono::milliseconds drainQuiet{300};
    std::chrono::milliseconds drainLimit{std::chrono::seconds(2)};
    std::chrono::milliseconds hangUpTimeout{500};
    std::chrono::milliseconds closeSettle{100};
    std::chrono::milliseconds leaveSyncWait{500};
  };
  RuntimeConnection(Options options, nri::Plugin* plugin, AgentMetrics* metrics)
      : options_(std::move(options)), plugin_(plugin), metrics_(metrics) {}

  // Runs until *stop is true (checked at least every 200 ms), then stops as serveOnce says.
  void run(const std::atomic<bool>& stop);
  bool connected() const { return connected_.load(); }

 private:
  // One connection, from connect to its end; ok when it ended because stop was set. A
  // connection that stop ends while it is up is left (see leave).
  nri::Status serveOnce(const std::atomic<bool>& stop);
  // NRI keeps a plugin whose connection closed in its list until its next event ends, and that
  // event, when it is a container creation, lists the plugin as consulted and goes on without
  // its answer: the container starts without its devices. So the agent leaves in this order:
  // it registers a LeavingRegistration, which from its Configure on holds back the container
  // operations that have not taken containerd's plugin-sync read lock yet (while this
  // connection goes on answering); drains, answering until the runtime is quiet; hangs up and
  // waits for the runtime to close its end; then releases the leaving registration, whose
  // Synchronize answer has the runtime drop the closed connection before any held-back
  // operation goes on. The leaving registration stays until the agent exits (leaving_). From then
  // on the runtime's validator refuses the pods that require the agent until it is back. Ok, or the
  // error of this connection; a failed leaving registration is logged and the stop goes on.
  nri::Status leave(nri::Session* session);
  // Serves as before until no message is half read and either runtimeHeld() (the runtime can
  // send nothing more: LeavingRegistration::synchronizing) or the runtime has sent nothing for
  // drainQuiet; or until drainLimit has passed; the connection's error if it ended first.
  // Every subsystem the answers read still runs (the agent stops this thread first).
  nri::Status drain(nri::Session* session, const std::function<bool()>& runtimeHeld);

  Options options_;
  nri::Plugin* plugin_;
  // Made by leave and kept until this object is destroyed, at the agent's exit: a Synchronize
  // containerd sends after the stop (a long container operation held the sync back) is still
  // answered, and so still drops the closed connection.
  std::unique_ptr<LeavingRegistration> leaving_;
  AgentMetrics* metrics_;
  std::atomic<bool> connected_{false};
};

}  // namespace ker::agent

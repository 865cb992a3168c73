#pragma once

#include <atomic>
#include <chrono>
#include <string>

#include "agent/agent_metrics.h"
#include "model/objects.h"
#include "nri/plugin_service.h"

namespace ker::agent {

// The agent's registration with the container runtime's NRI socket, kept up for as long as
// the agent runs: connect, register, serve the runtime's requests on this thread; when the
// runtime goes away (restart, socket not there yet), wait and connect again. On stop it
// drains, closes, and leaves (see serveOnce).
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
    // agent's stop (AgentApp::stop): how long the runtime must have sent nothing before the
    // connection closes, and the most the drain may take (an answer under way may add up to
    // its read budget); how long the leaving registration may take to be accepted and
    // configured, and then how long it waits for Synchronize (see leave).
    std::chrono::milliseconds drainQuiet{300};
    std::chrono::milliseconds drainLimit{std::chrono::seconds(2)};
    std::chrono::milliseconds leaveTimeout{std::chrono::seconds(1)};
    std::chrono::milliseconds leaveSyncWait{500};
  };
  RuntimeConnection(Options options, nri::Plugin* plugin, AgentMetrics* metrics)
      : options_(std::move(options)), plugin_(plugin), metrics_(metrics) {}

  // Runs until *stop is true (checked at least every 200 ms), then stops as serveOnce says.
  void run(const std::atomic<bool>& stop);
  bool connected() const { return connected_.load(); }

 private:
  // One connection, from connect to its end; ok when it ended because stop was set. A
  // connection that stop ends while it is up is drained, closed, and left, in that order.
  // NRI keeps a plugin whose connection closed in its list until its next event ends, and that
  // event, when it is a container creation, lists the plugin as consulted and goes on without
  // its answer: the container starts without its devices. So the agent goes on answering until
  // the runtime is quiet (drain), closes only then, and at once makes the runtime drop the
  // closed registration (leave); from then on the runtime's validator refuses the pods that
  // require the agent until it is back.
  nri::Status serveOnce(const std::atomic<bool>& stop);
  // Serves as before until the runtime has sent nothing for drainQuiet and no message is half
  // read, or drainLimit has passed; the connection's error if it ended first. Every subsystem
  // the answers read still runs (the agent stops this thread first).
  nri::Status drain(nri::Session* session);
  // Registers as `<pluginName>-leaving`, subscribed to one rare event, and answers Configure.
  // containerd then synchronizes the new plugin (holding back every container operation
  // meanwhile) and adds it to its list, which removes every plugin whose connection closed.
  // When containerd is stopping the agent's own container (the kubelet's stop, the usual
  // case), it holds that synchronization until the stop ends, and the stop ends with an NRI
  // event that removes the closed plugin just the same, before the operations held back go
  // on. So the wait for Synchronize is short (leaveSyncWait) and its absence no error.
  nri::Status leave();

  Options options_;
  nri::Plugin* plugin_;
  AgentMetrics* metrics_;
  std::atomic<bool> connected_{false};
};

}  // namespace ker::agent

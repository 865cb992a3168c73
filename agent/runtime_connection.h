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
// runtime goes away (restart, socket not there yet), wait and connect again.
class RuntimeConnection {
 public:
  struct Options {
    std::string socketPath = "/var/run/nri/nri.sock";
    std::string pluginName = kNodeAgentPluginName;
    std::string pluginIndex = "10";
    std::chrono::milliseconds registerTimeout{std::chrono::seconds(5)};
    std::chrono::milliseconds minBackoff{200};
    std::chrono::milliseconds maxBackoff{std::chrono::seconds(5)};
  };
  RuntimeConnection(Options options, nri::Plugin* plugin, AgentMetrics* metrics)
      : options_(std::move(options)), plugin_(plugin), metrics_(metrics) {}

  // Runs until *stop is true (checked at least every 200 ms).
  void run(const std::atomic<bool>& stop);
  bool connected() const { return connected_.load(); }

 private:
  // One connection, from connect to its end; ok when it ended because stop was set.
  nri::Status serveOnce(const std::atomic<bool>& stop);

  Options options_;
  nri::Plugin* plugin_;
  AgentMetrics* metrics_;
  std::atomic<bool> connected_{false};
};

}  // namespace ker::agent

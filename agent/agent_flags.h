#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "agent/agent_app.h"
#include "common/flags.h"
#include "common/process_flags.h"
#include "common/status.h"

namespace ker::agent {

// Everything extended-resource-node-agent runs with.
struct AgentSettings {
  std::string kubeconfig;
  LogSettings log;
  AgentAppConfig app;
};

// The agent's flags: registered on construction with AgentSettings' defaults (and the node's
// name from the caller, who reads $NODE_NAME), turned into its settings after FlagSet::parse.
// Pure: main reads no flag itself.
class AgentFlags {
 public:
  AgentFlags(FlagSet& flags, const std::string& nodeNameFromEnv)
      : AgentFlags(flags, nodeNameFromEnv, AgentSettings{}) {}
  // The parsed values, or kInvalid naming the first flag that breaks its rule.
  Status settings(AgentSettings& out) const;

 private:
  AgentFlags(FlagSet& flags, const std::string& nodeNameFromEnv, const AgentSettings& defaults);

  std::string* kubeconfig_;
  std::string* node_;
  std::string* nodeFile_;
  std::string* hostRoot_;
  std::string* stateDir_;
  std::string* cdiSpecDirs_;
  std::string* socket_;
  std::string* pluginName_;
  std::string* pluginIndex_;
  std::chrono::milliseconds* syncPeriod_;
  std::chrono::milliseconds* liveReadBudget_;
  std::string* metricsBindAddress_;
  bool* refuseUnclaimed_;
  std::string* exemptNamespaces_;
  AdmissionPolicyFlag admissionPolicy_;
  LogFlags log_;
};

}  // namespace ker::agent

#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/injection.h"
#include "agent/runtime_connection.h"
#include "common/admission_policy_check.h"
#include "common/api_client.h"

namespace ker::agent {

struct AgentAppConfig {
  std::string node;                                                   // this node's name
  std::string nodeFile = "/etc/extended-resource/node-devices.yaml";  // the node configuration file
  std::string hostRoot;  // prefix of host paths (device nodes, mount sources, CDI specs)
  // The agent's own folder on the node: what it must remember across restarts (the extended
  // resource names it advertised).
  std::string stateDir = "/var/lib/extended-resource";
  // The runtime's CDI spec directories (its cdi_spec_dirs), as host paths.
  std::vector<std::string> cdiSpecDirs = {"/etc/cdi", "/var/run/cdi"};
  RuntimeConnection::Options runtime;
  // How often the node file is read again and the devices' health checked.
  std::chrono::milliseconds syncPeriod{std::chrono::seconds(5)};
  // "host:port" or ":port" for /healthz, /readyz and /metrics; "" or "0" serves nothing.
  std::string metricsBindAddress = ":8082";
  // What the live API reads behind one container's answer (its pod, each of its claims) may
  // take together. Below the runtime's request timeout (containerd's 2 s), so the agent answers,
  // refusing when it could not read, before the runtime gives up on it and starts the container
  // without its devices.
  std::chrono::milliseconds liveReadBudget{std::chrono::seconds(1)};
  // Containers refused for reaching a managed device without a claim, but in these namespaces.
  DeviceGuard guard{.enabled = true, .exemptNamespaces = {"kube-system"}};
  // The admission policies whose absence /readyz reports; nullopt: not checked.
  std::optional<AdmissionPolicyCheck::Options> admissionPolicy;
};

// The running node agent: watches of this node's devices, of the claims and pods bound on it, of
// the classes and of its Node; the node sync (inventory and health), the capacity sync, the
// runtime connection (injection), events, and the health and metrics endpoints.
class AgentApp {
 public:
  // api: for watches and writes; liveApi: for the live pod and claim reads made while the
  // runtime waits (no retries: each answer's reads share config.liveReadBudget as a deadline).
  AgentApp(ApiClient& api, ApiClient& liveApi, AgentAppConfig config);
  ~AgentApp();  // stop()
  AgentApp(const AgentApp&) = delete;
  AgentApp& operator=(const AgentApp&) = delete;

  // Throws std::runtime_error when the metrics address cannot be bound.
  void start();
  // Unregisters from the runtime first (so no answer is cut short), then stops the rest.
  // Idempotent.
  void stop();
  // What /readyz says: the caches have synced, the runtime connection is registered and the
  // policy is in force.
  bool ready() const;
  int metricsPort() const;  // 0 when not serving

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ker::agent

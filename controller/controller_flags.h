#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/flags.h"
#include "common/process_flags.h"
#include "common/status.h"
#include "controller/controller_app.h"

namespace ker {

// Everything extended-resource-controller runs with.
struct ControllerSettings {
  std::string kubeconfig;
  LogSettings log;
  ControllerAppConfig app;
};

// The binary's defaults: ControllerAppConfig's, but the protection finalizers are on (the
// library leaves them off, so tests that do not exercise them see no finalizer writes).
ControllerAppConfig controllerBinaryDefaults();

// The controller's flags: registered on construction with controllerBinaryDefaults(), turned
// into its settings after FlagSet::parse. Pure: main reads no flag itself.
class ControllerFlags {
 public:
  explicit ControllerFlags(FlagSet& flags) : ControllerFlags(flags, controllerBinaryDefaults()) {}
  // The parsed values, or kInvalid naming the first flag that breaks its rule. The leader
  // election's identity is left empty (ControllerApp fills it).
  Status settings(ControllerSettings& out) const;

 private:
  ControllerFlags(FlagSet& flags, const ControllerAppConfig& defaults);

  std::string* kubeconfig_;
  int64_t* workers_;
  int64_t* deviceWorkers_;
  std::chrono::milliseconds* resyncPeriod_;
  std::chrono::milliseconds* orphanGrace_;
  std::chrono::milliseconds* deviceOrphanGrace_;
  std::chrono::milliseconds* freedDeviceWriteDelay_;
  bool* protectInUse_;
  std::string* schedulerName_;
  std::string* classParams_;
  bool* leaderElect_;
  std::string* leaseName_;
  std::string* leaseNamespace_;
  std::string* resourceLock_;
  std::chrono::milliseconds* leaseDuration_;
  std::chrono::milliseconds* renewDeadline_;
  std::chrono::milliseconds* retryPeriod_;
  std::string* metricsBindAddress_;
  AdmissionPolicyFlag admissionPolicy_;
  LogFlags log_;
};

}  // namespace ker

#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/flags.h"
#include "common/process_flags.h"
#include "common/status.h"
#include "scheduler/extender_app.h"

namespace ker {

// Everything extended-resource-scheduler runs with.
struct ExtenderSettings {
  std::string kubeconfig;
  LogSettings log;
  ExtenderConfig extender;
};

// The extender's flags: registered on construction with ExtenderConfig's defaults, turned
// into its settings after FlagSet::parse. Pure: main reads no flag itself.
class ExtenderFlags {
 public:
  explicit ExtenderFlags(FlagSet& flags);
  // The parsed values, or kInvalid naming the first flag that breaks its rule.
  Status settings(ExtenderSettings& out) const;

 private:
  ExtenderFlags(FlagSet& flags, const ExtenderConfig& defaults);

  std::string* kubeconfig_;
  std::string* bindAddress_;
  int64_t* port_;
  int64_t* healthPort_;
  std::string* healthBindAddress_;
  std::string* tlsCert_;
  std::string* tlsKey_;
  std::string* clientCa_;
  std::string* allowedClientNames_;
  std::string* pathPrefix_;
  std::string* scoring_;
  std::string* topologyProperty_;
  int64_t* maxBodyBytes_;
  int64_t* threads_;
  std::chrono::milliseconds* bindDeadline_;
  std::string* requiredPlugin_;
  bool* preemption_;
  std::string* schedulerName_;
  AdmissionPolicyFlag admissionPolicy_;
  LogFlags log_;
};

}  // namespace ker

#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "common/admission_policy_check.h"
#include "common/flags.h"
#include "common/logging.h"
#include "common/status.h"

namespace ker {

// --kubeconfig, the same in every binary ("" loads $KUBECONFIG, else in-cluster, else
// ~/.kube/config: KubeConfig::load).
std::string* addKubeconfigFlag(FlagSet& flags);

// How a binary logs: what log::init takes.
struct LogSettings {
  log::Format format = log::Format::kText;
  int verbosity = 0;
};

// --log-format and --v, the same in every binary.
class LogFlags {
 public:
  explicit LogFlags(FlagSet& flags);
  // The parsed values, or kInvalid naming the flag that is wrong.
  Status settings(LogSettings& out) const;

 private:
  std::string* format_;
  int64_t* verbosity_;
};

// --admission-policy and --admission-policy-period, the same in every binary: the allocation
// policy whose absence /readyz reports ("" checks nothing), and how often it is read.
class AdmissionPolicyFlag {
 public:
  explicit AdmissionPolicyFlag(FlagSet& flags);
  // nullopt when the flag is ""; kInvalid when it is not an object name.
  Status settings(std::optional<AdmissionPolicyCheck::Options>& out) const;

 private:
  std::string* name_;
  std::chrono::milliseconds* period_;
};

}  // namespace ker

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

// --admission-policy and --admission-policy-period, the same in every binary: the policies
// (comma-separated) whose absence /readyz reports, by default those the binary relies on
// (`defaults`; "" checks nothing), and how often they are read.
class AdmissionPolicyFlag {
 public:
  AdmissionPolicyFlag(FlagSet& flags, const std::vector<std::string>& defaults);
  // nullopt when the flag is ""; kInvalid when an entry is not an object name.
  Status settings(std::optional<AdmissionPolicyCheck::Options>& out) const;

 private:
  std::string* names_;
  std::chrono::milliseconds* period_;
};

}  // namespace ker

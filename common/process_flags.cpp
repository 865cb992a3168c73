#include "common/process_flags.h"

#include "common/flag_checks.h"
#include "common/kube_objects.h"

namespace ker {

namespace {

// klog's levels in use stop well below this; the bound keeps the value an int.
constexpr int64_t kMaxVerbosity = 99;

}  // namespace

std::string* addKubeconfigFlag(FlagSet& flags) {
  return flags.addString(
      "kubeconfig", "",
      "kubeconfig file (default: $KUBECONFIG, else in-cluster, else ~/.kube/config)");
}

LogFlags::LogFlags(FlagSet& flags) {
  const LogSettings defaults;
  format_ = flags.addString("log-format", log::formatName(defaults.format), "text or json");
  verbosity_ = flags.addInt("v", defaults.verbosity, "log verbosity");
}

Status LogFlags::settings(LogSettings& out) const {
  auto format = log::parseFormat(*format_);
  if (!format) {
    return Status::invalid("--log-format must be text or json, got \"" + *format_ + "\"");
  }
  if (Status s = checkFlagRange("v", *verbosity_, 0, kMaxVerbosity); !s.ok()) {
    return s;
  }
  out.format = *format;
  out.verbosity = static_cast<int>(*verbosity_);
  return {};
}

AdmissionPolicyFlag::AdmissionPolicyFlag(FlagSet& flags)
    : name_(flags.addString(
          "admission-policy", kAllocationPolicyName,
          "the ValidatingAdmissionPolicy (and binding of that name) that keeps allocations to "
          "the components: /readyz fails while it is absent or not denying (\"\": no check)")),
      period_(flags.addDuration("admission-policy-period", AdmissionPolicyCheck::Options{}.period,
                                "how often --admission-policy is read")) {}

Status AdmissionPolicyFlag::settings(std::optional<AdmissionPolicyCheck::Options>& out) const {
  if (name_->empty()) {
    out.reset();
    return {};
  }
  if (!isDns1123Subdomain(*name_)) {
    return Status::invalid("--admission-policy must be an object name, got \"" + *name_ + "\"");
  }
  if (Status st = checkFlagPositive("admission-policy-period", *period_); !st.ok()) {
    return st;
  }
  out = AdmissionPolicyCheck::Options{.name = *name_, .period = *period_};
  return {};
}

}  // namespace ker

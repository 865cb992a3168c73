#include "common/process_flags.h"

#include "common/comma_list.h"
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

AdmissionPolicyFlag::AdmissionPolicyFlag(FlagSet& flags, const std::vector<std::string>& defaults)
    : names_(flags.addString(
          "admission-policy", joinCommaList(defaults),
          "the ValidatingAdmissionPolicies (each with a binding of its name), comma-separated, "
          "that this component relies on: /readyz fails while one is absent or not denying "
          "(\"\": no check)")),
      period_(flags.addDuration("admission-policy-period", AdmissionPolicyCheck::Options{}.period,
                                "how often the --admission-policy policies are read")) {}

Status AdmissionPolicyFlag::settings(std::optional<AdmissionPolicyCheck::Options>& out) const {
  const std::vector<std::string> names = splitCommaList(*names_);
  if (names.empty()) {
    out.reset();
    return {};
  }
  for (const std::string& name : names) {
    if (!isDns1123Subdomain(name)) {
      return Status::invalid("--admission-policy must list object names, got \"" + name + "\"");
    }
  }
  if (Status st = checkFlagPositive("admission-policy-period", *period_); !st.ok()) {
    return st;
  }
  out = AdmissionPolicyCheck::Options{.names = names, .period = *period_};
  return {};
}

}  // namespace ker

#include "scheduler/extender_flags.h"

#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>

#include "common/comma_list.h"
#include "common/flag_checks.h"

namespace ker {

namespace {

constexpr int64_t kMaxPort = 65535;
constexpr int64_t kMaxThreads = 1024;

// The defaults are ExtenderConfig's, so they have one home. A lasting object rather than a
// temporary: GCC 12 takes a temporary's nested strings for uninitialized at -O2.
const ExtenderConfig& defaultConfig() {
  static const ExtenderConfig defaults;
  return defaults;
}

}  // namespace

ExtenderFlags::ExtenderFlags(FlagSet& flags) : ExtenderFlags(flags, defaultConfig()) {}

// Registration order is --help's.
ExtenderFlags::ExtenderFlags(FlagSet& flags, const ExtenderConfig& d)
    : kubeconfig_(addKubeconfigFlag(flags)),
      bindAddress_(flags.addString(
          "bind-address", d.bindAddress,
          "address to serve the verbs on; one that is not loopback needs --tls-cert-file, "
          "--tls-private-key-file, --client-ca-file and --tls-allowed-client-names")),
      port_(flags.addInt("port", d.port, "port to serve filter, prioritize and bind on")),
      healthPort_(flags.addInt(
          "health-port", d.healthPort,
          "plain-HTTP port for /healthz, /readyz, /metrics (0: served on --port, with its TLS)")),
      healthBindAddress_(
          flags.addString("health-bind-address", d.healthBindAddress, "address for --health-port")),
      tlsCert_(
          flags.addString("tls-cert-file", d.tlsCertFile, "serving certificate (enables HTTPS)")),
      tlsKey_(flags.addString("tls-private-key-file", d.tlsKeyFile, "serving certificate's key")),
      clientCa_(flags.addString("client-ca-file", d.clientCaFile,
                                "CA for client certificates (enables mutual TLS)")),
      allowedClientNames_(flags.addString(
          "tls-allowed-client-names", joinCommaList(d.tlsAllowedClientNames),
          "comma-separated names a client certificate must carry as its CN or a DNS SAN "
          "(with --client-ca-file): kube-scheduler's tlsConfig.certFile")),
      pathPrefix_(
          flags.addString("path-prefix", d.pathPrefix, "path of kube-scheduler's urlPrefix")),
      scoring_(flags.addString("scoring", scoringStrategyName(d.scoring.strategy),
                               "binpack: prefer nodes left with the fewest matching free "
                               "devices; spread: the most")),
      topologyProperty_(flags.addString(
          "topology-property", d.scoring.topologyProperty,
          "device property naming its island (NUMA node, PCIe root): binpack then takes devices "
          "from the fullest islands and prefers nodes whose whole islands stay whole; spread "
          "the opposite (\"\": islands are not looked at)")),
      maxBodyBytes_(flags.addInt("max-body-bytes", static_cast<int64_t>(d.maxBodyBytes),
                                 "largest request body accepted")),
      threads_(flags.addInt(
          "http-threads", static_cast<int64_t>(d.threads),
          "threads serving the verbs, each holding one connection (kube-scheduler opens one per "
          "bind in flight): the most binds served at once (1 to 1024)")),
      bindDeadline_(
          flags.addDuration("bind-deadline", d.bindDeadline,
                            "a bind starts no write after this, and calls in flight are cut off; "
                            "keep it below the controller's --device-orphan-grace-period (45s)")),
      requiredPlugin_(flags.addString(
          "node-agent-plugin", d.requiredPlugin,
          "the node agent's NRI plugin name, added to each bound pod's required-plugins "
          "annotation so its containers are refused while the agent is away (\"\": nodes "
          "without the agent)")),
      preemption_(flags.addBool(
          "preemption", d.preemption,
          "a pod that fits no node because pods of lower priority hold its matching devices "
          "preempts them (deletes them and keeps the devices for it); needs list/watch/delete "
          "on pods and patch on pods/status")),
      schedulerName_(flags.addString(
          "scheduler-name", d.schedulerName,
          "schedulerName of the pods it serves: it binds and preempts only for these, and "
          "--preemption watches the bound ones for their priorities (\"\": every pod)")),
      admissionPolicy_(flags, {kAllocationPolicyName}),
      log_(flags) {}

Status ExtenderFlags::settings(ExtenderSettings& out) const {
  ExtenderSettings s;
  if (Status st = log_.settings(s.log); !st.ok()) {
    return st;
  }
  if (Status st = admissionPolicy_.settings(s.extender.admissionPolicy); !st.ok()) {
    return st;
  }
  auto scoring = parseScoringStrategy(*scoring_);
  if (!scoring) {
    return Status::invalid("--scoring must be binpack or spread, got \"" + *scoring_ + "\"");
  }
  if (std::any_of(topologyProperty_->begin(), topologyProperty_->end(),
                  [](unsigned char ch) { return std::isspace(ch) != 0 || ch == ','; })) {
    return Status::invalid("--topology-property must name one device property, got \"" +
                           *topologyProperty_ + "\"");
  }
  if (tlsCert_->empty() != tlsKey_->empty()) {
    return Status::invalid(
        "--tls-cert-file and --tls-private-key-file must be given together, got only " +
        std::string(tlsCert_->empty() ? "--tls-private-key-file" : "--tls-cert-file"));
  }
  if (!clientCa_->empty() && tlsCert_->empty()) {
    return Status::invalid(
        "--client-ca-file must come with --tls-cert-file and --tls-private-key-file, got "
        "neither");
  }
  const std::vector<std::string> allowedNames = splitCommaList(*allowedClientNames_);
  for (const auto& name : allowedNames) {
    if (name.front() == '.') {
      // OpenSSL's host check would take a leading dot as "any subdomain of".
      return Status::invalid("--tls-allowed-client-names must list exact names, got \"" + name +
                             "\"");
    }
  }
  if (!allowedNames.empty() && clientCa_->empty()) {
    return Status::invalid("--tls-allowed-client-names must come with --client-ca-file");
  }
  // The verbs bind pods and delete preemption victims on the word of whoever reaches them:
  // off loopback, only a client that proves to be kube-scheduler may.
  if (!isLoopbackAddress(*bindAddress_) && allowedNames.empty()) {
    return Status::invalid(
        "--bind-address that is not loopback needs --tls-cert-file, --tls-private-key-file, "
        "--client-ca-file and --tls-allowed-client-names, got \"" +
        *bindAddress_ + "\"");
  }
  for (Status st : {checkFlagRange("port", *port_, 1, kMaxPort),
                    checkFlagRange("health-port", *healthPort_, 0, kMaxPort),
                    checkFlagAtLeast("max-body-bytes", *maxBodyBytes_, 1),
                    checkFlagRange("http-threads", *threads_, 1, kMaxThreads),
                    checkFlagPositive("bind-deadline", *bindDeadline_)}) {
    if (!st.ok()) {
      return st;
    }
  }
  s.kubeconfig = *kubeconfig_;
  ExtenderConfig& c = s.extender;
  c.bindAddress = *bindAddress_;
  c.port = static_cast<int>(*port_);
  c.healthPort = static_cast<int>(*healthPort_);
  c.healthBindAddress = *healthBindAddress_;
  c.tlsCertFile = *tlsCert_;
  c.tlsKeyFile = *tlsKey_;
  c.clientCaFile = *clientCa_;
  c.tlsAllowedClientNames = allowedNames;
  c.pathPrefix = *pathPrefix_;
  c.scoring = {*scoring, *topologyProperty_};
  c.maxBodyBytes = static_cast<size_t>(*maxBodyBytes_);
  c.threads = static_cast<size_t>(*threads_);
  c.bindDeadline = *bindDeadline_;
  c.requiredPlugin = *requiredPlugin_;
  c.preemption = *preemption_;
  c.schedulerName = *schedulerName_;
  out = std::move(s);
  return {};
}

}  // namespace ker

#include "agent/agent_flags.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/comma_list.h"
#include "common/flag_checks.h"
#include "model/objects.h"

namespace ker::agent {

namespace {

// A node's name is a DNS subdomain, but the agent's ExtendedResource names and label values
// carry it, and a label value is at most 63 characters.
constexpr size_t kMaxNodeName = 63;

bool isTwoDigits(const std::string& s) {
  return s.size() == 2 && s[0] >= '0' && s[0] <= '9' && s[1] >= '0' && s[1] <= '9';
}

}  // namespace

// Registration order is --help's.
AgentFlags::AgentFlags(FlagSet& flags, const std::string& nodeNameFromEnv, const AgentSettings& d)
    : kubeconfig_(addKubeconfigFlag(flags)),
      node_(
          flags.addString("node-name", nodeNameFromEnv, "this node's name (default: $NODE_NAME)")),
      nodeFile_(flags.addString("node-file", d.app.nodeFile,
                                "the node configuration file listing this node's devices")),
      hostRoot_(flags.addString("host-root", d.app.hostRoot,
                                "where the host's filesystem is seen, prefixed to device node "
                                "and mount source paths (\"\" on the host, /host in a pod)")),
      stateDir_(flags.addString("state-dir", d.app.stateDir,
                                "the agent's folder on the node, kept across restarts: the "
                                "extended resource names it advertised in the node's capacity, "
                                "the last node file that parsed")),
      cdiSpecDirs_(flags.addString("cdi-spec-dirs", joinCommaList(d.app.cdiSpecDirs),
                                   "comma-separated: the container runtime's CDI spec "
                                   "directories (its cdi_spec_dirs), read under --host-root")),
      socket_(flags.addString("nri-socket", d.app.runtime.socketPath,
                              "the container runtime's NRI socket")),
      pluginName_(flags.addString("nri-plugin-name", d.app.runtime.pluginName,
                                  "the name the agent registers with (pods name it in the "
                                  "runtime's required-plugins annotation)")),
      pluginIndex_(flags.addString("nri-plugin-index", d.app.runtime.pluginIndex,
                                   "two digits: the agent's place among plugins")),
      syncPeriod_(flags.addDuration("sync-period", d.app.syncPeriod,
                                    "how often the node file is re-read and device health "
                                    "checked")),
      liveReadBudget_(flags.addDuration(
          "live-read-timeout", d.app.liveReadBudget,
          "limit of the API reads behind one container's answer, together; shortened to fit "
          "the request timeout the runtime reports (containerd's default: 2s)")),
      metricsBindAddress_(flags.addString("metrics-bind-address", d.app.metricsBindAddress,
                                          "host:port for /healthz, /readyz, /metrics (0: off)")),
      refuseUnclaimed_(flags.addBool(
          "refuse-unclaimed-devices", d.app.guard.enabled,
          "refuse containers that set a resource's device variable themselves, or mount or are "
          "given (privileged) a managed device node they were not allocated")),
      exemptNamespaces_(flags.addString("unclaimed-devices-exempt-namespaces",
                                        joinCommaList(d.app.guard.exemptNamespaces),
                                        "comma-separated namespaces whose pods "
                                        "--refuse-unclaimed-devices does not check")),
      admissionPolicy_(flags, {kAllocationPolicyName, kNodeStatusPolicyName}),
      log_(flags) {}

Status AgentFlags::settings(AgentSettings& out) const {
  AgentSettings s;
  if (Status st = log_.settings(s.log); !st.ok()) {
    return st;
  }
  if (Status st = admissionPolicy_.settings(s.app.admissionPolicy); !st.ok()) {
    return st;
  }
  if (!isDns1123Subdomain(*node_) || node_->size() > kMaxNodeName) {
    return Status::invalid(
        "--node-name (or $NODE_NAME) must be this node's name, a DNS subdomain of at most 63 "
        "characters, got \"" +
        *node_ + "\"");
  }
  if (!isTwoDigits(*pluginIndex_)) {
    return Status::invalid("--nri-plugin-index must be two digits, got \"" + *pluginIndex_ + "\"");
  }
  for (Status st : {checkFlagBindAddress("metrics-bind-address", *metricsBindAddress_),
                    checkFlagPositive("sync-period", *syncPeriod_),
                    checkFlagPositive("live-read-timeout", *liveReadBudget_)}) {
    if (!st.ok()) {
      return st;
    }
  }
  s.kubeconfig = *kubeconfig_;
  s.app.node = *node_;
  s.app.nodeFile = *nodeFile_;
  s.app.hostRoot = *hostRoot_;
  if (stateDir_->empty()) {
    return Status::invalid("--state-dir must name a folder");
  }
  s.app.stateDir = *stateDir_;
  s.app.cdiSpecDirs.clear();
  for (const std::string& dir : splitCommaList(*cdiSpecDirs_)) {
    if (dir.empty() || dir[0] != '/') {
      return Status::invalid("--cdi-spec-dirs: \"" + dir + "\" is not an absolute path");
    }
    s.app.cdiSpecDirs.push_back(dir);
  }
  s.app.runtime.socketPath = *socket_;
  s.app.runtime.pluginName = *pluginName_;
  s.app.runtime.pluginIndex = *pluginIndex_;
  s.app.syncPeriod = *syncPeriod_;
  s.app.metricsBindAddress = *metricsBindAddress_;
  s.app.guard.enabled = *refuseUnclaimed_;
  s.app.guard.exemptNamespaces.clear();
  for (const std::string& ns : splitCommaList(*exemptNamespaces_)) {
    if (!isDns1123Label(ns)) {
      return Status::invalid("--unclaimed-devices-exempt-namespaces: \"" + ns +
                             "\" is not a namespace name");
    }
    s.app.guard.exemptNamespaces.push_back(ns);
  }
  s.app.liveReadBudget = *liveReadBudget_;
  out = std::move(s);
  return {};
}

}  // namespace ker::agent

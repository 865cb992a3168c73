#include "agent/agent_flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "flag_args.h"

namespace ker::agent {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Status parse(const std::vector<std::string>& args, AgentSettings& out,
             const std::string& envNode = "node-1") {
  return parseSettings<AgentFlags>(args, out, envNode);
}

TEST(AgentFlags, DefaultsAreAgentSettingsAndTheNodeFromTheEnvironment) {
  AgentSettings got;
  ASSERT_TRUE(parse({}, got, "node-7").ok());
  const AgentSettings want;
  EXPECT_EQ(got.app.node, "node-7");
  EXPECT_EQ(got.app.nodeFile, want.app.nodeFile);
  EXPECT_EQ(got.app.hostRoot, want.app.hostRoot);
  EXPECT_EQ(got.app.stateDir, "/var/lib/extended-resource");
  EXPECT_EQ(got.app.cdiSpecDirs, (std::vector<std::string>{"/etc/cdi", "/var/run/cdi"}));
  EXPECT_EQ(got.app.runtime.socketPath, want.app.runtime.socketPath);
  EXPECT_EQ(got.app.runtime.pluginName, want.app.runtime.pluginName);
  EXPECT_EQ(got.app.runtime.pluginIndex, want.app.runtime.pluginIndex);
  EXPECT_EQ(got.app.syncPeriod, want.app.syncPeriod);
  EXPECT_EQ(got.app.metricsBindAddress, want.app.metricsBindAddress);
  EXPECT_EQ(got.app.liveReadBudget, want.app.liveReadBudget);
  EXPECT_EQ(got.kubeconfig, "");
  EXPECT_EQ(got.log.format, LogSettings{}.format);
  EXPECT_EQ(got.log.verbosity, LogSettings{}.verbosity);
  // The name it registers with is the one the extender requires by default.
  EXPECT_EQ(got.app.runtime.pluginName, kNodeAgentPluginName);
}

TEST(AgentFlags, HelpShowsTheDefaults) {
  FlagSet flags("extended-resource-node-agent", "");
  const AgentFlags agent(flags, "");
  const std::string usage = flags.usage();
  for (const char* text :
       {"(default \"/etc/extended-resource/node-devices.yaml\")",
        "(default \"/var/run/nri/nri.sock\")", "(default \"extended-resource-node-agent\")",
        "(default \"10\")", "(default \"/etc/cdi,/var/run/cdi\")", "(default 5s)", "(default 1s)",
        "(default \":8082\")", "(default \"/var/lib/extended-resource\")",
        "this node's name (default: $NODE_NAME)\n"}) {
    EXPECT_NE(usage.find(text), std::string::npos) << text << "\n" << usage;
  }
}

TEST(AgentFlags, ValidInputFillsTheConfig) {
  AgentSettings got;
  ASSERT_TRUE(parse({"--kubeconfig=/k", "--node-name=n2", "--node-file=/f", "--host-root=/host",
                     "--state-dir=/run/agent-state", "--nri-socket=/s", "--nri-plugin-name=p",
                     "--nri-plugin-index=05", "--sync-period=2s", "--live-read-timeout=500ms",
                     "--metrics-bind-address=0", "--log-format=json", "--v=1"},
                    got)
                  .ok());
  EXPECT_EQ(got.kubeconfig, "/k");
  EXPECT_EQ(got.app.node, "n2");
  EXPECT_EQ(got.app.nodeFile, "/f");
  EXPECT_EQ(got.app.hostRoot, "/host");
  EXPECT_EQ(got.app.stateDir, "/run/agent-state");
  EXPECT_EQ(got.app.runtime.socketPath, "/s");
  EXPECT_EQ(got.app.runtime.pluginName, "p");
  EXPECT_EQ(got.app.runtime.pluginIndex, "05");
  EXPECT_EQ(got.app.syncPeriod, seconds(2));
  EXPECT_EQ(got.app.liveReadBudget, milliseconds(500));
  EXPECT_EQ(got.app.metricsBindAddress, "0");
  EXPECT_EQ(got.log.format, log::Format::kJson);
  EXPECT_EQ(got.log.verbosity, 1);
}

TEST(AgentFlags, EachBadValueNamesItsFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::string nodeRule =
      "--node-name (or $NODE_NAME) must be this node's name, a DNS subdomain of at most 63 "
      "characters, got ";
  const std::vector<Case> cases = {
      {{"--node-name="}, nodeRule + "\"\""},
      {{"--node-name=Node_1"}, nodeRule + "\"Node_1\""},
      {{"--node-name=" + std::string(64, 'a')}, nodeRule + "\"" + std::string(64, 'a') + "\""},
      {{"--state-dir="}, "--state-dir must name a folder"},
      {{"--nri-plugin-index=1"}, "--nri-plugin-index must be two digits, got \"1\""},
      {{"--nri-plugin-index=1a"}, "--nri-plugin-index must be two digits, got \"1a\""},
      {{"--metrics-bind-address=host"},
       "--metrics-bind-address must be host:port, :port, or 0 for none, got \"host\""},
      {{"--sync-period=0s"}, "--sync-period must be positive, got 0s"},
      {{"--live-read-timeout=0s"}, "--live-read-timeout must be positive, got 0s"},
      {{"--log-format=xml"}, "--log-format must be text or json, got \"xml\""},
      {{"--v=-1"}, "--v must be 0 to 99, got -1"},
  };
  for (const Case& c : cases) {
    AgentSettings got;
    const Status s = parse(c.args, got);
    EXPECT_EQ(s.code(), StatusCode::kInvalid) << c.args[0] << ": " << s;
    EXPECT_EQ(s.message(), c.message);
  }
}

TEST(AgentFlags, AMissingNodeNameIsAnError) {
  AgentSettings got;
  EXPECT_EQ(parse({}, got, "").code(), StatusCode::kInvalid);
}

TEST(AgentFlags, CdiSpecDirsAreAbsolutePaths) {
  AgentSettings got;
  ASSERT_TRUE(parse({"--cdi-spec-dirs=/run/cdi,/opt/cdi"}, got).ok());
  EXPECT_EQ(got.app.cdiSpecDirs, (std::vector<std::string>{"/run/cdi", "/opt/cdi"}));
  EXPECT_EQ(parse({"--cdi-spec-dirs=/etc/cdi,cdi"}, got).message(),
            "--cdi-spec-dirs: \"cdi\" is not an absolute path");
}

}  // namespace
}  // namespace ker::agent

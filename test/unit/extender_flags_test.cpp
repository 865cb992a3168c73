#include "scheduler/extender_flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/flag_checks.h"
#include "flag_args.h"
#include "scheduler/bind/binder.h"

namespace ker {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Status parse(const std::vector<std::string>& args, ExtenderSettings& out) {
  return parseSettings<ExtenderFlags>(args, out);
}

TEST(ExtenderFlags, DefaultsAreExtenderConfigs) {
  ExtenderSettings got;
  ASSERT_TRUE(parse({}, got).ok());
  const ExtenderConfig want;
  const ExtenderConfig& c = got.extender;
  EXPECT_EQ(c.bindAddress, want.bindAddress);
  EXPECT_EQ(c.port, want.port);
  EXPECT_EQ(c.healthPort, want.healthPort);
  EXPECT_EQ(c.healthBindAddress, want.healthBindAddress);
  EXPECT_EQ(c.tlsCertFile, want.tlsCertFile);
  EXPECT_EQ(c.tlsKeyFile, want.tlsKeyFile);
  EXPECT_EQ(c.clientCaFile, want.clientCaFile);
  EXPECT_EQ(c.tlsAllowedClientNames, want.tlsAllowedClientNames);
  EXPECT_EQ(c.pathPrefix, want.pathPrefix);
  EXPECT_EQ(c.scoring, want.scoring);
  EXPECT_EQ(c.maxBodyBytes, want.maxBodyBytes);
  EXPECT_EQ(c.bindDeadline, want.bindDeadline);
  EXPECT_EQ(c.requiredPlugin, want.requiredPlugin);
  EXPECT_EQ(c.threads, want.threads);
  EXPECT_EQ(c.preemption, want.preemption);
  EXPECT_EQ(c.schedulerName, want.schedulerName);
  EXPECT_EQ(got.kubeconfig, "");
  EXPECT_EQ(got.log.format, LogSettings{}.format);
  EXPECT_EQ(got.log.verbosity, LogSettings{}.verbosity);
  // The bind's own default names the same plugin.
  EXPECT_EQ(c.requiredPlugin, BinderOptions{}.requiredPlugin);
}

// The verbs bind pods and delete victims on their caller's word: by default only the
// scheduler's own pod reaches them.
TEST(ExtenderFlags, TheVerbsListenOnLoopbackByDefault) {
  ExtenderSettings got;
  ASSERT_TRUE(parse({}, got).ok());
  EXPECT_EQ(got.extender.bindAddress, "127.0.0.1");
  EXPECT_TRUE(got.extender.tlsAllowedClientNames.empty());
}

TEST(ExtenderFlags, AnAddressOffLoopbackNeedsMutualTlsWithAllowedClientNames) {
  const std::string refused =
      "--bind-address that is not loopback needs --tls-cert-file, --tls-private-key-file, "
      "--client-ca-file and --tls-allowed-client-names, got \"0.0.0.0\"";
  const std::vector<std::vector<std::string>> short_ = {
      {"--bind-address=0.0.0.0"},
      {"--bind-address=0.0.0.0", "--tls-cert-file=/c", "--tls-private-key-file=/k"},
      {"--bind-address=0.0.0.0", "--tls-cert-file=/c", "--tls-private-key-file=/k",
       "--client-ca-file=/ca"},
      {"--bind-address=0.0.0.0", "--tls-cert-file=/c", "--tls-private-key-file=/k",
       "--client-ca-file=/ca", "--tls-allowed-client-names= , "},
  };
  for (const auto& args : short_) {
    ExtenderSettings got;
    const Status s = parse(args, got);
    EXPECT_EQ(s.code(), StatusCode::kInvalid) << args.size();
    EXPECT_EQ(s.message(), refused) << args.size();
  }
  ExtenderSettings got;
  ASSERT_EQ(parse({"--bind-address=0.0.0.0", "--tls-cert-file=/c", "--tls-private-key-file=/k",
                   "--client-ca-file=/ca",
                   "--tls-allowed-client-names=system:kube-scheduler, scheduler.example"},
                  got)
                .message(),
            "");
  EXPECT_EQ(got.extender.bindAddress, "0.0.0.0");
  EXPECT_EQ(got.extender.tlsAllowedClientNames,
            (std::vector<std::string>{"system:kube-scheduler", "scheduler.example"}));
  // On loopback the names are optional, and taken when given.
  ASSERT_TRUE(parse({"--bind-address=::1", "--tls-cert-file=/c", "--tls-private-key-file=/k",
                     "--client-ca-file=/ca", "--tls-allowed-client-names=a"},
                    got)
                  .ok());
  EXPECT_EQ(got.extender.tlsAllowedClientNames, (std::vector<std::string>{"a"}));
}

TEST(LoopbackAddress, OnlyAddressesThatStayOnTheMachine) {
  for (const char* a : {"127.0.0.1", "127.1.2.3", "::1", "localhost"}) {
    EXPECT_TRUE(isLoopbackAddress(a)) << a;
  }
  for (const char* a : {"0.0.0.0", "::", "", "10.0.0.1", "128.0.0.1", "::ffff:10.0.0.1",
                        "localhost.example", "127.0.0.1.example"}) {
    EXPECT_FALSE(isLoopbackAddress(a)) << a;
  }
}

TEST(ExtenderFlags, HelpShowsTheConfigsDefaults) {
  FlagSet flags("extended-resource-scheduler", "");
  const ExtenderFlags extender(flags);
  const std::string usage = flags.usage();
  for (const char* line :
       {"(default \"binpack\")", "(default 67108864)", "(default 64)", "(default 30s)",
        "(default \"extended-resource-node-agent\")", "(default \"extended-resource-scheduler\")",
        "(default 8888)", "(default \"127.0.0.1\")", "--log-format string", "--v int",
        "--kubeconfig string"}) {
    EXPECT_NE(usage.find(line), std::string::npos) << line << "\n" << usage;
  }
}

TEST(ExtenderFlags, ValidInputFillsTheConfig) {
  ExtenderSettings got;
  ASSERT_TRUE(parse({"--kubeconfig=/k", "--bind-address=127.0.0.1", "--port=9000",
                     "--health-port=9001", "--health-bind-address=127.0.0.2", "--tls-cert-file=/c",
                     "--tls-private-key-file=/k2", "--client-ca-file=/ca", "--path-prefix=/x",
                     "--scoring=spread", "--topology-property=numa", "--max-body-bytes=1024",
                     "--http-threads=1024", "--bind-deadline=5s", "--node-agent-plugin=",
                     "--preemption=false", "--scheduler-name=other", "--log-format=json", "--v=3"},
                    got)
                  .ok());
  const ExtenderConfig& c = got.extender;
  EXPECT_EQ(got.kubeconfig, "/k");
  EXPECT_EQ(c.bindAddress, "127.0.0.1");
  EXPECT_EQ(c.port, 9000);
  EXPECT_EQ(c.healthPort, 9001);
  EXPECT_EQ(c.healthBindAddress, "127.0.0.2");
  EXPECT_EQ(c.tlsCertFile, "/c");
  EXPECT_EQ(c.tlsKeyFile, "/k2");
  EXPECT_EQ(c.clientCaFile, "/ca");
  EXPECT_EQ(c.pathPrefix, "/x");
  EXPECT_EQ(c.scoring.strategy, ScoringStrategy::kSpread);
  EXPECT_EQ(c.scoring.topologyProperty, "numa");
  EXPECT_EQ(c.maxBodyBytes, 1024u);
  EXPECT_EQ(c.threads, 1024u);
  EXPECT_EQ(c.bindDeadline, seconds(5));
  EXPECT_EQ(c.requiredPlugin, "");
  EXPECT_FALSE(c.preemption);
  EXPECT_EQ(c.schedulerName, "other");
  EXPECT_EQ(got.log.format, log::Format::kJson);
  EXPECT_EQ(got.log.verbosity, 3);
}

TEST(ExtenderFlags, EachBadValueNamesItsFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--scoring=random"}, "--scoring must be binpack or spread, got \"random\""},
      {{"--topology-property=numa,pci"},
       "--topology-property must name one device property, got \"numa,pci\""},
      {{"--tls-cert-file=/c"},
       "--tls-cert-file and --tls-private-key-file must be given together, got only "
       "--tls-cert-file"},
      {{"--tls-private-key-file=/k"},
       "--tls-cert-file and --tls-private-key-file must be given together, got only "
       "--tls-private-key-file"},
      {{"--client-ca-file=/ca"},
       "--client-ca-file must come with --tls-cert-file and --tls-private-key-file, got "
       "neither"},
      {{"--tls-allowed-client-names=a"},
       "--tls-allowed-client-names must come with --client-ca-file"},
      {{"--tls-cert-file=/c", "--tls-private-key-file=/k", "--client-ca-file=/ca",
        "--tls-allowed-client-names=.example"},
       "--tls-allowed-client-names must list exact names, got \".example\""},
      {{"--port=0"}, "--port must be 1 to 65535, got 0"},
      {{"--port=65536"}, "--port must be 1 to 65535, got 65536"},
      {{"--health-port=-1"}, "--health-port must be 0 to 65535, got -1"},
      {{"--health-port=70000"}, "--health-port must be 0 to 65535, got 70000"},
      {{"--max-body-bytes=0"}, "--max-body-bytes must be at least 1, got 0"},
      {{"--http-threads=0"}, "--http-threads must be 1 to 1024, got 0"},
      {{"--http-threads=1025"}, "--http-threads must be 1 to 1024, got 1025"},
      {{"--bind-deadline=0s"}, "--bind-deadline must be positive, got 0s"},
      {{"--log-format=yaml"}, "--log-format must be text or json, got \"yaml\""},
      {{"--v=-2"}, "--v must be 0 to 99, got -2"},
  };
  for (const Case& c : cases) {
    ExtenderSettings got;
    const Status s = parse(c.args, got);
    EXPECT_EQ(s.code(), StatusCode::kInvalid) << c.args[0] << ": " << s;
    EXPECT_EQ(s.message(), c.message);
  }
}

TEST(ScoringStrategy, NamesRoundTrip) {
  for (ScoringStrategy s : {ScoringStrategy::kBinpack, ScoringStrategy::kSpread}) {
    EXPECT_EQ(parseScoringStrategy(scoringStrategyName(s)), s);
  }
  EXPECT_EQ(parseScoringStrategy("Binpack"), std::nullopt);
}

}  // namespace
}  // namespace ker

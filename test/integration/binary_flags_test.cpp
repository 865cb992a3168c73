// The binaries' main: a flag that breaks its rule stops the binary before it reaches the API
// server, with exit code 2 and one line naming the flag; --help prints the flags and exits 0.
#include <sys/wait.h>

#include <string>
#include <vector>

#include "test_env.h"

namespace ker::itest {
namespace {

struct Outcome {
  int exitCode = -1;
  std::string output;
};

Outcome runBinary(TestEnv& env, const std::string& binary, const std::vector<std::string>& args,
                  const std::string& logName) {
  ChildProcess child(env.binary(binary), args, env.dir() + "/" + logName + ".log");
  child.start();
  child.wait();
  Outcome r;
  const int status = child.lastStatus().value_or(-1);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.output = child.logTail();
  return r;
}

class BinaryFlagsTest : public ApiTest {};

TEST_F(BinaryFlagsTest, ABadValueStopsEachBinaryNamingItsFlag) {
  struct Case {
    std::string binary;
    std::vector<std::string> args;
    std::string line;
  };
  const std::vector<Case> cases = {
      {"scheduler/extended-resource-scheduler",
       {"--kubeconfig=" + env_->kubeconfig(), "--http-threads=0"},
       "invalid flags: --http-threads must be 1 to 1024, got 0\n"},
      // The verbs are trusted as kube-scheduler's: off loopback only behind mutual TLS.
      {"scheduler/extended-resource-scheduler",
       {"--kubeconfig=" + env_->kubeconfig(), "--bind-address=0.0.0.0"},
       "invalid flags: --bind-address that is not loopback needs --tls-cert-file, "
       "--tls-private-key-file, --client-ca-file and --tls-allowed-client-names, got "
       "\"0.0.0.0\"\n"},
      {"controller/extended-resource-controller",
       {"--kubeconfig=" + env_->kubeconfig(), "--leader-elect-retry-period=20s"},
       "invalid flags: --leader-elect-retry-period must be below --leader-elect-renew-deadline, "
       "got 20s and 10s\n"},
      {"agent/extended-resource-node-agent",
       {"--kubeconfig=" + env_->kubeconfig(), "--node-name=n1", "--nri-plugin-index=7"},
       "invalid flags: --nri-plugin-index must be two digits, got \"7\"\n"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const Outcome r = runBinary(*env_, c.binary, c.args, "bad-flags-" + std::to_string(i++));
    EXPECT_EQ(r.exitCode, 2) << c.binary << "\n" << r.output;
    EXPECT_EQ(r.output, c.line) << c.binary;
  }
}

TEST_F(BinaryFlagsTest, HelpListsTheFlagsWithTheirDefaults) {
  const Outcome r = runBinary(*env_, "scheduler/extended-resource-scheduler", {"--help"}, "help");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("(default \"extended-resource-node-agent\")"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace ker::itest

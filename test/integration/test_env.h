#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/kube_client.h"
#include "test/support/child_process.h"
#include "test/support/free_port.h"

namespace ker::itest {

using namespace std::chrono_literals;
using testsupport::ChildProcess;
using testsupport::freePort;

// The KEY=VALUE lines of a file test/controlplane/launch.sh writes (DIR/env, and
// DIR/nodes/NAME/env for a further node); a later line wins, as in the shell that sources it.
std::map<std::string, std::string> readEnvFile(const std::string& file);

// The control plane started by test/run-integration.sh, described by the KEY=VALUE file named
// in $KER_TEST_ENV (written by test/controlplane/launch.sh).
class TestEnv {
 public:
  // Null when $KER_TEST_ENV is unset: the tests then skip, saying how to run them.
  static TestEnv* get();

  std::string value(const std::string& key) const;
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  const std::string& dir() const { return dir_; }
  std::string kubeconfig() const { return value("KUBECONFIG"); }
  KubeClient& admin() { return *admin_; }
  // The build folder's binaries (extended-resource-scheduler, ...), from $KER_BUILD_DIR.
  std::string binary(const std::string& relativePath) const;
  std::string repoRoot() const;

  // Runs kubectl against the test cluster; returns the exit code, output in *out.
  int kubectl(const std::string& args, std::string* out = nullptr) const;
  // Runs test/controlplane/launch.sh SUBCOMMAND DIR ARGS.
  int launch(const std::string& subcommand, const std::string& args = {}) const;
  // Runs ker-check-invariants over the whole cluster; returns its output, empty when clean.
  std::string invariantViolations() const;

  // Applies the CRDs in DIR and waits until each is Established again; throws when not.
  void applyCrds(const std::string& dir) const;
  // Applies crds/ once and waits for its CRDs to be Established and served.
  void ensureCrds();
  // Applies the ServiceAccounts and RBAC of deploy/ (every document but the Deployments) once.
  void ensureDeployRbac();
  // A kubeconfig holding a fresh token of kube-system/NAME, a ServiceAccount of deploy/.
  std::string serviceAccountKubeconfig(const std::string& name);

 private:
  TestEnv(std::string envFile);
  std::string dir_;
  std::map<std::string, std::string> values_;
  std::unique_ptr<KubeClient> admin_;
  bool crdsReady_ = false;
  bool rbacReady_ = false;
};

// A test against the shared control plane with the CRDs applied; skips, saying how to run
// it, when there is none.
class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = TestEnv::get();
    if (env_ == nullptr) {
      GTEST_SKIP() << "KER_TEST_ENV is not set: run the integration tests with "
                      "`make integration-test`, which starts a control plane for them";
    }
    env_->ensureCrds();
    api_ = &env_->admin();
  }

  TestEnv* env_ = nullptr;
  KubeClient* api_ = nullptr;
};

// Polls `done` until it returns true or `timeout` passes; returns its last answer.
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout = 30s,
                std::chrono::milliseconds interval = 50ms);

// Runs `cmd` under sh, its stderr with its stdout into *out; its exit status (-1 when it did
// not exit).
int runShell(const std::string& cmd, std::string* out);
std::string shellQuote(const std::string& s);

// A name unique to this test process: prefix + counter + random suffix.
std::string uniqueName(const std::string& prefix);

// Object builders, as a user would write them.
nlohmann::json nodeObject(const std::string& name,
                          const std::map<std::string, std::string>& labels = {});
nlohmann::json deviceObject(const std::string& name, const std::string& node,
                            const std::string& rawResourceName,
                            const std::map<std::string, std::string>& properties);
nlohmann::json claimObject(const std::string& ns, const std::string& name,
                           const std::string& rawResourceName, int64_t count,
                           const std::map<std::string, std::string>& matchLabels = {});
// An ExtendedResourceClass serving `extendedResourceName` with the k80s (type=k80) of
// `rawResourceName`.
nlohmann::json k80ClassObject(const std::string& name, const std::string& extendedResourceName,
                              const std::string& rawResourceName);
// A Deployment of `replicas` pods with `podSpec`, labelled and selected by app=<name>.
nlohmann::json deploymentObject(const std::string& ns, const std::string& name, int replicas,
                                const nlohmann::json& podSpec);
nlohmann::json podObject(const std::string& ns, const std::string& name,
                         const std::vector<std::string>& claims,
                         const std::string& schedulerName = "extended-resource-scheduler");
// Creates a namespace for one test (without a namespace controller it is never removed).
std::string createNamespace(KubeClient& api, const std::string& prefix);
// Deletes a pod immediately (grace period 0): no kubelet will ever confirm a graceful delete.
void deletePodNow(KubeClient& api, const std::string& ns, const std::string& name);
// Test clean-up: deletes every pod of `ns` immediately, taking off the finalizers that would
// keep one (a Job's tracking finalizer, once its Job is gone); returns how many there were.
int deleteAllPodsNow(KubeClient& api, const std::string& ns);

}  // namespace ker::itest

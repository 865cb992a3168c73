#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "priority_classes.h"
#include "test_env.h"

namespace ker::itest {

// Runs an extended-resource-scheduler process and a kube-scheduler whose extenders block
// points at it, for one test suite. Every test isolates itself by a resource name of its own
// (devices of other tests never match its claims) and nodes of its own.
class ExtenderSuite : public ::testing::Test {
 protected:
  struct Options {
    bool nodeCacheCapable = true;
    bool https = false;
    bool mutualTls = false;  // with https: the extender requires kube-scheduler's client cert
    std::vector<std::string> extenderArgs;
    std::map<std::string, std::string> extenderEnv;
    std::string schedulerArgs;  // more launch.sh start-scheduler flags, e.g. --preempt-verb
  };

  // Runs a suite's set-up and keeps what it threw, for SetUp to fail every test with: thrown
  // out of SetUpTestSuite, GoogleTest would mark the tests skipped, which ctest counts as
  // passed.
  static void setUpSuite(const std::function<void()>& setUp);
  static void startStack(const Options& opts);
  static void stopStack();
  // Starts the controller binary with deploy/'s ServiceAccount credentials, serving metrics on
  // `port`, for this stack's scheduler name, with short grace and leader-election periods and
  // `extraArgs`; returns once it is ready.
  static std::unique_ptr<ChildProcess> startController(int port,
                                                       const std::vector<std::string>& extraArgs);
  // Starts kube-controller-manager with only `controllers` (comma-separated, e.g.
  // "replicaset,garbagecollector"), as the cluster's admin; it is not waited for: tests wait
  // for what its controllers do.
  static std::unique_ptr<ChildProcess> startControllerManager(const std::string& controllers);
  static void TearDownTestSuite() { stopStack(); }
  // Whether `child` is running; if not, the failure says `what` died, with its log's tail.
  static ::testing::AssertionResult alive(const std::unique_ptr<ChildProcess>& child,
                                          const std::string& what);

  void SetUp() override;

  // A fresh resource name, namespace and `count` Ready nodes for this test.
  std::string resource_;
  std::string ns_;
  std::vector<std::string> makeNodes(int count);
  // A device of this test's resource on `node` with property type=`type`; returns its name.
  std::string makeDevice(const std::string& node, const std::string& type = "k80");

  nlohmann::json getPod(const std::string& name);
  std::string nodeOf(const std::string& pod);
  bool waitBound(const std::string& pod, std::chrono::milliseconds timeout = 30s);
  // `count` claims claim-0, claim-1, ... for one k80 each, and pods PREFIX-i naming claim-i.
  void createClaims(int count);
  void createClaimedPods(const std::string& prefix, int count);
  // Pods of this test's namespace bound to a node; deletes PREFIX-0.. that never were.
  int boundPodCount();
  void deleteUnboundPods(const std::string& prefix, int count);
  // Deletes the object; one already gone is fine (test clean-up).
  static void removeIgnoringMissing(const Resource& res, const std::string& ns,
                                    const std::string& name);
  // Test clean-up once the pods are gone: deletes the namespace's claims, then every device of
  // resource_ or held by the namespace's claims.
  void removeClaimsAndDevices();
  // Runs the invariant checker over the whole cluster; returns its output, empty when clean.
  std::string invariantViolations();
  // The message of the pod's (last) FailedScheduling event; empty while it has none.
  std::string failedScheduling(const std::string& pod);
  // failedScheduling once the pod has one, waiting up to 30 s; empty if none came.
  std::string awaitFailedScheduling(const std::string& pod);
  std::string extenderMetrics();
  // The value of an unlabelled series in Prometheus text; -1 when absent.
  static double metricValue(const std::string& text, const std::string& name);

  // A pod claiming a k80 among a p100 node, a k80 node and an empty node lands on the k80
  // node; its claim, device and allocation annotation say so; no invariant is broken.
  void expectPlacementOnMatchingNode();

  static std::string setupError_;
  static TestEnv* env_;
  static KubeClient* api_;
  static std::unique_ptr<ChildProcess> extender_;
  static int extenderPort_;
  static int healthPort_;
  static std::string extenderUrl_;
  static std::string schedulerName_;
};

// An ExtenderSuite whose tests make PriorityClasses: each test starts with none of its own and
// has those it made removed after it (a subclass's TearDown calls this one's last).
class PrioritySuite : public ExtenderSuite {
 protected:
  void SetUp() override {
    ExtenderSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) {
      return;
    }
    priorityClasses_.emplace(*api_);
  }
  void TearDown() override {
    if (priorityClasses_) {
      priorityClasses_->removeAll();
    }
  }

  std::optional<PriorityClasses> priorityClasses_;  // from SetUp on, when the suite's stack runs
};

}  // namespace ker::itest

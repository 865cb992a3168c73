// deploy/ as a user applies it, running as pods on the real node from the image just built:
// kube-scheduler with the extender sidecar, the leader-elected controller and the node agent,
// each reaching the API server the in-cluster way.
#include <gtest/gtest.h>

#include "common/resource.h"
#include "e2e_fixture.h"

namespace ker::e2e {
namespace {

using DeployTest = E2eTest;

TEST_F(DeployTest, BothComponentsRunAsPodsFromTheProjectImage) {
  for (const std::string name : {"extended-resource-scheduler", "extended-resource-controller"}) {
    json d;
    ASSERT_TRUE(eventually([&] { return deploymentReady(name, &d); }, 120s))
        << name << " never had all replicas ready: " << d.dump();
    json pods = kubectlJson("get pods -n kube-system -l app.kubernetes.io/name=" + name);
    ASSERT_FALSE(pods.is_discarded());
    ASSERT_FALSE(pods["items"].empty()) << name;
    for (const auto& pod : pods["items"]) {
      EXPECT_EQ(pod.value("/spec/nodeName"_json_pointer, std::string()), node());
      bool fromProjectImage = false;
      for (const auto& c : pod["spec"]["containers"]) {
        fromProjectImage |=
            c.value("image", "").find("kube-extended-resource:") != std::string::npos;
      }
      EXPECT_TRUE(fromProjectImage) << pod["spec"]["containers"].dump();
      // The in-cluster way: a projected ServiceAccount token, no kubeconfig.
      EXPECT_EQ(pod.value("/spec/serviceAccountName"_json_pointer, std::string()), name);
    }
  }
}

TEST_F(DeployTest, TheNodeAgentRunsOnEachNodeRegisteredWithItsRuntime) {
  const std::string name = "extended-resource-node-agent";
  for (const std::string& n : nodes()) {
    std::vector<json> pods;
    ASSERT_TRUE(eventually(
        [&] {
          pods = componentPods(name, n);
          // Ready means registered with containerd's NRI socket and the caches synced.
          return pods.size() == 1 &&
                 pods[0].value("/status/containerStatuses/0/ready"_json_pointer, false);
        },
        120s))
        << n << ": " << json(pods).dump();
    const json& pod = pods[0];
    EXPECT_EQ(pod.value("/spec/serviceAccountName"_json_pointer, std::string()), name);
    EXPECT_NE(pod.value("/spec/containers/0/image"_json_pointer, std::string())
                  .find("kube-extended-resource:"),
              std::string::npos);
  }
}

TEST_F(DeployTest, EachComponentElectsOneLeaderThroughItsLease) {
  for (const std::string lease : {"extended-resource-scheduler", "extended-resource-controller"}) {
    std::string holder;
    ASSERT_TRUE(eventually(
        [&] {
          try {
            holder = api_->get(resources::kLeases, "kube-system", lease)
                         .value("/spec/holderIdentity"_json_pointer, std::string());
          } catch (const std::exception&) {
            holder.clear();
          }
          return !holder.empty();
        },
        120s))
        << "lease kube-system/" << lease << " has no holder";
  }
}

}  // namespace
}  // namespace ker::e2e

// The RBAC of deploy/ is least privilege: each component's ServiceAccount may do what the
// component needs (the extender and controller suites run with these credentials, which
// shows it is enough) and nothing beyond it that matters.
#include <gtest/gtest.h>

#include "test_env.h"

namespace ker::itest {
namespace {

struct Check {
  std::string request;  // arguments to `kubectl auth can-i`
  bool allowed;
};

class RbacTest : public ApiTest {
 protected:
  void SetUp() override {
    ApiTest::SetUp();
    if (env_ != nullptr) {
      env_->ensureDeployRbac();
    }
  }

  void expectRights(const std::string& serviceAccount, const std::vector<Check>& checks) {
    for (const auto& c : checks) {
      std::string out;
      int rc = env_->kubectl(
          "auth can-i " + c.request + " --as=system:serviceaccount:kube-system:" + serviceAccount,
          &out);
      EXPECT_EQ(rc == 0, c.allowed) << serviceAccount << " can-i " << c.request << ": " << out;
    }
  }
};

TEST_F(RbacTest, ExtenderServiceAccountHasWhatItNeedsAndNoMore) {
  expectRights(
      "extended-resource-scheduler-extender",
      {
          {"list extendedresources.extendedresource.io", true},
          {"watch extendedresourceclaims.extendedresource.io -A", true},
          {"update extendedresources.extendedresource.io --subresource=status", true},
          {"update extendedresourceclaims.extendedresource.io --subresource=status -A", true},
          {"create pods --subresource=binding -A", true},
          {"watch nodes", true},
          {"create events -A", true},
          // kube-scheduler's leader election is not the extender's.
          {"get leases/extended-resource-scheduler -n kube-system", false},
          {"update leases/extended-resource-scheduler -n kube-system", false},
          // It makes the claims of pods' class requests at bind.
          {"create extendedresourceclaims.extendedresource.io -A", true},
          // Devices and claims are the users': beyond that, the extender only writes status.
          {"update extendedresources.extendedresource.io", false},
          {"create extendedresources.extendedresource.io", false},
          {"delete extendedresources.extendedresource.io", false},
          {"update extendedresourceclaims.extendedresource.io -A", false},
          {"delete extendedresourceclaims.extendedresource.io -A", false},
          {"update leases/extended-resource-controller -n kube-system", false},
          {"get secrets -A", false},
          {"update nodes", false},
          {"create pods -A", false},
          // Unused: it writes statuses whole and pods only through pods/status.
          {"patch pods -A", false},
          {"update pods -A", false},
          {"patch extendedresources.extendedresource.io --subresource=status", false},
          {"patch pods --subresource=status -A", true},
          {"delete pods -A", true},
      });
}

// kube-scheduler's ServiceAccount keeps the bootstrap scheduler's rights and its Lease; the
// extender's are not among them.
TEST_F(RbacTest, KubeSchedulersServiceAccountHasNoneOfTheExtendersRights) {
  expectRights(
      "extended-resource-scheduler",
      {
          {"get leases/extended-resource-scheduler -n kube-system", true},
          {"update leases/extended-resource-scheduler -n kube-system", true},
          {"update extendedresources.extendedresource.io --subresource=status", false},
          {"update extendedresourceclaims.extendedresource.io --subresource=status -A", false},
          {"list extendedresourceclaims.extendedresource.io -A", false},
      });
}

TEST_F(RbacTest, ControllerServiceAccountHasWhatItNeedsAndNoMore) {
  expectRights(
      "extended-resource-controller",
      {
          {"watch pods -A", true},
          {"patch pods -A", true},
          {"list extendedresources.extendedresource.io", true},
          {"update extendedresources.extendedresource.io --subresource=status", true},
          {"update extendedresourceclaims.extendedresource.io --subresource=status -A", true},
          // The claims of pods that name templates: made from the templates, owned by the pods.
          {"watch extendedresourceclaimtemplates.extendedresource.io -A", true},
          {"create extendedresourceclaims.extendedresource.io -A", true},
          {"update pods --subresource=finalizers -A", true},
          {"update extendedresourceclaims.extendedresource.io -A", false},
          {"create extendedresourceclaimtemplates.extendedresource.io -A", false},
          {"create events -A", true},
          {"create leases -n kube-system", true},
          {"update leases/extended-resource-controller -n kube-system", true},
          {"update leases/extended-resource-scheduler -n kube-system", false},
          {"update leases/kube-scheduler -n kube-system", false},
          {"create pods --subresource=binding -A", false},
          {"delete pods -A", false},
          {"update extendedresources.extendedresource.io", false},
          {"delete extendedresourceclaims.extendedresource.io -A", false},
          {"get secrets -A", false},
          // Nodes: only whether one is registered (a device's node without one is not offered).
          {"watch nodes", true},
          {"get nodes", false},
          {"patch nodes", false},
          {"create leases -n default", false},
          // The class policies' params: only the deployed Namespace, never another.
          {"update namespaces/extended-resource-classes", true},
          {"update namespaces/kube-system", false},
          {"create namespaces", false},
      });
}

TEST_F(RbacTest, NoRoleOfDeployUsesWildcards) {
  std::string out;
  ASSERT_EQ(env_->kubectl("get clusterrole extended-resource-scheduler-extender "
                          "extended-resource-controller -o json",
                          &out),
            0)
      << out;
  auto roles = nlohmann::json::parse(out);
  for (const auto& role : roles["items"]) {
    for (const auto& rule : role["rules"]) {
      for (const char* field : {"verbs", "resources", "apiGroups"}) {
        for (const auto& v : rule.value(field, nlohmann::json::array())) {
          EXPECT_NE(v, "*") << role["metadata"]["name"] << " " << field;
        }
      }
    }
  }
}

TEST_F(RbacTest, NodeAgentServiceAccountHasWhatItNeedsAndNoMore) {
  expectRights(
      "extended-resource-node-agent",
      {
          {"create extendedresources.extendedresource.io", true},
          {"update extendedresources.extendedresource.io", true},
          {"delete extendedresources.extendedresource.io", true},
          {"update extendedresources.extendedresource.io --subresource=status", true},
          {"watch extendedresourceclaims.extendedresource.io -A", true},
          {"create events -A", true},
          // Allocations are the extender's and the controller's.
          {"update extendedresourceclaims.extendedresource.io --subresource=status -A", false},
          {"update extendedresourceclaims.extendedresource.io -A", false},
          {"create pods --subresource=binding -A", false},
          // The pods' requests and the node's capacity for the classes.
          {"get pods -A", true},
          {"patch nodes --subresource=status", true},
          {"update pods -A", false},
          {"get secrets -A", false},
          {"update nodes", false},
          {"patch nodes", false},
      });
}

}  // namespace
}  // namespace ker::itest

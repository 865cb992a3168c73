#include "tools/rbac/rbac_usage.h"

#include <gtest/gtest.h>

namespace ker::rbac {
namespace {

const std::string kUser = "system:serviceaccount:kube-system:ctl";

std::vector<nlohmann::json> manifests() {
  return {
      {{"kind", "ClusterRole"},
       {"metadata", {{"name", "ctl"}}},
       {"rules",
        {{{"apiGroups", {""}}, {"resources", {"pods", "pods/status"}}, {"verbs", {"get", "patch"}}},
         {{"apiGroups", {"admissionregistration.k8s.io"}},
          {"resources", {"validatingadmissionpolicies"}},
          {"resourceNames", {"p"}},
          {"verbs", {"get"}}}}}},
      {{"kind", "ClusterRoleBinding"},
       {"metadata", {{"name", "ctl"}}},
       {"roleRef", {{"kind", "ClusterRole"}, {"name", "ctl"}}},
       {"subjects", {{{"kind", "ServiceAccount"}, {"name", "ctl"}, {"namespace", "kube-system"}}}}},
      {{"kind", "Role"},
       {"metadata", {{"name", "lease"}, {"namespace", "kube-system"}}},
       {"rules",
        {{{"apiGroups", {"coordination.k8s.io"}},
          {"resources", {"leases"}},
          {"verbs", {"update"}}}}}},
      {{"kind", "RoleBinding"},
       {"metadata", {{"name", "lease"}, {"namespace", "kube-system"}}},
       {"roleRef", {{"kind", "Role"}, {"name", "lease"}}},
       {"subjects", {{{"kind", "ServiceAccount"}, {"name", "ctl"}, {"namespace", "kube-system"}}}}},
      // A role of the cluster's own, referred to but not defined here: not expanded.
      {{"kind", "ClusterRoleBinding"},
       {"metadata", {{"name", "sys"}}},
       {"roleRef", {{"kind", "ClusterRole"}, {"name", "system:kube-scheduler"}}},
       {"subjects", {{{"kind", "ServiceAccount"}, {"name", "ctl"}, {"namespace", "kube-system"}}}}},
  };
}

std::string auditLine(const std::string& verb, const std::string& group,
                      const std::string& resource, const std::string& sub, const std::string& ns,
                      const std::string& name, int code,
                      const std::string& stage = "ResponseComplete",
                      const std::string& decision = "allow") {
  nlohmann::json ref = {{"resource", resource}, {"apiGroup", group}};
  if (!sub.empty()) {
    ref["subresource"] = sub;
  }
  if (!ns.empty()) {
    ref["namespace"] = ns;
  }
  if (!name.empty()) {
    ref["name"] = name;
  }
  return nlohmann::json{{"kind", "Event"},
                        {"stage", stage},
                        {"verb", verb},
                        {"user", {{"username", kUser}}},
                        {"objectRef", ref},
                        {"responseStatus", {{"code", code}}},
                        {"annotations", {{"authorization.k8s.io/decision", decision}}}}
      .dump();
}

TEST(RbacUsage, ExpandsTheProjectsOwnRolesPerBoundServiceAccount) {
  auto grants = grantsOf(manifests());
  ASSERT_EQ(grants.count(kUser), 1u);
  std::vector<std::string> got;
  for (const auto& g : grants[kUser]) {
    got.push_back(g.describe());
  }
  EXPECT_EQ(got, (std::vector<std::string>{
                     "get core/pods", "get core/pods/status",
                     "get admissionregistration.k8s.io/validatingadmissionpolicies name=p",
                     "patch core/pods", "patch core/pods/status",
                     "update coordination.k8s.io/leases ns=kube-system"}));
}

TEST(RbacUsage, ParsesOnlyCompletedAuditEvents) {
  auto r = parseAuditLine(auditLine("patch", "", "pods", "status", "ns1", "p1", 200));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->user, kUser);
  EXPECT_EQ(r->resource, "pods/status");
  EXPECT_EQ(r->ns, "ns1");
  EXPECT_EQ(r->code, 200);
  EXPECT_FALSE(parseAuditLine(auditLine("get", "", "pods", "", "", "", 200, "ResponseStarted")));
  EXPECT_FALSE(parseAuditLine("not json"));
  EXPECT_FALSE(parseAuditLine("[1,2]"));
  EXPECT_FALSE(parseAuditLine(R"({"stage":"ResponseComplete","user":"x"})"));
}

TEST(RbacUsage, ReportsUnusedGrantsAndRefusedRequestsButNotExemptOnes) {
  std::vector<Request> requests;
  for (const auto& line :
       {auditLine("get", "", "pods", "", "a", "x", 200),
        auditLine("patch", "", "pods", "status", "a", "x", 200),
        auditLine("get", "admissionregistration.k8s.io", "validatingadmissionpolicies", "", "",
                  "other", 403, "ResponseComplete", "forbid"),
        // Admission's refusal (an attack the policy stopped): RBAC allowed it, so it is a use.
        auditLine("get", "", "pods", "status", "a", "x", 403),
        // Granted but refused: the authorizer had not synced the bindings yet.
        auditLine("patch", "", "pods", "", "a", "x", 403, "ResponseComplete", "forbid"),
        auditLine("update", "coordination.k8s.io", "leases", "", "default", "l", 200)}) {
    requests.push_back(*parseAuditLine(line));
  }
  auto report = compareUsage(grantsOf(manifests()), requests, {kUser}, {"ctl patch core/pods"});
  EXPECT_EQ(report.refused, (std::vector<std::string>{
                                "ctl get admissionregistration.k8s.io/validatingadmissionpolicies "
                                "name=other"}));
  EXPECT_EQ(report.refusedThoughGranted,
            (std::vector<std::string>{"ctl patch core/pods ns=a name=x"}));
  // The lease update in another namespace is not the Role's; the policy read of another name
  // was refused, so the named grant stays unused.
  EXPECT_EQ(report.unused,
            (std::vector<std::string>{

                "ctl get admissionregistration.k8s.io/validatingadmissionpolicies name=p",
                "ctl update coordination.k8s.io/leases ns=kube-system"}));
  const Grant getPods{"get", "", "pods", "", ""};
  EXPECT_EQ(report.uses[kUser][getPods], 1u);
}

}  // namespace
}  // namespace ker::rbac

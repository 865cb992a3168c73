#include "scheduler/verb_trust.h"

#include <gtest/gtest.h>

#include <string>

namespace ker {
namespace {

using nlohmann::json;

Pod pod(const std::string& schedulerName, const std::string& claims = "") {
  json p = {{"metadata", {{"name", "p"}, {"namespace", "default"}, {"uid", "uid-p"}}},
            {"spec", {{"schedulerName", schedulerName}}}};
  if (!claims.empty()) {
    p["metadata"]["annotations"][kClaimsAnnotation] = claims;
  }
  return Pod::fromJson(p);
}

TEST(BindTrust, APodWithClaimsBindsOnlyWhereItsFilterChose) {
  const Pod p = pod("sched", "c");
  EXPECT_TRUE(checkBindTrust(p, "n1", "sched", "n1").ok());
  const Status elsewhere = checkBindTrust(p, "n2", "sched", "n1");
  EXPECT_EQ(elsewhere.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(elsewhere.message(), "the extender's filter chose node n1 for pod default/p, not n2");
  // No choice: the extender restarted, the hold expired, or the request is forged.
  const Status none = checkBindTrust(p, "n1", "sched", "");
  EXPECT_EQ(none.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(none.message(),
            "the extender's filter holds no node for pod default/p (none came, it expired, or "
            "the extender restarted)");
  // Claims the pod waits for, or an annotation that cannot be read, count as claims.
  Pod awaiting = pod("sched");
  awaiting.awaitingTemplates = {"gpu"};
  EXPECT_FALSE(checkBindTrust(awaiting, "n1", "sched", "").ok());
  Pod garbled = pod("sched");
  garbled.invalid = "bad annotation";
  EXPECT_FALSE(checkBindTrust(garbled, "n1", "sched", "").ok());
}

TEST(BindTrust, APodWithoutClaimsBindsWhereverItsSchedulerAsks) {
  EXPECT_TRUE(checkBindTrust(pod("sched"), "n1", "sched", "").ok());
  EXPECT_TRUE(checkBindTrust(pod("sched"), "n2", "sched", "n1").ok());
}

TEST(BindTrust, OnlyPodsOfTheExtendersSchedulerBind) {
  for (const Pod& p : {pod("other"), pod("other", "c"), pod("")}) {
    const Status s = checkBindTrust(p, "n1", "sched", "n1");
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(s.message(), "pod default/p has schedulerName \"" + p.schedulerName +
                               "\": this extender binds only pods of \"sched\"");
  }
  // --scheduler-name="" serves every profile.
  EXPECT_TRUE(checkBindTrust(pod("other", "c"), "n1", "", "n1").ok());
  EXPECT_TRUE(servesPod("", pod("other")));
  EXPECT_FALSE(servesPod("sched", pod("other")));
}

}  // namespace
}  // namespace ker

#include <gtest/gtest.h>

#include <string>

#include "model/served_pods.h"
#include "scheduler/bind/bind_trust.h"
#include "scheduler/preemption/preemptor_trust.h"

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
  EXPECT_TRUE(checkBindTrust(p, {}, "n1", "sched", "n1").ok());
  const Status elsewhere = checkBindTrust(p, {}, "n2", "sched", "n1");
  EXPECT_EQ(elsewhere.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(elsewhere.message(), "the extender's filter chose node n1 for pod default/p, not n2");
  // No choice: the extender restarted, the hold expired, or the request is forged.
  const Status none = checkBindTrust(p, {}, "n1", "sched", "");
  EXPECT_EQ(none.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(none.message(),
            "the extender's filter holds no node for pod default/p (none came, it expired, or "
            "the extender restarted)");
  // Claims the pod waits for, or an annotation that cannot be read, count as claims.
  Pod awaiting = pod("sched");
  awaiting.awaitingTemplates = {"gpu"};
  EXPECT_FALSE(checkBindTrust(awaiting, {}, "n1", "sched", "").ok());
  Pod garbled = pod("sched");
  garbled.invalid = "bad annotation";
  EXPECT_FALSE(checkBindTrust(garbled, {}, "n1", "sched", "").ok());
}

// A pod asking for a class's resource has claims, recorded or not: it binds only where its
// filter chose, as the filter passes it only where its claims fit.
TEST(BindTrust, APodAskingForAClasssResourceBindsOnlyWhereItsFilterChose) {
  ClassRequests classes;
  classes["example.com/gpu"] = ClassRequest{nullptr, {}};
  EXPECT_FALSE(checkBindTrust(pod("sched"), classes, "n1", "sched", "").ok());
  EXPECT_TRUE(checkBindTrust(pod("sched"), classes, "n1", "sched", "n1").ok());
}

TEST(BindTrust, APodWithoutClaimsBindsWhereverItsSchedulerAsks) {
  EXPECT_TRUE(checkBindTrust(pod("sched"), {}, "n1", "sched", "").ok());
  EXPECT_TRUE(checkBindTrust(pod("sched"), {}, "n2", "sched", "n1").ok());
}

TEST(BindTrust, OnlyPodsOfTheExtendersSchedulerBind) {
  for (const Pod& p : {pod("other"), pod("other", "c"), pod("")}) {
    const Status s = checkBindTrust(p, {}, "n1", "sched", "n1");
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(s.message(), "pod default/p has schedulerName \"" + p.schedulerName +
                               "\": this extender binds only pods of \"sched\"");
  }
  // --scheduler-name="" serves every profile.
  EXPECT_TRUE(checkBindTrust(pod("other", "c"), {}, "n1", "", "n1").ok());
  EXPECT_TRUE(servedPod(pod("other"), ""));
  EXPECT_FALSE(servedPod(pod("other"), "sched"));
  EXPECT_TRUE(servedPod(pod("sched"), "sched"));
}

TEST(PreemptorTrust, OnlyTheLivePodTheOrderWasDecidedForPreempts) {
  const PreemptionOrder order{.preemptorUid = "uid-p",
                              .preemptorNs = "default",
                              .preemptorName = "p",
                              .preemptorPriority = 1000,
                              .node = "n1"};
  Pod live = pod("sched", "c");
  live.priority = 1000;
  EXPECT_TRUE(checkPreemptorTrust(live, order, "sched").ok());

  struct Case {
    std::string why;
    std::optional<Pod> live;
    std::string message;
  };
  auto changed = [&](auto change) {
    Pod p = live;
    change(p);
    return std::optional<Pod>(p);
  };
  const std::vector<Case> cases = {
      {"absent", std::nullopt, "the preemptor does not exist"},
      {"recreated", changed([](Pod& p) { p.meta.uid = "uid-q"; }),
       "the preemptor has UID uid-q, not uid-p"},
      {"bound", changed([](Pod& p) { p.nodeName = "n2"; }), "the preemptor is bound to node n2"},
      {"deleting", changed([](Pod& p) { p.meta.deleting = true; }),
       "the preemptor is being deleted"},
      {"other scheduler", changed([](Pod& p) { p.schedulerName = "other"; }),
       "the preemptor has schedulerName \"other\", not \"sched\""},
      {"lower priority", changed([](Pod& p) { p.priority = 0; }),
       "the preemptor has priority 0, not 1000 as the preemption was decided for"},
      {"never preempts", changed([](Pod& p) { p.preemptNever = true; }),
       "the preemptor has preemptionPolicy Never"},
  };
  for (const Case& c : cases) {
    const Status s = checkPreemptorTrust(c.live, order, "sched");
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << c.why;
    EXPECT_EQ(s.message(), c.message) << c.why;
  }
}

}  // namespace
}  // namespace ker

// Workloads with claims on the real node: scheduled by the in-cluster second scheduler, run
// by the kubelet, and released by the in-cluster controller when the kubelet reports them
// finished or gone.
#include <gtest/gtest.h>

#include <thread>

#include "e2e_fixture.h"

namespace ker::e2e {
namespace {

using WorkloadTest = E2eTest;

std::string claimPhase(const json& claim) {
  return claim.value("/status/phase"_json_pointer, std::string());
}

std::string claimPodUid(const json& claim) {
  return claim.value("/status/podRef/uid"_json_pointer, std::string());
}

TEST_F(WorkloadTest, ContainerStartsWithItsClaimBound) {
  createDevice(uniqueName("gpu"));
  createClaim("gpu");
  std::string uid = createPod(busyboxPod("app", {"gpu"},
                                         "echo \"allocation=$ALLOCATION\"; "
                                         "exec sleep 3600"));

  ASSERT_TRUE(eventually([&] { return podRunning("app"); }, 120s))
      << "phase " << podPhase("app")
      << "; FailedScheduling: " << testing::PrintToString(eventMessages("app", "FailedScheduling"));
  std::string out;
  ASSERT_TRUE(
      eventually([&] { return (out = logs("app")).find("allocation=") != std::string::npos; }, 30s))
      << out;
  // The container saw the device the extender allocated, by name and device ID.
  EXPECT_NE(out.find(devices_[0]), std::string::npos) << out;
  EXPECT_NE(out.find(devices_[0] + "-id"), std::string::npos) << out;

  json claim = getClaim("gpu");
  EXPECT_EQ(claimPhase(claim), "Bound");
  EXPECT_EQ(claimPodUid(claim), uid);
  EXPECT_EQ(claim.value("/status/nodeName"_json_pointer, std::string()), node());
  EXPECT_EQ(getDevice(devices_[0]).value("/status/phase"_json_pointer, std::string()), "Bound");
}

TEST_F(WorkloadTest, ExitedContainerMakesThePodSucceededAndReleasesTheClaim) {
  createDevice(uniqueName("gpu"));
  createClaim("gpu");
  createPod(busyboxPod("job", {"gpu"}, "echo done", 1, "Never"));

  ASSERT_TRUE(eventually([&] { return podPhase("job") == "Succeeded"; }, 120s))
      << "phase " << podPhase("job");
  EXPECT_NE(logs("job").find("done"), std::string::npos);
  json claim;
  ASSERT_TRUE(eventually(
      [&] {
        claim = getClaim("gpu");
        return claimPhase(claim) == "Pending" && claimPodUid(claim).empty();
      },
      60s))
      << claim.dump();
  // Free to the next bind with the claim's release already; written so after the controller's
  // --freed-device-write-delay (10 s).
  EXPECT_TRUE(eventually(
      [&] {
        return getDevice(devices_[0]).value("/status/phase"_json_pointer, std::string()) ==
               "Available";
      },
      60s));
}

TEST_F(WorkloadTest, GracefulDeleteKeepsTheClaimUntilTheKubeletConfirmsThePodGone) {
  createDevice(uniqueName("gpu"));
  createClaim("gpu");
  // The first holder takes a few seconds to stop after SIGTERM, as real workloads do.
  std::string first =
      createPod(busyboxPod("first", {"gpu"},
                           "trap 'echo stopping; sleep 4; echo stopped; exit 0' TERM; echo up; "
                           "while true; do sleep 1; done",
                           30));
  ASSERT_TRUE(eventually([&] { return podRunning("first"); }, 120s)) << podPhase("first");
  ASSERT_TRUE(eventually([&] { return logs("first").find("up") != std::string::npos; }, 30s));
  // The next pod waits for the same claim.
  std::string second = createPod(busyboxPod("second", {"gpu"}, "echo second; exec sleep 3600"));
  ASSERT_TRUE(
      eventually([&] { return !eventMessages("second", "FailedScheduling").empty(); }, 60s));
  EXPECT_EQ(podPhase("second"), "Pending");

  deletePod("first");
  // Until the kubelet reports the container stopped (a terminal phase) or the pod gone, the
  // claim stays with it, however long the container takes to stop.
  int terminatingObservations = 0;
  std::string firstFinishedAt;
  while (auto pod = getPod("first")) {
    const std::string phase = pod->value("/status/phase"_json_pointer, std::string());
    if (phase == "Succeeded" || phase == "Failed") {
      firstFinishedAt = pod->value(
          "/status/containerStatuses/0/state/terminated/finishedAt"_json_pointer, std::string());
    } else if (pod->contains("/metadata/deletionTimestamp"_json_pointer)) {
      ++terminatingObservations;
      json claim = getClaim("gpu");
      ASSERT_EQ(claimPhase(claim), "Bound") << claim.dump();
      ASSERT_EQ(claimPodUid(claim), first) << claim.dump();
    }
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_GT(terminatingObservations, 5) << "the pod did not stay terminating for its trap";

  ASSERT_TRUE(eventually([&] { return podRunning("second"); }, 120s)) << podPhase("second");
  json claim = getClaim("gpu");
  EXPECT_EQ(claimPhase(claim), "Bound");
  EXPECT_EQ(claimPodUid(claim), second);
  EXPECT_TRUE(eventually([&] { return logs("second").find("second") != std::string::npos; }, 30s));
  // The next pod's container started only after the first one's had stopped (RFC 3339
  // timestamps of one format compare as strings).
  std::string secondStartedAt = getPod("second")->value(
      "/status/containerStatuses/0/state/running/startedAt"_json_pointer, std::string());
  if (!firstFinishedAt.empty()) {
    EXPECT_LE(firstFinishedAt, secondStartedAt);
  }
}

TEST_F(WorkloadTest, PodNamingAMissingClaimGetsItsFailedSchedulingReason) {
  createPod(busyboxPod("orphan", {"no-such-claim"}, "exec sleep 3600"));
  std::vector<std::string> messages;
  ASSERT_TRUE(eventually(
      [&] {
        messages = eventMessages("orphan", "FailedScheduling");
        return !messages.empty();
      },
      60s));
  EXPECT_NE(messages.front().find("claim " + ns_ + "/no-such-claim not found"), std::string::npos)
      << messages.front();
  EXPECT_EQ(podPhase("orphan"), "Pending");
}

}  // namespace
}  // namespace ker::e2e

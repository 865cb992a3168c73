// The in-cluster components killed mid-run: Kubernetes replaces their pods, the standby
// replicas take over, pods keep being scheduled and released, and nothing is ever allocated
// twice.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "common/resource.h"
#include "e2e_fixture.h"

namespace ker::e2e {
namespace {

class ResilienceTest : public E2eTest {
 protected:
  // The pod of deploy/'s component that holds the component's Lease (holder identities start
  // with the pod's hostname, which is its name).
  std::string leaderPod(const std::string& component) {
    std::string holder = api_->get(resources::kLeases, "kube-system", component)
                             .value("/spec/holderIdentity"_json_pointer, std::string());
    for (const auto& p : componentPods(component)) {
      std::string name = p["metadata"]["name"];
      if (holder.rfind(name, 0) == 0) {
        return name;
      }
    }
    return "";
  }

  void killPod(const std::string& name) {
    api_->remove(resources::kPods, "kube-system", name, DeleteOptions{.gracePeriodSeconds = 0});
  }
};

TEST_F(ResilienceTest, KillingTheExtenderAndControllerLeadersMidRunLosesNothing) {
  constexpr int kDevices = 3;
  constexpr int kPods = 6;
  for (int i = 0; i < kDevices; ++i) {
    createDevice(uniqueName("gpu"));
  }
  for (int i = 0; i < kPods; ++i) {
    createClaim("c" + std::to_string(i));
  }
  for (int i = 0; i < kPods; ++i) {
    createPod(busyboxPod("p" + std::to_string(i), {"c" + std::to_string(i)},
                         "echo \"$ALLOCATION\"; exec sleep 3600"));
  }
  auto running = [&] {
    std::set<std::string> out;
    for (int i = 0; i < kPods; ++i) {
      if (podRunning("p" + std::to_string(i))) {
        out.insert("p" + std::to_string(i));
      }
    }
    return out;
  };
  ASSERT_TRUE(eventually([&] { return running().size() == kDevices; }, 120s))
      << running().size() << " running";
  std::set<std::string> firstWave = running();

  std::string scheduler, controller;
  ASSERT_TRUE(eventually([&] {
    return !(scheduler = leaderPod("extended-resource-scheduler")).empty() &&
           !(controller = leaderPod("extended-resource-controller")).empty();
  }));
  killPod(scheduler);
  killPod(controller);
  // Pods of the first wave go while the components change hands; the second wave must get
  // the freed devices from the new leaders.
  for (const auto& p : firstWave) {
    deletePod(p, 1);
  }

  ASSERT_TRUE(eventually(
      [&] {
        std::set<std::string> now = running();
        for (const auto& p : firstWave) {
          if (now.count(p) != 0) {
            return false;
          }
        }
        return now.size() == kPods - kDevices;
      },
      240s))
      << running().size() << " running";
  EXPECT_TRUE(eventually([&] { return deploymentReady("extended-resource-scheduler"); }, 120s));
  EXPECT_TRUE(eventually([&] { return deploymentReady("extended-resource-controller"); }, 120s));
  EXPECT_NE(leaderPod("extended-resource-scheduler"), scheduler);

  // Each running pod holds its own claim with its own device.
  std::map<std::string, std::string> deviceHolder;
  for (const auto& p : running()) {
    json claim = getClaim("c" + p.substr(1));
    ASSERT_EQ(claim.value("/status/phase"_json_pointer, std::string()), "Bound") << claim.dump();
    ASSERT_EQ(claim.value("/status/podRef/uid"_json_pointer, std::string()),
              getPod(p)->value("/metadata/uid"_json_pointer, std::string()));
    for (const auto& d : claim["status"]["extendedResourceNames"]) {
      EXPECT_TRUE(deviceHolder.emplace(d.get<std::string>(), p).second)
          << d << " is allocated to both " << deviceHolder[d] << " and " << p;
    }
  }
  std::string violations;
  EXPECT_TRUE(eventually([&] { return (violations = env_->invariantViolations()).empty(); }, 30s))
      << violations;
}

}  // namespace
}  // namespace ker::e2e

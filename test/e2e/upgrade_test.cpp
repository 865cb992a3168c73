// The components rolled out the way an upgrade rolls them, while pods hold devices: a new pod
// template revision of each Deployment and of the node agent's DaemonSet, replaced under the
// update strategy deploy/ ships, one at a time and then all at once; and a CRD replaced by one
// with a new optional field. Running containers keep their devices and are never restarted, no
// claim is released, no device is given twice, and pods created during and after each rollout
// get devices of their own.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/api_error.h"
#include "common/resource.h"
#include "e2e_fixture.h"
#include "model/objects.h"

namespace ker::e2e {
namespace {

struct Workload {
  std::string kind;  // "deployment" or "daemonset"
  std::string name;
};

const std::vector<Workload> kComponents = {
    {"deployment", "extended-resource-controller"},
    {"deployment", "extended-resource-scheduler"},
    {"daemonset", "extended-resource-node-agent"},
};

// What a running device pod must still show after every step.
struct Holder {
  std::string uid;
  std::string containerId;
  std::vector<std::string> devices;
};

class UpgradeTest : public E2eTest {
 protected:
  // A new revision of the workload's pod template, as `kubectl rollout restart` (or a new image)
  // makes one.
  void roll(const Workload& w) {
    ASSERT_EQ(env_->kubectl("rollout restart " + w.kind + "/" + w.name + " -n kube-system"), 0)
        << w.name;
  }

  // True once the workload's controller has seen its newest template and every replica runs
  // it, ready and available, with no pod of an older revision left.
  bool rolledOut(const Workload& w) {
    json o = kubectlJson("get " + w.kind + " -n kube-system " + w.name);
    if (o.is_discarded() || o.value("/status/observedGeneration"_json_pointer, int64_t{0}) <
                                o.value("/metadata/generation"_json_pointer, int64_t{1})) {
      return false;
    }
    auto status = [&](const char* field) {
      return o.value(json::json_pointer(std::string("/status/") + field), int64_t{-1});
    };
    if (w.kind == "deployment") {
      const auto want = o.value("/spec/replicas"_json_pointer, int64_t{1});
      return status("replicas") == want && status("updatedReplicas") == want &&
             status("readyReplicas") == want && status("availableReplicas") == want;
    }
    const auto want = status("desiredNumberScheduled");
    return want > 0 && status("updatedNumberScheduled") == want && status("numberReady") == want &&
           status("numberAvailable") == want;
  }

  // The names of the workload's pods that are not terminating.
  std::set<std::string> podsOf(const Workload& w) {
    std::set<std::string> out;
    for (const auto& p : componentPods(w.name)) {
      out.insert(p["metadata"]["name"].get<std::string>());
    }
    return out;
  }

  // A device pod through its own claim, printing the IDs it was given and then sleeping.
  void startDevicePod(const std::string& name) {
    createClaim(name);
    createPod(busyboxPod(name, {name}, "echo \"ids=$" + deviceEnvName() + "\"; exec sleep 3600"));
  }

  // The pod runs with exactly its claim's device, as the claim's status names it.
  Holder awaitRunningWithItsDevice(const std::string& name, std::chrono::seconds bound) {
    Holder h;
    std::string out;
    const bool running = eventually(
        [&] {
          json claim = getClaim(name);
          auto pod = getPod(name);
          if (!pod || pod->value("/status/phase"_json_pointer, std::string()) != "Running" ||
              claim.value("/status/phase"_json_pointer, std::string()) != "Bound") {
            return false;
          }
          h.devices = claim["status"].value("extendedResourceNames", std::vector<std::string>());
          h.uid = pod->value("/metadata/uid"_json_pointer, std::string());
          h.containerId = containerIdOf(*pod);
          out = logs(name);
          return h.devices.size() == 1 && out.find("ids=" + h.devices[0] + "-id\n") == 0;
        },
        bound);
    EXPECT_TRUE(running) << name << " should run with its claim's device: " << podPhase(name)
                         << "\n"
                         << out;
    return h;
  }

  // Every holder still runs the same container, never restarted, with the same device, and its
  // claim still names it.
  void expectHoldersUntouched(const std::map<std::string, Holder>& holders,
                              const std::string& after) {
    for (const auto& [name, want] : holders) {
      auto pod = getPod(name);
      ASSERT_TRUE(pod) << name << " is gone after " << after;
      EXPECT_EQ(pod->value("/status/phase"_json_pointer, std::string()), "Running")
          << name << " after " << after;
      EXPECT_EQ(containerIdOf(*pod), want.containerId) << name << " after " << after;
      EXPECT_EQ(pod->value("/status/containerStatuses/0/restartCount"_json_pointer, -1), 0)
          << name << " after " << after;
      json claim = getClaim(name);
      EXPECT_EQ(claim.value("/status/phase"_json_pointer, std::string()), "Bound")
          << name << " after " << after << ": " << claim.dump();
      EXPECT_EQ(claim["status"].value("extendedResourceNames", std::vector<std::string>()),
                want.devices)
          << name << " after " << after;
      EXPECT_EQ(claim.value("/status/podRef/uid"_json_pointer, std::string()), want.uid)
          << name << " after " << after;
      EXPECT_EQ(logs(name), "ids=" + want.devices[0] + "-id\n")
          << name << " saw a second start or another device after " << after;
    }
  }

  // Rolls `workloads` together, starts pod `name` while they roll, and checks the holders and
  // the new pod once every one of them has rolled out.
  void rollWhilePodsRun(const std::vector<Workload>& workloads, const std::string& name,
                        std::map<std::string, Holder>& holders) {
    std::map<std::string, std::set<std::string>> before;
    for (const auto& w : workloads) {
      before[w.name] = podsOf(w);
      ASSERT_FALSE(before[w.name].empty()) << w.name;
      ASSERT_NO_FATAL_FAILURE(roll(w));
    }
    startDevicePod(name);
    for (const auto& w : workloads) {
      ASSERT_TRUE(eventually([&] { return rolledOut(w); }, 240s))
          << w.name << " did not roll out: "
          << kubectlJson("get " + w.kind + " -n kube-system " + w.name).dump();
    }
    for (const auto& w : workloads) {
      for (const auto& old : before[w.name]) {
        EXPECT_EQ(podsOf(w).count(old), 0u) << old << " of " << w.name << " was not replaced";
      }
    }
    Holder started = awaitRunningWithItsDevice(name, 180s);
    ASSERT_FALSE(started.devices.empty());
    ASSERT_NO_FATAL_FAILURE(expectHoldersUntouched(holders, "rolling out " + name));
    holders.emplace(name, std::move(started));
  }
};

TEST_F(UpgradeTest, RollingOutEachComponentAndAllAtOnceLeavesRunningContainersAlone) {
  // Two holders from before, one pod started during each of the four rollouts.
  constexpr int kDevices = 6;
  for (int i = 0; i < kDevices; ++i) {
    createDevice(uniqueName("gpu"));
  }
  std::map<std::string, Holder> holders;
  for (const char* name : {"before-0", "before-1"}) {
    startDevicePod(name);
  }
  for (const char* name : {"before-0", "before-1"}) {
    holders.emplace(name, awaitRunningWithItsDevice(name, 120s));
    ASSERT_FALSE(holders[name].devices.empty());
  }

  for (const auto& w : kComponents) {
    SCOPED_TRACE(w.name);
    ASSERT_NO_FATAL_FAILURE(
        rollWhilePodsRun({w}, "during-" + w.kind + "-" + std::to_string(holders.size()), holders));
  }
  {
    SCOPED_TRACE("all at once");
    ASSERT_NO_FATAL_FAILURE(rollWhilePodsRun(kComponents, "during-all", holders));
  }

  std::map<std::string, std::string> holderOf;
  for (const auto& [name, h] : holders) {
    for (const auto& d : h.devices) {
      EXPECT_TRUE(holderOf.emplace(d, name).second)
          << d << " is held by both " << holderOf[d] << " and " << name;
    }
  }
  std::string violations;
  EXPECT_TRUE(eventually([&] { return (violations = env_->invariantViolations()).empty(); }, 30s))
      << violations;
}

// A CRD replaced by a newer one that adds an optional field (what applying a release's crds/
// does) while pods hold devices: existing claims keep being served, and a claim that sets the
// new field is allocated like any other.
TEST_F(UpgradeTest, ACrdGainingAFieldLeavesClaimsAndPodsServed) {
  const std::string crd = "extendedresourceclaims.extendedresource.io";
  for (int i = 0; i < 2; ++i) {
    createDevice(uniqueName("gpu"));
  }
  std::map<std::string, Holder> holders;
  startDevicePod("before");
  holders.emplace("before", awaitRunningWithItsDevice("before", 120s));
  ASSERT_FALSE(holders["before"].devices.empty());

  json original = kubectlJson("get crd " + crd);
  ASSERT_FALSE(original.is_discarded());
  for (const char* field :
       {"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"}) {
    original["metadata"].erase(field);
  }
  original.erase("status");
  json newer = original;
  for (auto& version : newer["spec"]["versions"]) {
    version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["upgradeNote"] = {
        {"type", "string"}, {"description", "A field a later release added."}};
  }
  auto replace = [&](const json& object) {
    char path[] = "/tmp/ker-upgrade-crd-XXXXXX";
    const int fd = ::mkstemp(path);
    if (fd < 0) {
      return false;
    }
    ::close(fd);
    std::ofstream(path) << object.dump();
    const bool ok = env_->kubectl("replace -f " + std::string(path)) == 0;
    std::remove(path);
    return ok;
  };
  ASSERT_TRUE(replace(newer));
  // Later tests see the CRD as crds/ ships it, whatever happens below.
  const OnScopeExit restore([&] { EXPECT_TRUE(replace(original)) << "could not restore " << crd; });

  // The API server serves the new schema once the CRD is Established again with it; a claim
  // setting the field is then kept as written.
  json claim = itest::claimObject(ns_, "after", resource_, 1, {{"type", "k80"}});
  claim["spec"]["upgradeNote"] = "set by a newer client";
  ASSERT_TRUE(eventually(
      [&] {
        try {
          json created = api_->create(resources::kExtendedResourceClaims, ns_, claim);
          if (created.value("/spec/upgradeNote"_json_pointer, std::string()) ==
              "set by a newer client") {
            return true;
          }
          // Pruned under the old schema: try again once the new one is served.
          api_->remove(resources::kExtendedResourceClaims, ns_, "after");
        } catch (const ApiError&) {
        }
        return false;
      },
      60s));
  createPod(
      busyboxPod("after", {"after"}, "echo \"ids=$" + deviceEnvName() + "\"; exec sleep 3600"));
  Holder after = awaitRunningWithItsDevice("after", 120s);
  ASSERT_FALSE(after.devices.empty());
  EXPECT_NE(after.devices, holders["before"].devices);
  ASSERT_NO_FATAL_FAILURE(expectHoldersUntouched(holders, "the CRD gained a field"));
}

}  // namespace
}  // namespace ker::e2e

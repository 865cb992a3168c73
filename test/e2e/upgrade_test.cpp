// Upgrades while pods hold devices: from the previous release (test/e2e/previous-release.env:
// its own image, manifests and CRDs) to this one, the way deploy/README.md says (CRDs, then the
// rest of deploy/), one component at a time and then all at once (after a rollback to the
// previous release, itself all at once); and a CRD replaced by one with a new optional field.
// Running containers keep their devices and are never restarted, no claim is released, no device
// is given twice, and pods created during and after each rollout get devices of their own.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/api_error.h"
#include "common/resource.h"
#include "e2e_fixture.h"
#include "model/objects.h"

namespace ker::e2e {
namespace {

struct Workload {
  std::string kind;  // "Deployment" or "DaemonSet"
  std::string name;
};

// In the order deploy/README.md gives for one at a time: the scheduler first, since the rest
// of deploy/ moves the extender's rights to a ServiceAccount the previous release's pods do not
// run as.
const std::vector<Workload> kComponents = {
    {"Deployment", "extended-resource-scheduler"},
    {"Deployment", "extended-resource-controller"},
    {"DaemonSet", "extended-resource-node-agent"},
};

// What a running device pod must still show after every step.
struct Holder {
  std::string uid;
  std::string containerId;
  std::vector<std::string> devices;
};

// A release as a user holds it: its CRDs and its rendered deploy/ (env keys PREFIX_CRDS and
// PREFIX_DEPLOY, written by test/e2e/cluster-up.sh).
struct Release {
  std::string name;
  std::string crds;
  std::string deploy;
  json objects;  // deploy's objects, in its order
};

class UpgradeTest : public E2eTest {
 protected:
  // `kubectl VERB -f FILE` with `object` written to a temporary FILE.
  int kubectlWithObject(const std::string& verb, const json& object) {
    char path[] = "/tmp/ker-upgrade-XXXXXX";
    const int fd = ::mkstemp(path);
    if (fd < 0) {
      return -1;
    }
    ::close(fd);
    std::ofstream(path) << object.dump();
    const int rc = env_->kubectl(verb + " -f " + std::string(path));
    std::remove(path);
    return rc;
  }

  Release release(const std::string& prefix) {
    Release r{prefix, env_->value(prefix + "_CRDS"), env_->value(prefix + "_DEPLOY"), json()};
    std::string out;
    if (r.deploy.empty() ||
        env_->kubectl("create --dry-run=client -o json -f " + r.deploy, &out) != 0) {
      return r;
    }
    // One JSON object after another, in the file's order.
    std::istringstream in(out);
    r.objects = json::array();
    while ((in >> std::ws).peek() != std::char_traits<char>::eof()) {
      json object;
      try {
        in >> object;
      } catch (const json::exception& e) {
        ADD_FAILURE() << "kubectl create --dry-run printed more than objects for " << r.deploy
                      << ": " << e.what();
        return r;
      }
      r.objects.push_back(std::move(object));
    }
    return r;
  }

  static bool isWorkload(const json& object, const Workload& w) {
    return object.value("kind", "") == w.kind &&
           object.value("/metadata/name"_json_pointer, std::string()) == w.name;
  }
  static bool isAnyWorkload(const json& object) {
    for (const auto& w : kComponents) {
      if (isWorkload(object, w)) {
        return true;
      }
    }
    return false;
  }
  static const json& workloadOf(const Release& r, const Workload& w) {
    for (const auto& o : r.objects) {
      if (isWorkload(o, w)) {
        return o;
      }
    }
    static const json kNone;
    return kNone;
  }

  // Step 1 of an upgrade: the release's CRDs, applied and Established again.
  void applyCrds(const Release& r) {
    try {
      env_->applyCrds(r.crds);
    } catch (const std::exception& e) {
      FAIL() << r.name << ": " << e.what();
    }
  }
  // Step 2: deploy/'s objects other than the three workloads (RBAC, configuration, policies)
  // and then those of `workloads`, in one `kubectl apply`.
  void applyDeploy(const Release& r, const std::vector<Workload>& workloads, bool withConfig) {
    json items = json::array();
    for (const auto& o : r.objects) {
      bool wanted = withConfig && !isAnyWorkload(o);
      for (const auto& w : workloads) {
        wanted = wanted || isWorkload(o, w);
      }
      if (wanted) {
        items.push_back(o);
      }
    }
    ASSERT_FALSE(items.empty()) << r.name;
    ASSERT_EQ(
        kubectlWithObject("apply", {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}), 0)
        << r.name;
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
    if (w.kind == "Deployment") {
      const auto want = o.value("/spec/replicas"_json_pointer, int64_t{1});
      return status("replicas") == want && status("updatedReplicas") == want &&
             status("readyReplicas") == want && status("availableReplicas") == want;
    }
    const auto want = status("desiredNumberScheduled");
    return want > 0 && status("updatedNumberScheduled") == want && status("numberReady") == want &&
           status("numberAvailable") == want;
  }

  // The workload's pods that are not terminating, each with its containers' images.
  std::map<std::string, std::vector<std::string>> podsOf(const Workload& w) {
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& p : componentPods(w.name)) {
      auto& images = out[p["metadata"]["name"].get<std::string>()];
      for (const auto& c : p["spec"]["containers"]) {
        images.push_back(c.value("image", ""));
      }
    }
    return out;
  }
  static std::vector<std::string> imagesOf(const json& workload) {
    std::vector<std::string> out;
    for (const auto& c : workload["spec"]["template"]["spec"]["containers"]) {
      out.push_back(c.value("image", ""));
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

  // Waits until each workload runs only pods of `r`'s template (its images), none of `before`.
  void awaitRolledOnto(const Release& r, const std::vector<Workload>& workloads,
                       const std::map<std::string, std::set<std::string>>& before) {
    for (const auto& w : workloads) {
      const auto want = imagesOf(workloadOf(r, w));
      std::map<std::string, std::vector<std::string>> pods;
      const bool done = eventually(
          [&] {
            if (!rolledOut(w)) {
              return false;
            }
            pods = podsOf(w);
            for (const auto& [pod, images] : pods) {
              if (images != want || (before.count(w.name) && before.at(w.name).count(pod))) {
                return false;
              }
            }
            return !pods.empty();
          },
          240s);
      ASSERT_TRUE(done) << w.name << " did not roll out onto " << r.name << " (" << want[0] << "): "
                        << kubectlJson("get " + w.kind + " -n kube-system " + w.name).dump();
    }
  }

  // Applies `workloads` of `r` together (with the rest of its deploy/ first when withConfig),
  // starts pod `name` while they roll, and checks the holders and the new pod once every one
  // of them runs `r`.
  void rollWhilePodsRun(const Release& r, const std::vector<Workload>& workloads, bool withConfig,
                        const std::string& name, std::map<std::string, Holder>& holders) {
    std::map<std::string, std::set<std::string>> before;
    for (const auto& w : workloads) {
      for (const auto& [pod, images] : podsOf(w)) {
        before[w.name].insert(pod);
      }
      ASSERT_FALSE(before[w.name].empty()) << w.name;
    }
    ASSERT_NO_FATAL_FAILURE(applyDeploy(r, workloads, withConfig));
    startDevicePod(name);
    ASSERT_NO_FATAL_FAILURE(awaitRolledOnto(r, workloads, before));
    Holder started = awaitRunningWithItsDevice(name, 180s);
    ASSERT_FALSE(started.devices.empty());
    ASSERT_NO_FATAL_FAILURE(expectHoldersUntouched(holders, "rolling out " + name));
    holders.emplace(name, std::move(started));
  }
};

TEST_F(UpgradeTest, FromThePreviousReleaseOneAtATimeAndAllAtOnceRunningContainersKeepTheirDevices) {
  const Release previous = release("PREVIOUS");
  const Release current = release("CURRENT");
  ASSERT_FALSE(previous.objects.empty() || previous.crds.empty())
      << "no previous release (PREVIOUS_DEPLOY, PREVIOUS_CRDS) in this cluster's env file: "
         "test/e2e/cluster-up.sh --previous-release builds it";
  ASSERT_FALSE(current.objects.empty() || current.crds.empty());
  for (const auto& w : kComponents) {
    ASSERT_FALSE(workloadOf(previous, w).is_null()) << w.name << " of " << previous.name;
    ASSERT_FALSE(workloadOf(current, w).is_null()) << w.name << " of " << current.name;
    ASSERT_NE(imagesOf(workloadOf(previous, w)), imagesOf(workloadOf(current, w))) << w.name;
  }
  // Later tests run on this release, whatever happens below.
  const OnScopeExit restore([&] {
    applyCrds(current);
    applyDeploy(current, kComponents, true);
    awaitRolledOnto(current, kComponents, {});
  });

  // The previous release, installed over this one before any pod holds a device.
  ASSERT_NO_FATAL_FAILURE(applyCrds(previous));
  ASSERT_NO_FATAL_FAILURE(applyDeploy(previous, kComponents, true));
  ASSERT_NO_FATAL_FAILURE(awaitRolledOnto(previous, kComponents, {}));

  // Two holders from before; a pod started during each of the five rollouts.
  constexpr int kDevices = 7;
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

  // Upgrade, one component at a time: CRDs, the rest of deploy/, then each workload.
  ASSERT_NO_FATAL_FAILURE(applyCrds(current));
  ASSERT_NO_FATAL_FAILURE(applyDeploy(current, {}, true));
  for (const auto& w : kComponents) {
    SCOPED_TRACE("upgrading " + w.name);
    ASSERT_NO_FATAL_FAILURE(
        rollWhilePodsRun(current, {w}, false, "up-" + std::to_string(holders.size()), holders));
  }
  // Rolled back and upgraded again, all at once (the CRDs stay the newer ones).
  {
    SCOPED_TRACE("rolling back all at once");
    ASSERT_NO_FATAL_FAILURE(rollWhilePodsRun(previous, kComponents, true, "back-all", holders));
  }
  {
    SCOPED_TRACE("upgrading all at once");
    ASSERT_NO_FATAL_FAILURE(rollWhilePodsRun(current, kComponents, true, "up-all", holders));
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
  auto replace = [&](const json& object) { return kubectlWithObject("replace", object) == 0; };
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

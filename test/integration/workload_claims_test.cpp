// Workloads whose pods name a claim template, through the real kube-scheduler and
// kube-controller-manager (deployment, replicaset, job, garbagecollector), with the extender
// and the controller: a Deployment scaled up past its devices and down again, a rolling update
// with and without a spare device, a Job whose claims are released as its pods succeed. No
// kubelet runs: the tests write the pods' status in its place.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "common/api_error.h"
#include "extender_fixture.h"
#include "model/objects.h"
#include "template_helpers.h"

namespace ker::itest {
namespace {

using nlohmann::json;

const Resource kDeployments{"apps", "v1", "deployments", true};
const Resource kJobs{"batch", "v1", "jobs", true};

class WorkloadClaimsTest : public ExtenderSuite {
 protected:
  static void SetUpTestSuite() {
    setUpSuite([] {
      startStack({});
      if (env_ != nullptr) {
        controller_ = startController(freePort(), {});
        kcm_ = startControllerManager("deployment,replicaset,job,garbagecollector");
      }
    });
  }

  static void TearDownTestSuite() {
    kcm_.reset();
    controller_.reset();
    stopStack();
  }

  void SetUp() override {
    ExtenderSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) {
      return;
    }
    ASSERT_TRUE(alive(controller_, "controller"));
    ASSERT_TRUE(alive(kcm_, "kube-controller-manager"));
    node_ = makeNodes(1)[0];
    api_->create(resources::kExtendedResourceClaimTemplates, ns_,
                 templateObject(ns_, "gpu", resource_));
    // A device of the test's resource that the template's claims never match.
    makeDevice(node_, "p100");
  }

  // Leaves the cluster as it found it: the workloads and their pods go, the garbage collector
  // deletes the pods' claims, then the devices go. Other suites check invariants over the
  // whole cluster.
  void TearDown() override {
    if (api_ == nullptr || ns_.empty()) {
      return;
    }
    for (const auto* res : {&kDeployments, &kJobs}) {
      const json workloads = api_->list(*res, ns_, {});
      for (const auto& w : workloads["items"]) {
        removeIgnoringMissing(*res, ns_, w["metadata"]["name"]);
      }
    }
    eventually(
        [&] {
          return deleteAllPodsNow(*api_, ns_) == 0 &&
                 api_->list(resources::kExtendedResourceClaims, ns_, {})["items"].empty();
        },
        60s, 500ms);
    removeClaimsAndDevices();
  }

  std::vector<std::string> makeDevices(int count) {
    std::vector<std::string> out;
    for (int i = 0; i < count; ++i) {
      out.push_back(makeDevice(node_));
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // The pod template of this test's workloads: this stack's scheduler, one claim from the
  // template "gpu".
  json podTemplate(const std::string& app) {
    json pod = podObject(ns_, "unused", {}, schedulerName_);
    return {
        {"metadata",
         {{"labels", {{"app", app}}}, {"annotations", {{kClaimTemplatesAnnotation, "gpu=gpu"}}}}},
        {"spec", pod["spec"]}};
  }

  // A Deployment of `replicas` that surges one pod at a time and never goes below `replicas`
  // available pods during a rollout.
  void createDeployment(const std::string& name, int replicas) {
    api_->create(kDeployments, ns_,
                 {{"apiVersion", "apps/v1"},
                  {"kind", "Deployment"},
                  {"metadata", {{"name", name}, {"namespace", ns_}}},
                  {"spec",
                   {{"replicas", replicas},
                    {"selector", {{"matchLabels", {{"app", name}}}}},
                    {"strategy",
                     {{"type", "RollingUpdate"},
                      {"rollingUpdate", {{"maxSurge", 1}, {"maxUnavailable", 0}}}}},
                    {"template", podTemplate(name)}}}});
  }

  void patchDeployment(const std::string& name, const json& spec) {
    api_->patch(kDeployments, ns_, name, PatchType::kMerge, {{"spec", spec}});
  }

  // The namespace's pods not being deleted; `bound`: only those with a node.
  std::vector<json> livePods(bool bound) {
    std::vector<json> out;
    const json pods = api_->list(resources::kPods, ns_, {});
    for (const auto& p : pods["items"]) {
      if (p.contains("/metadata/deletionTimestamp"_json_pointer)) {
        continue;
      }
      if (!bound || !p.value("/spec/nodeName"_json_pointer, "").empty()) {
        out.push_back(p);
      }
    }
    return out;
  }

  // Writes the status a kubelet would once the containers of a bound pod run: Running and
  // Ready (the Deployment controller counts a pod available by its Ready condition). A write
  // that loses a race is left to the next call.
  void runBoundPods() {
    for (json p : livePods(true)) {
      if (p.value("/status/phase"_json_pointer, "") != "Pending") {
        continue;
      }
      json conditions = p.value("/status/conditions"_json_pointer, json::array());
      for (const char* type : {"Initialized", "ContainersReady", "Ready"}) {
        conditions.push_back({{"type", type}, {"status", "True"}});
      }
      p["status"]["phase"] = "Running";
      p["status"]["conditions"] = conditions;
      try {
        api_->updateStatus(resources::kPods, ns_, p);
      } catch (const ApiError&) {
      }
    }
  }

  // The kubelet's stand-in runs the bound pods until the Deployment reports `replicas` pods,
  // all of the current template and available, and no other.
  bool waitRolledOut(const std::string& name, int replicas, std::chrono::milliseconds timeout) {
    return eventually(
        [&] {
          runBoundPods();
          const json d = api_->get(kDeployments, ns_, name);
          const json& st = d.value("status", json::object());
          return st.value("observedGeneration", 0) >= d["metadata"].value("generation", 0) &&
                 st.value("replicas", -1) == replicas &&
                 st.value("updatedReplicas", -1) == replicas &&
                 st.value("availableReplicas", -1) == replicas &&
                 static_cast<int>(livePods(false).size()) == replicas;
        },
        timeout, 200ms);
  }

  // The free-device shortage the extender reports for a pod's generated claim.
  std::string shortage(const json& pod) {
    const auto claims = generatedClaimsOf(*api_, ns_, pod);
    const std::string claim = claims.empty() ? "?" : claims[0]["metadata"]["name"];
    return "claim " + ns_ + "/" + claim + ": 0 of 1 free " + resource_ +
           " with type=k80 on this node";
  }

  bool claimGone(const std::string& claim) {
    try {
      api_->get(resources::kExtendedResourceClaims, ns_, claim);
      return false;
    } catch (const ApiError& e) {
      return e.isNotFound();
    }
  }

  std::string devicePhase(const std::string& device) {
    return api_->get(resources::kExtendedResources, "", device)
        .value("/status/phase"_json_pointer, "");
  }

  // Each device's claim (by name) while Bound; absent when free.
  std::map<std::string, std::string> holders(const std::vector<std::string>& devices) {
    std::map<std::string, std::string> out;
    for (const auto& d : devices) {
      const json dev = api_->get(resources::kExtendedResources, "", d);
      if (dev.value("/status/phase"_json_pointer, "") == "Bound") {
        out[d] = dev.value("/status/claimRef/name"_json_pointer, "");
      }
    }
    return out;
  }

  std::string logs() {
    return "controller:\n" + controller_->logTail() + "\nextender:\n" + extender_->logTail() +
           "\nkube-controller-manager:\n" + kcm_->logTail();
  }

  static std::unique_ptr<ChildProcess> controller_;
  static std::unique_ptr<ChildProcess> kcm_;
  std::string node_;
};

std::unique_ptr<ChildProcess> WorkloadClaimsTest::controller_;
std::unique_ptr<ChildProcess> WorkloadClaimsTest::kcm_;

std::vector<std::string> namesOf(const std::vector<json>& objects) {
  std::vector<std::string> out;
  for (const auto& o : objects) {
    out.push_back(o["metadata"]["name"]);
  }
  return out;
}

TEST_F(WorkloadClaimsTest, ADeploymentScalesPastItsDevicesAndBackWithOneClaimPerPod) {
  const auto matching = makeDevices(4);
  createDeployment("web", 3);
  ASSERT_TRUE(waitRolledOut("web", 3, 60s)) << logs();
  std::vector<std::string> used = checkTemplatePods(*api_, ns_, livePods(true));
  ASSERT_EQ(used.size(), 3u);
  EXPECT_TRUE(std::includes(matching.begin(), matching.end(), used.begin(), used.end()));
  EXPECT_EQ(api_->list(resources::kExtendedResourceClaims, ns_, {})["items"].size(), 3u);

  // Five replicas, four devices: four pods run, the fifth has its claim but waits, and says
  // which claim lacks which device.
  patchDeployment("web", {{"replicas", 5}});
  ASSERT_TRUE(eventually(
      [&] {
        runBoundPods();
        return livePods(false).size() == 5 && livePods(true).size() == 4;
      },
      60s, 200ms))
      << logs();
  EXPECT_EQ(checkTemplatePods(*api_, ns_, livePods(true)), matching);
  json waiting;
  for (const auto& p : livePods(false)) {
    if (p.value("/spec/nodeName"_json_pointer, "").empty()) {
      waiting = p;
    }
  }
  ASSERT_FALSE(waiting.is_null());
  const std::string waitingName = waiting["metadata"]["name"];
  ASSERT_TRUE(eventually([&] { return generatedClaimsOf(*api_, ns_, waiting).size() == 1; }, 30s))
      << "the waiting pod's claim was not made\n"
      << logs();
  std::string message;
  EXPECT_TRUE(eventually(
      [&] {
        message = failedScheduling(waitingName);
        return message.find(shortage(waiting)) != std::string::npos;
      },
      30s, 200ms))
      << message;
  EXPECT_FALSE(generatedClaimsOf(*api_, ns_, waiting)[0].contains("status"))
      << "unallocated: a claim made for a pod gets its first status from its bind";

  // Two replicas: the waiting pod and two running ones go, with their claims; the devices of
  // those claims are free again.
  std::map<std::string, std::string> claimOfPod;
  for (const auto& p : livePods(false)) {
    const auto claims = generatedClaimsOf(*api_, ns_, p);
    ASSERT_EQ(claims.size(), 1u) << p["metadata"]["name"];
    claimOfPod[p["metadata"]["name"]] = claims[0]["metadata"]["name"];
  }
  patchDeployment("web", {{"replicas", 2}});
  ASSERT_TRUE(waitRolledOut("web", 2, 60s)) << logs();
  const auto kept = livePods(true);
  used = checkTemplatePods(*api_, ns_, kept);
  ASSERT_EQ(used.size(), 2u);
  const auto keptNames = namesOf(kept);
  for (const auto& [pod, claim] : claimOfPod) {
    if (std::find(keptNames.begin(), keptNames.end(), pod) == keptNames.end()) {
      EXPECT_TRUE(eventually([&] { return claimGone(claim); }, 60s))
          << "the claim " << claim << " of the deleted pod " << pod << " is still there\n"
          << kcm_->logTail();
    }
  }
  EXPECT_EQ(api_->list(resources::kExtendedResourceClaims, ns_, {})["items"].size(), 2u);
  for (const auto& d : matching) {
    const bool inUse = std::find(used.begin(), used.end(), d) != used.end();
    EXPECT_TRUE(eventually([&] { return devicePhase(d) == (inUse ? "Bound" : "Available"); }, 30s))
        << d << " is " << devicePhase(d) << "\n"
        << logs();
  }
  EXPECT_EQ(invariantViolations(), "");
}

TEST_F(WorkloadClaimsTest, ARollingUpdateWaitsForASpareDeviceAndThenCompletes) {
  auto matching = makeDevices(3);
  createDeployment("web", 3);
  ASSERT_TRUE(waitRolledOut("web", 3, 60s)) << logs();
  EXPECT_EQ(checkTemplatePods(*api_, ns_, livePods(true)), matching);
  const auto before = holders(matching);
  ASSERT_EQ(before.size(), 3u);

  // No spare device: the surge pod of the new template waits with the reason, and the old pods
  // keep running on their devices.
  patchDeployment("web", {{"template", {{"metadata", {{"annotations", {{"rev", "2"}}}}}}}});
  json surge;
  ASSERT_TRUE(eventually(
      [&] {
        runBoundPods();
        for (const auto& p : livePods(false)) {
          if (p.value("/metadata/annotations/rev"_json_pointer, "") == "2") {
            surge = p;
            return true;
          }
        }
        return false;
      },
      30s, 200ms))
      << logs();
  std::string message;
  EXPECT_TRUE(eventually(
      [&] {
        message = failedScheduling(surge["metadata"]["name"]);
        return message.find(shortage(surge)) != std::string::npos;
      },
      30s, 200ms))
      << message << "\n"
      << logs();
  json d;
  EXPECT_TRUE(eventually(
      [&] {
        runBoundPods();
        d = api_->get(kDeployments, ns_, "web");
        return d.value("/status/availableReplicas"_json_pointer, 0) == 3 &&
               d.value("/status/updatedReplicas"_json_pointer, 0) == 1;
      },
      10s))
      << d.value("status", json()).dump();
  EXPECT_EQ(livePods(true).size(), 3u);
  EXPECT_EQ(holders(matching), before);

  // A spare device: the surge pod takes it, each old pod then gives its device to the next new
  // one, and the rollout completes with every pod of the new template on its own device.
  matching.push_back(makeDevice(node_));
  std::sort(matching.begin(), matching.end());
  ASSERT_TRUE(waitRolledOut("web", 3, 90s)) << logs();
  const auto pods = livePods(true);
  for (const auto& p : pods) {
    EXPECT_EQ(p.value("/metadata/annotations/rev"_json_pointer, ""), "2") << p["metadata"]["name"];
  }
  const auto used = checkTemplatePods(*api_, ns_, pods);
  EXPECT_EQ(used.size(), 3u);
  EXPECT_TRUE(eventually(
      [&] { return api_->list(resources::kExtendedResourceClaims, ns_, {})["items"].size() == 3; },
      60s))
      << "the old pods' claims were not deleted\n"
      << kcm_->logTail();
  EXPECT_EQ(invariantViolations(), "");
}

TEST_F(WorkloadClaimsTest, AJobsClaimsAreReleasedAsItsPodsSucceed) {
  const auto matching = makeDevices(4);
  json tmpl = podTemplate("train");
  tmpl["spec"]["restartPolicy"] = "Never";
  api_->create(kJobs, ns_,
               {{"apiVersion", "batch/v1"},
                {"kind", "Job"},
                {"metadata", {{"name", "train"}, {"namespace", ns_}}},
                {"spec", {{"parallelism", 4}, {"completions", 4}, {"template", tmpl}}}});
  ASSERT_TRUE(eventually([&] { return livePods(true).size() == 4; }, 60s, 200ms)) << logs();
  const auto pods = livePods(true);
  EXPECT_EQ(checkTemplatePods(*api_, ns_, pods), matching);

  // One pod after the other succeeds: its claim is released and its device free, while the
  // pods still running keep theirs.
  std::set<std::string> freed;
  for (const auto& p : pods) {
    const std::string name = p["metadata"]["name"];
    const std::string claim = generatedClaimsOf(*api_, ns_, p)[0]["metadata"]["name"];
    const std::vector<std::string> held =
        generatedClaimsOf(*api_, ns_, p)[0]["status"]["extendedResourceNames"];
    ASSERT_TRUE(eventually([&] {
      json pod = getPod(name);
      pod["status"]["phase"] = "Succeeded";
      try {
        api_->updateStatus(resources::kPods, ns_, pod);
        return true;
      } catch (const ApiError&) {
        return false;  // a conflict with another status write: read it again
      }
    }));
    EXPECT_TRUE(eventually(
        [&] {
          const json c = api_->get(resources::kExtendedResourceClaims, ns_, claim);
          return c.value("/status/phase"_json_pointer, "") == "Pending" &&
                 c.value("/status/reason"_json_pointer, "") == "Released" &&
                 std::all_of(held.begin(), held.end(), [&](const std::string& dev) {
                   return devicePhase(dev) == "Available";
                 });
        },
        30s))
        << name << "\n"
        << logs();
    freed.insert(held.begin(), held.end());
    for (const auto& dev : matching) {
      EXPECT_EQ(devicePhase(dev), freed.contains(dev) ? "Available" : "Bound") << dev;
    }
  }
  EXPECT_TRUE(eventually(
      [&] {
        return api_->get(kJobs, ns_, "train").value("/status/succeeded"_json_pointer, 0) == 4;
      },
      30s))
      << kcm_->logTail();
  EXPECT_EQ(invariantViolations(), "");
}

}  // namespace
}  // namespace ker::itest

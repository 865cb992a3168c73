// Pods that ask the usual way, `resources.limits: {<name>: N}`, for an extended resource an
// ExtendedResourceClass serves, through the real kube-scheduler, kube-controller-manager
// (deployment, replicaset, garbagecollector, resourcequota) and kube-apiserver's admission
// (ResourceQuota, the routing MutatingAdmissionPolicy), with the extender and the controller.
// No kubelet or node agent runs: the tests write the nodes' capacity as the agent would.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/api_error.h"
#include "extender_fixture.h"
#include "model/made_claims.h"
#include "model/objects.h"
#include "model/resource_class.h"

namespace ker::itest {
namespace {

using nlohmann::json;

const Resource kDeployments{"apps", "v1", "deployments", true};
const Resource kQuotas{"", "v1", "resourcequotas", true};
const Resource kRoutingPolicies{"admissionregistration.k8s.io", "v1", "mutatingadmissionpolicies",
                                false};
const Resource kRoutingBindings{"admissionregistration.k8s.io", "v1",
                                "mutatingadmissionpolicybindings", false};
// The Namespace deploy/deployment.yaml makes for the controller to keep the class policies'
// params in.
constexpr const char* kClassParams = "extended-resource-classes";

class ClassClaimsTest : public ExtenderSuite {
 protected:
  static void SetUpTestSuite() {
    setUpSuite([] {
      startStack({});
      if (env_ != nullptr) {
        controller_ = startController(freePort(), {});
        kcm_ = startControllerManager("deployment,replicaset,garbagecollector,resourcequota");
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
    gpu_ = uniqueName("gpu") + ".example.com/gpu";
    className_ = uniqueName("class");
    api_->create(resources::kExtendedResourceClasses, "",
                 k80ClassObject(className_, gpu_, resource_));
  }

  void TearDown() override {
    if (api_ == nullptr || ns_.empty()) {
      return;
    }
    const json deployments = api_->list(kDeployments, ns_, {});
    for (const auto& d : deployments["items"]) {
      removeIgnoringMissing(kDeployments, ns_, d["metadata"]["name"]);
    }
    eventually(
        [&] {
          return deleteAllPodsNow(*api_, ns_) == 0 &&
                 api_->list(resources::kExtendedResourceClaims, ns_, {})["items"].empty();
        },
        60s, 500ms);
    removeClaimsAndDevices();
    removeIgnoringMissing(resources::kExtendedResourceClasses, "", className_);
  }

  // A Ready node whose capacity shows `count` of the class's name, as its agent would write it.
  std::string makeNode(int count) {
    const std::string name = uniqueName("node");
    json node = nodeObject(name);
    node["status"]["capacity"][gpu_] = std::to_string(count);
    node["status"]["allocatable"][gpu_] = std::to_string(count);
    api_->create(resources::kNodes, "", node);
    return name;
  }

  static json container(const std::string& name, int gpus, const std::string& gpu) {
    json c = {{"name", name}, {"image", "registry.k8s.io/pause:3.10"}};
    if (gpus > 0) {
      c["resources"] = {{"limits", {{gpu, std::to_string(gpus)}}}};
    }
    return c;
  }

  // A pod of this stack's scheduler whose container "cuda" asks for `gpus` of the class's name
  // and whose container "web" asks for none.
  json podAsking(const std::string& name, int gpus, const std::string& schedulerName) {
    json pod = podObject(ns_, name, {}, schedulerName);
    pod["spec"]["containers"] =
        json::array({container("cuda", gpus, gpu_), container("web", 0, gpu_)});
    if (schedulerName.empty()) {
      pod["spec"].erase("schedulerName");
    }
    return pod;
  }

  // The claim the pod's record names for the class's name; null while none is recorded.
  json recordedClaim(const std::string& pod) {
    const Pod p = Pod::fromJson(getPod(pod));
    auto it = p.resourceClaims.find(gpu_);
    if (it == p.resourceClaims.end()) {
      return nullptr;
    }
    return api_->get(resources::kExtendedResourceClaims, ns_, it->second);
  }

  static std::string sourceFile(const std::string& path) {
    std::ifstream in(std::string(KER_SOURCE_DIR) + "/" + path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // kubectl apply of these manifests.
  static void apply(const std::string& yaml) {
    const std::string file = "/tmp/" + uniqueName("manifests") + ".yaml";
    std::ofstream(file) << yaml;
    std::string out;
    const int rc = env_->kubectl("apply -f " + shellQuote(file), &out);
    std::remove(file.c_str());
    EXPECT_EQ(rc, 0) << out;
  }

  // deploy/class-routing-policy.yaml with this stack's profile in place of the usual one;
  // removed when the returned guard goes.
  [[nodiscard]] static std::shared_ptr<void> applyRoutingPolicy(const std::string& schedulerName) {
    std::string yaml = sourceFile("deploy/class-routing-policy.yaml");
    const std::string usual = "extended-resource-scheduler";
    EXPECT_NE(yaml.find(usual), std::string::npos);
    for (size_t at = yaml.find(usual); at != std::string::npos;
         at = yaml.find(usual, at + schedulerName.size())) {
      yaml.replace(at, usual.size(), schedulerName);
    }
    apply(yaml);
    return std::shared_ptr<void>(nullptr, [](void*) {
      removeIgnoringMissing(kRoutingBindings, "", "extended-resource-class-routing");
      removeIgnoringMissing(kRoutingPolicies, "", "extended-resource-class-routing");
    });
  }

  // The class-names policy of deploy/admission-policy.yaml and its binding; removed when the
  // returned guard goes.
  [[nodiscard]] static std::shared_ptr<void> applyClassNamesPolicy() {
    const std::string all = sourceFile("deploy/admission-policy.yaml");
    std::string yaml;
    for (size_t at = 0; at < all.size();) {
      size_t end = all.find("\n---\n", at);
      if (end == std::string::npos) {
        end = all.size();
      }
      const std::string doc = all.substr(at, end - at);
      if (doc.find("\n  name: extended-resource-class-names\n") != std::string::npos) {
        yaml += doc + "\n---\n";
      }
      at = end + 5;
    }
    EXPECT_NE(yaml.find("kind: ValidatingAdmissionPolicyBinding"), std::string::npos) << yaml;
    apply(yaml);
    return std::shared_ptr<void>(nullptr, [](void*) {
      removeIgnoringMissing(resources::kValidatingAdmissionPolicyBindings, "",
                            "extended-resource-class-names");
      removeIgnoringMissing(resources::kValidatingAdmissionPolicies, "",
                            "extended-resource-class-names");
    });
  }

  // Creates pods asking for the class's name with no scheduler until the routing policy sends
  // one to this stack's profile (the API server reads the policy and its params through
  // informers); returns that pod's name, "" if none was routed within `bound`.
  std::string createRoutedPod(std::chrono::milliseconds bound, json* gates = nullptr) {
    std::string routed;
    eventually(
        [&] {
          const std::string name = uniqueName("routed");
          const json pod = api_->create(resources::kPods, ns_, podAsking(name, 1, ""));
          if (pod["spec"].value("schedulerName", "") == schedulerName_) {
            routed = name;
            if (gates != nullptr) {
              *gates = pod["spec"].value("schedulingGates", json::array());
            }
            return true;
          }
          deletePodNow(*api_, ns_, name);
          return false;
        },
        bound, 1s);
    return routed;
  }

  std::vector<json> liveClaims() {
    std::vector<json> out;
    const json claims = api_->list(resources::kExtendedResourceClaims, ns_, {});
    for (const auto& c : claims["items"]) {
      if (!c["metadata"].contains("deletionTimestamp")) {
        out.push_back(c);
      }
    }
    return out;
  }

  // The namespace's pods bound to a node and not being deleted.
  int boundPods() {
    int n = 0;
    const json pods = api_->list(resources::kPods, ns_, {});
    for (const auto& p : pods["items"]) {
      const std::string node = p["spec"].value("nodeName", "");
      if (!node.empty() && !p["metadata"].contains("deletionTimestamp")) {
        ++n;
      }
    }
    return n;
  }

  std::string gpu_;
  std::string className_;
  static std::unique_ptr<ChildProcess> controller_;
  static std::unique_ptr<ChildProcess> kcm_;
};

std::unique_ptr<ChildProcess> ClassClaimsTest::controller_;
std::unique_ptr<ChildProcess> ClassClaimsTest::kcm_;

TEST_F(ClassClaimsTest, AContainerAskingForTheClassesNameGetsAClaimOfItsOwnPod) {
  const std::string node = makeNode(2);
  makeDevice(node, "p100");
  const std::string k80 = makeDevice(node, "k80");
  json pod = podAsking("web", 1, schedulerName_);
  pod["spec"]["initContainers"] = json::array({container("setup", 1, gpu_)});
  const json created = api_->create(resources::kPods, ns_, pod);

  ASSERT_TRUE(waitBound("web")) << awaitFailedScheduling("web");
  EXPECT_EQ(nodeOf("web"), node);
  const json claimObj = recordedClaim("web");
  ASSERT_FALSE(claimObj.is_null()) << getPod("web").dump();
  const auto claim = ExtendedResourceClaim::fromJson(claimObj);
  EXPECT_EQ(claim.phase, ClaimPhase::kBound);
  EXPECT_EQ(claim.allocated, std::vector<std::string>{k80}) << "the class selects k80s only";
  EXPECT_EQ(claim.extendedResourceNum, 1) << "the init container reuses the app's device";
  EXPECT_EQ(claim.containers, (std::vector<ContainerShare>{{"setup", 1, ContainerKind::kInit},
                                                           {"cuda", 1, ContainerKind::kApp}}));
  EXPECT_EQ(claim.meta.controllerUid(), created["metadata"]["uid"]);
  EXPECT_EQ(claim.meta.labels.at(kClassLabel), className_);
  EXPECT_EQ(invariantViolations(), "");
}

// The claim the extender makes at bind has a name the pod's owner can work out once the pod
// exists, and the owner may create claims their pod owns: one made first under that name that
// asks for other devices than the class hands out (or, were spec.containers not fixed, more than
// the pod's resources, its quota and its node's capacity count) is refused, not taken.
TEST_F(ClassClaimsTest, AClaimItsOwnerMakesFirstForOtherDevicesIsRefused) {
  const std::string node = makeNode(4);
  for (int i = 0; i < 3; ++i) {
    makeDevice(node, "k80");
  }
  // No device fits yet: the pod waits, and no claim is made for it.
  json pod = podAsking("web", 4, schedulerName_);
  api_->create(resources::kPods, ns_, pod);
  EXPECT_FALSE(eventually([&] { return !liveClaims().empty(); }, 3s));
  const Pod created = Pod::fromJson(getPod("web"));
  const auto cls = std::make_shared<const ExtendedResourceClass>(ExtendedResourceClass::fromJson(
      api_->get(resources::kExtendedResourceClasses, "", className_)));
  json claim =
      claimFromClass(created, classRequests(created.extendedRequests, ClassTable({cls})).at(gpu_),
                     /*protect=*/false);
  claim["spec"]["metadataRequirements"] = json::object();
  api_->create(resources::kExtendedResourceClaims, ns_, claim);
  // A device of the claim's resource: the controller nudges the parked pod to be tried again.
  makeDevice(node, "p100");
  EXPECT_TRUE(eventually(
      [&] {
        return failedScheduling("web").find("does not ask what class " + className_) !=
               std::string::npos;
      },
      60s, 500ms))
      << failedScheduling("web");
  EXPECT_FALSE(waitBound("web", 3s));
}

TEST_F(ClassClaimsTest, ADeploymentScaledPastItsDevicesWaitsAndLeavesNoClaimsBehind) {
  const std::string node = makeNode(2);
  makeDevice(node, "k80");
  makeDevice(node, "k80");
  json tmpl = podAsking("unused", 1, schedulerName_);
  api_->create(kDeployments, ns_, deploymentObject(ns_, "web", 3, tmpl["spec"]));
  // kube-scheduler's own resource fit sees two on the node, so the third pod waits either way.
  ASSERT_TRUE(eventually([&] { return boundPods() == 2; }, 60s)) << boundPods() << " bound";
  EXPECT_FALSE(eventually([&] { return boundPods() > 2; }, 3s));
  EXPECT_EQ(liveClaims().size(), 2u) << "a pod's claim is made when it is bound";

  api_->patch(kDeployments, ns_, "web", PatchType::kMerge, {{"spec", {{"replicas", 1}}}});
  // The kubelet's stand-in: pods being deleted go at once.
  ASSERT_TRUE(eventually(
      [&] {
        const json pods = api_->list(resources::kPods, ns_, {});
        for (const auto& p : pods["items"]) {
          if (p["metadata"].contains("deletionTimestamp")) {
            deletePodNow(*api_, ns_, p["metadata"]["name"]);
          }
        }
        return api_->list(resources::kPods, ns_, {})["items"].size() == 1 &&
               liveClaims().size() == 1;
      },
      60s, 500ms))
      << "the claims of the pods scaled away are deleted with them";
  EXPECT_EQ(invariantViolations(), "");
}

TEST_F(ClassClaimsTest, AQuotaOnTheNameCountsThePodsRequests) {
  const std::string node = makeNode(4);
  for (int i = 0; i < 4; ++i) {
    makeDevice(node, "k80");
  }
  api_->create(kQuotas, ns_,
               {{"apiVersion", "v1"},
                {"kind", "ResourceQuota"},
                {"metadata", {{"name", "gpus"}, {"namespace", ns_}}},
                {"spec", {{"hard", {{"requests." + gpu_, "2"}}}}}});
  ASSERT_TRUE(eventually([&] {
    const json quota = api_->get(kQuotas, ns_, "gpus");
    return quota.contains("status") && quota["status"].contains("hard");
  }));
  api_->create(resources::kPods, ns_, podAsking("a", 1, schedulerName_));
  api_->create(resources::kPods, ns_, podAsking("b", 1, schedulerName_));
  try {
    api_->create(resources::kPods, ns_, podAsking("c", 1, schedulerName_));
    ADD_FAILURE() << "a third GPU pod was admitted past the quota";
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("exceeded quota"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(waitBound("a"));
  EXPECT_TRUE(waitBound("b"));
}

TEST_F(ClassClaimsTest, TheRoutingPolicySendsDefaultScheduledPodsAskingForAClassToTheProfile) {
  const auto policy = applyRoutingPolicy(schedulerName_);
  const std::string node = makeNode(1);
  makeDevice(node, "k80");

  json routedGates;
  const std::string routed = createRoutedPod(30s, &routedGates);
  ASSERT_FALSE(routed.empty()) << "no pod asking for " << gpu_ << " was routed in 30 s";
  EXPECT_EQ(routedGates, json::array()) << "no gate: the extender makes the claim at bind";
  EXPECT_TRUE(waitBound(routed)) << awaitFailedScheduling(routed);
  EXPECT_EQ(ExtendedResourceClaim::fromJson(recordedClaim(routed)).phase, ClaimPhase::kBound);
  EXPECT_EQ(api_->create(resources::kPods, ns_, podAsking("plain", 0, ""))["spec"]["schedulerName"],
            "default-scheduler")
      << "a pod asking for nothing of a class is left alone";
  EXPECT_EQ(api_->create(resources::kPods, ns_,
                         podAsking("other", 1, "my-scheduler"))["spec"]["schedulerName"],
            "my-scheduler")
      << "a pod naming a scheduler keeps it";
  EXPECT_FALSE(
      eventually([&] { return !Pod::fromJson(getPod("other")).resourceClaims.empty(); }, 3s))
      << "and gets no claim: nothing of that scheduler would allocate it";
}

// A pod an older routing policy gated (kube-scheduler does not try it) is not stranded: the
// controller lifts the gate, and the extender makes its claim at bind.
TEST_F(ClassClaimsTest, APodGatedByAnOlderRoutingPolicyHasItsGateLiftedAndIsBound) {
  const std::string node = makeNode(1);
  makeDevice(node, "k80");
  json pod = podAsking("gated", 1, schedulerName_);
  pod["spec"]["schedulingGates"] = json::array({{{"name", kClassClaimsGate}}});
  api_->create(resources::kPods, ns_, pod);
  ASSERT_TRUE(waitBound("gated")) << awaitFailedScheduling("gated");
  EXPECT_EQ(getPod("gated")["spec"].value("schedulingGates", json::array()), json::array());
  EXPECT_EQ(ExtendedResourceClaim::fromJson(recordedClaim("gated")).phase, ClaimPhase::kBound);
  EXPECT_EQ(invariantViolations(), "");
}

// The class policies read their params from a Namespace's annotation the controller keeps: they
// work as soon as kube-apiserver answers after a restart (a custom resource paramKind, resolved
// through the API server's discovery, can stay unresolved for a while then), and a policy deleted
// and applied again reads the current params (a ConfigMap paramKind's informer stops once no
// policy uses it, and its params stay stale). The controller, which exits when its lease lapses
// in the outage, is started again as its Deployment would.
TEST_F(ClassClaimsTest, TheClassPoliciesReadCurrentParamsAfterARestartAndWhenAppliedAgain) {
  auto routing = applyRoutingPolicy(schedulerName_);
  const auto names = applyClassNamesPolicy();
  const std::string node = makeNode(2);
  makeDevice(node, "k80");
  makeDevice(node, "k80");
  auto published = [&](const std::string& cls, const std::string& name) {
    return eventually([&] {
      const json ns = api_->get(resources::kNamespaces, "", kClassParams);
      const std::string value =
          ns["metadata"].value("annotations", json::object()).value(kClassParamsAnnotation, "");
      return (" " + value + " ").find(" " + name + "=" + cls + " ") != std::string::npos;
    });
  };
  ASSERT_TRUE(published(className_, gpu_)) << "the controller did not publish " << className_;
  const std::string before = createRoutedPod(30s);
  ASSERT_FALSE(before.empty()) << "no pod asking for " << gpu_ << " was routed in 30 s";

  ASSERT_EQ(env_->launch("restart-apiserver"), 0);
  const auto restarted = std::chrono::steady_clock::now();
  const std::string after = createRoutedPod(10s);
  ASSERT_FALSE(after.empty()) << "after kube-apiserver restarted, no pod asking for " << gpu_
                              << " was routed in 10 s";
  std::cout << "[measured] first pod routed "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - restarted).count()
            << " s after kube-apiserver answered again\n";
  const std::string second = uniqueName("second");
  try {
    api_->create(resources::kExtendedResourceClasses, "", k80ClassObject(second, gpu_, resource_));
    removeIgnoringMissing(resources::kExtendedResourceClasses, "", second);
    ADD_FAILURE() << "a second class for " << gpu_ << " was admitted after the restart";
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("ExtendedResourceClass " + className_ +
                                         " already serves " + gpu_),
              std::string::npos)
        << e.what();
  }
  if (!alive(controller_, "controller")) {
    controller_ = startController(freePort(), {});
  }
  EXPECT_TRUE(waitBound(before)) << awaitFailedScheduling(before);
  EXPECT_TRUE(waitBound(after)) << awaitFailedScheduling(after);

  // The routing policy deleted and applied again, then a class made for a new name: the policy
  // routes pods asking for it.
  routing.reset();
  routing = applyRoutingPolicy(schedulerName_);
  const std::string fpga = uniqueName("fpga") + ".example.com/fpga";
  const std::string fpgaClass = uniqueName("class");
  api_->create(resources::kExtendedResourceClasses, "", k80ClassObject(fpgaClass, fpga, resource_));
  struct Remove {
    std::string name;
    ~Remove() { removeIgnoringMissing(resources::kExtendedResourceClasses, "", name); }
  } removeFpga{fpgaClass};
  ASSERT_TRUE(published(fpgaClass, fpga));
  std::string routedFpga;
  EXPECT_TRUE(eventually(
      [&] {
        json pod = podAsking(uniqueName("fpga"), 0, "");
        pod["spec"]["containers"][0]["resources"] = {{"limits", {{fpga, "1"}}}};
        const json made = api_->create(resources::kPods, ns_, pod);
        routedFpga = made["spec"].value("schedulerName", "");
        return routedFpga == schedulerName_;
      },
      10s, 1s))
      << "a pod asking for " << fpga << " went to " << routedFpga
      << " after the routing policy was applied again";
}

}  // namespace
}  // namespace ker::itest

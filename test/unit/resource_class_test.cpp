// Pods that ask in their containers' resources, served through an ExtendedResourceClass: the
// requests and their split (model/container_shares), the class table and the claim a request
// must have (model/resource_class), the controller's plan (controller/template_claims_plan) and
// the extender's resolution (scheduler/fit/planner).
#include "model/resource_class.h"

#include <gtest/gtest.h>

#include "controller/template_claims_plan.h"
#include "controller/watch_triggers.h"
#include "model/container_shares.h"
#include "scheduler/fit/planner.h"

namespace ker {
namespace {

using json = nlohmann::json;

json container(const std::string& name, const json& limits, const char* restartPolicy = nullptr) {
  json c = {{"name", name}, {"image", "x"}};
  if (!limits.is_null()) {
    c["resources"] = {{"limits", limits}};
  }
  if (restartPolicy) {
    c["restartPolicy"] = restartPolicy;
  }
  return c;
}

TEST(ExtendedRequests, ReadsLimitsOfExtendedResourcesOnly) {
  const json spec = {
      {"initContainers", json::array({container("setup", {{"nvidia.com/gpu", "1"}}),
                                      container("log", {{"nvidia.com/gpu", "1"}}, "Always")})},
      {"containers",
       json::array({container("cuda", {{"nvidia.com/gpu", "2"}, {"cpu", "1"}, {"memory", "1Gi"}}),
                    container("web", {{"cpu", "100m"}}),
                    container("fpga", {{"example.com/fpga", "1k"}, {"nvidia.com/gpu", "0"}})})}};
  const ExtendedRequests r = readExtendedRequests(spec);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r.at("nvidia.com/gpu"),
            (std::vector<ContainerShare>{{"setup", 1, ContainerKind::kInit},
                                         {"log", 1, ContainerKind::kSidecar},
                                         {"cuda", 2, ContainerKind::kApp}}));
  EXPECT_EQ(r.at("example.com/fpga"),
            (std::vector<ContainerShare>{{"fpga", 1000, ContainerKind::kApp}}));
}

TEST(ExtendedRequests, ARequestAloneCountsAndWhatIsNoCountReadsAsTooMany) {
  json c = {{"name", "a"}, {"resources", {{"requests", {{"example.com/k80", "3"}}}}}};
  EXPECT_EQ(readExtendedRequests({{"containers", json::array({c})}}).at("example.com/k80")[0].count,
            3);
  // A device plugin's name may count anything; a pod is never refused for it, and no claim can
  // be made for such a count.
  for (const char* odd : {"500m", "1.5", "1Ki", "", "x", "99999999999999999999999", "9999999G"}) {
    const auto r = readExtendedRequests(
        {{"containers", json::array({container("a", {{"example.com/k80", odd}})})}});
    EXPECT_EQ(r.at("example.com/k80")[0].count, int64_t{1} << 30) << odd;
  }
  EXPECT_THROW(
      readExtendedRequests({{"containers", json::array({{{"name", "a"}, {"resources", 1}}})}}),
      std::invalid_argument);
}

TEST(ExtendedRequests, KnowsAnExtendedResourceName) {
  for (const char* yes : {"nvidia.com/gpu", "example.com/k80", "a.b/c_d"}) {
    EXPECT_TRUE(isExtendedResourceName(yes)) << yes;
  }
  for (const char* no : {"cpu", "memory", "kubernetes.io/x", "foo.kubernetes.io/x",
                         "requests.nvidia.com/gpu", "/x", "x/", "a/b/c", "hugepages-2Mi"}) {
    EXPECT_FALSE(isExtendedResourceName(no)) << no;
  }
}

TEST(ContainerShares, PodNeedsAsKubernetesSumsInitSidecarAndAppContainers) {
  using K = ContainerKind;
  EXPECT_EQ(devicesNeeded({{"a", 2, K::kApp}, {"b", 1, K::kApp}}), 3);
  EXPECT_EQ(devicesNeeded({{"i", 4, K::kInit}, {"a", 1, K::kApp}}), 4) << "the init runs alone";
  EXPECT_EQ(devicesNeeded({{"s", 1, K::kSidecar}, {"i", 2, K::kInit}, {"a", 1, K::kApp}}), 3)
      << "the init runs beside the sidecar before it";
  EXPECT_EQ(devicesNeeded({{"i", 2, K::kInit}, {"s", 1, K::kSidecar}, {"a", 1, K::kApp}}), 2)
      << "a sidecar after the init does not run beside it";
}

TEST(ContainerShares, AppContainersAndSidecarsGetDisjointSlicesInitsReuseThem) {
  using K = ContainerKind;
  const std::vector<ContainerShare> shares = {
      {"s", 1, K::kSidecar}, {"i", 2, K::kInit}, {"a", 1, K::kApp}, {"b", 1, K::kApp}};
  ASSERT_EQ(devicesNeeded(shares), 3);
  const auto got = shareDevices(shares, {"d0", "d1", "d2"});
  EXPECT_EQ(got.at("s"), (std::vector<std::string>{"d0"}));
  EXPECT_EQ(got.at("i"), (std::vector<std::string>{"d1", "d2"})) << "not the running sidecar's";
  EXPECT_EQ(got.at("a"), (std::vector<std::string>{"d1"}));
  EXPECT_EQ(got.at("b"), (std::vector<std::string>{"d2"}));
  EXPECT_EQ(got.count("web"), 0u);
  EXPECT_EQ(shareDevices({{"a", 2, K::kApp}}, {"d0"}).at("a"), (std::vector<std::string>{"d0"}))
      << "a short allocation gives what there is";
}

std::shared_ptr<const ExtendedResourceClass> makeClass(const std::string& name,
                                                       const std::string& resource,
                                                       const std::string& created,
                                                       const json& selector = nullptr) {
  json spec = {{"extendedResourceName", resource}, {"rawResourceName", "raw/" + name}};
  if (!selector.is_null()) {
    spec["metadataRequirements"] = selector;
  }
  return std::make_shared<const ExtendedResourceClass>(ExtendedResourceClass::fromJson(
      {{"metadata", {{"name", name}, {"creationTimestamp", created}}}, {"spec", spec}}));
}

TEST(ClassTable, TheOldestValidClassServesAName) {
  auto older = makeClass("b-older", "nvidia.com/gpu", "2026-01-01T00:00:00Z");
  auto newer = makeClass("a-newer", "nvidia.com/gpu", "2026-02-01T00:00:00Z");
  auto tie = makeClass("c-tie", "nvidia.com/gpu", "2026-01-01T00:00:00Z");
  auto invalid =
      makeClass("0-bad", "nvidia.com/gpu", "2025-01-01T00:00:00Z",
                {{"matchExpressions", json::array({{{"key", "m"}, {"operator", "Gt"}}})}});
  ASSERT_FALSE(invalid->invalid.empty());
  const ClassTable t({newer, tie, invalid, older});
  EXPECT_EQ(t.serving("nvidia.com/gpu"), older);
  EXPECT_EQ(t.supersededBy(*newer), older);
  EXPECT_EQ(t.supersededBy(*tie), older) << "a tie goes to the smaller name";
  EXPECT_EQ(t.supersededBy(*older), nullptr);
  EXPECT_EQ(t.supersededBy(*invalid), nullptr);
  EXPECT_EQ(t.serving("example.com/fpga"), nullptr);
}

TEST(ClassTable, RefusesANameThatIsNoExtendedResource) {
  EXPECT_NE(makeClass("c", "cpu", "t")->invalid, "");
  EXPECT_NE(makeClass("c", "kubernetes.io/gpu", "t")->invalid, "");
  EXPECT_EQ(makeClass("c", "nvidia.com/gpu", "t")->invalid, "");
}

TEST(ClassTable, ItsParamsNameTheServingClassOfEachNameAndTheDevicesForPodsOnly) {
  auto older = makeClass("b-older", "nvidia.com/gpu", "2026-01-01T00:00:00Z");
  auto newer = makeClass("a-newer", "nvidia.com/gpu", "2026-02-01T00:00:00Z");
  auto k80 = makeClass("k80", "example.com/k80_v2", "2026-03-01T00:00:00Z");
  auto invalid =
      makeClass("0-bad", "example.com/fpga", "2025-01-01T00:00:00Z",
                {{"matchExpressions", json::array({{{"key", "m"}, {"operator", "Gt"}}})}});
  EXPECT_EQ(classParams(ClassTable({newer, k80, invalid, older})),
            (std::map<std::string, std::string>{
                {kClassParamsAnnotation, "example.com/k80_v2=k80 nvidia.com/gpu=b-older"}}))
      << "a superseded or invalid class serves nothing, and no class is for pods only";
  EXPECT_EQ(classParams(ClassTable()), (std::map<std::string, std::string>{}));

  auto podsOnly = [](ClassPtr c, const std::string& raw) {
    json obj = {
        {"metadata",
         {{"name", c->meta.name},
          {"creationTimestamp", c->meta.creationTimestamp},
          {"labels", {{kPodsOnlyLabel, "true"}}}}},
        {"spec", {{"extendedResourceName", c->extendedResourceName}, {"rawResourceName", raw}}}};
    return std::make_shared<const ExtendedResourceClass>(ExtendedResourceClass::fromJson(obj));
  };
  const ClassTable labelled(
      {podsOnly(newer, "gpu2"), podsOnly(older, "gpu"), podsOnly(k80, "odd name=100%")});
  EXPECT_EQ(classParams(labelled).at(kPodsOnlyParamsAnnotation),
            "gpu=b-older=nvidia.com/gpu odd%20name%3D100%25=k80=example.com/k80_v2")
      << "a class serving its name only (pods asking for a superseded one's name get another's "
         "devices); separators encoded";
  EXPECT_EQ(podsOnlyClass(labelled, "gpu"), labelled.serving("nvidia.com/gpu"));
  EXPECT_EQ(podsOnlyClass(labelled, "gpu2"), nullptr);
  EXPECT_EQ(podsOnlyClass(ClassTable({newer, older}), "gpu"), nullptr) << "no label";
}

Pod podAsking(const json& limits, const std::string& record = "") {
  json meta = {{"name", "web"}, {"namespace", "ns"}, {"uid", "pod-uid"}};
  if (!record.empty()) {
    meta["annotations"] = {{kGeneratedClaimsAnnotation, record}};
  }
  return Pod::fromJson(
      {{"metadata", meta},
       {"spec",
        {{"schedulerName", kDefaultSchedulerName},
         {"containers", json::array({container("cuda", limits), container("web", nullptr)})}}}});
}

TEST(ClassClaims, TheClaimAsksTheClassesDevicesSplitAmongTheContainers) {
  auto cls = makeClass("gpu", "nvidia.com/gpu", "t", {{"matchLabels", {{"type", "k80"}}}});
  const Pod pod = podAsking({{"nvidia.com/gpu", "2"}});
  const auto requests = classRequests(pod.extendedRequests, ClassTable({cls}));
  ASSERT_EQ(requests.size(), 1u);
  const json made = claimFromClass(pod, requests.at("nvidia.com/gpu"), true);
  EXPECT_EQ(made["metadata"]["name"], podClaimName(pod, "gpu", "nvidia.com/gpu"));
  EXPECT_EQ(made["metadata"]["labels"][kClassLabel], "gpu");
  EXPECT_EQ(made["metadata"]["labels"][kPodUidLabel], "pod-uid");
  EXPECT_EQ(made["metadata"]["ownerReferences"][0]["uid"], "pod-uid");
  EXPECT_EQ(made["metadata"]["finalizers"][0], kClaimProtectionFinalizer);
  json claimObj = made;
  claimObj["metadata"]["name"] = "web-gpu-abcde";
  claimObj["metadata"]["ownerReferences"][0]["controller"] = true;
  const auto claim = ExtendedResourceClaim::fromJson(claimObj);
  ASSERT_EQ(claim.invalid, "");
  EXPECT_EQ(claim.rawResourceName, "raw/gpu");
  EXPECT_EQ(claim.extendedResourceNum, 2);
  EXPECT_EQ(claim.containers, (std::vector<ContainerShare>{{"cuda", 2, ContainerKind::kApp}}));
  EXPECT_EQ(classClaimProblem(pod, requests.at("nvidia.com/gpu"), claim), "");

  // What the owner of the pod could edit the claim to, and what another pod's claim is.
  for (auto edit : std::vector<std::function<void(json&)>>{
           [](json& c) { c["spec"]["extendedResourceNum"] = 3; },
           [](json& c) { c["spec"]["containers"][0]["count"] = 3; },
           [](json& c) { c["spec"]["metadataRequirements"]["matchLabels"]["type"] = "h100"; },
           [](json& c) { c["spec"]["rawResourceName"] = "raw/other"; },
           [](json& c) { c["metadata"]["ownerReferences"][0]["uid"] = "other-pod"; }}) {
    json edited = claimObj;
    edit(edited);
    EXPECT_NE(classClaimProblem(pod, requests.at("nvidia.com/gpu"),
                                ExtendedResourceClaim::fromJson(edited)),
              "")
        << edited.dump();
  }
}

TEST(ClassClaims, AClaimsContainersMustAddUpToItsCount) {
  json c = {{"metadata", {{"name", "c"}, {"namespace", "ns"}}},
            {"spec",
             {{"rawResourceName", "r"},
              {"extendedResourceNum", 2},
              {"containers", json::array({{{"name", "a"}, {"count", 1}}})}}}};
  EXPECT_NE(ExtendedResourceClaim::fromJson(c).invalid, "");
  c["spec"]["containers"][0]["count"] = 2;
  EXPECT_EQ(ExtendedResourceClaim::fromJson(c).invalid, "");
  c["spec"]["containers"][0]["kind"] = "Later";
  EXPECT_NE(ExtendedResourceClaim::fromJson(c).invalid, "");
}

TEST(ClassClaims, TheRecordKeysClaimsByResourceName) {
  const Pod pod = podAsking({{"nvidia.com/gpu", "1"}},
                            R"({"nvidia.com/gpu":"web-gpu-abcde","entry":"web-entry-x"})");
  EXPECT_EQ(pod.resourceClaims,
            (std::map<std::string, std::string>{{"nvidia.com/gpu", "web-gpu-abcde"}}));
  EXPECT_EQ(pod.claims, std::vector<std::string>{"web-gpu-abcde"})
      << "a record entry no template names is not a claim of the pod";
}

// A class request's claim is the extender's to make, at bind: the controller makes none, and
// only lifts the gate deploy/'s routing policy once gave such pods.
TEST(ClassClaims, TheControllerMakesNoClaimForAClassRequestAndLiftsTheOldGate) {
  Pod pod = podAsking({{"nvidia.com/gpu", "1"}});
  TemplateClaimsInputs in;
  in.pod = &pod;
  in.classes = ClassTable({makeClass("gpu", "nvidia.com/gpu", "t")});
  TemplateClaimsPlan plan = planTemplateClaims(in);
  EXPECT_TRUE(plan.lookups.empty());
  EXPECT_TRUE(plan.creates.empty());
  EXPECT_FALSE(plan.recordPatch.has_value());

  pod.schedulingGates = {"example.com/other", kClassClaimsGate};
  plan = planTemplateClaims(in);
  ASSERT_TRUE(plan.recordPatch.has_value());
  EXPECT_EQ(
      *plan.recordPatch,
      json::array(
          {{{"op", "test"}, {"path", "/metadata/uid"}, {"value", "pod-uid"}},
           {{"op", "test"}, {"path", "/spec/schedulingGates/1/name"}, {"value", kClassClaimsGate}},
           {{"op", "remove"}, {"path", "/spec/schedulingGates/1"}}}));
  EXPECT_TRUE(plan.events.empty());
  pod.schedulingGates = {"example.com/other"};
  EXPECT_FALSE(planTemplateClaims(in).recordPatch.has_value()) << "another gate is not ours";

  Pod garbled = podAsking({{"nvidia.com/gpu", "1"}}, "{not json");
  garbled.schedulingGates = {kClassClaimsGate};
  ASSERT_FALSE(garbled.invalid.empty());
  in.pod = &garbled;
  plan = planTemplateClaims(in);
  ASSERT_TRUE(plan.recordPatch.has_value()) << "the extender is to say what is wrong";
  EXPECT_EQ(plan.recordPatch->back()["op"], "remove");
}

TEST(ClassClaims, APodsSchedulingGatesAreReadAndOursIsReconciled) {
  const Pod pod = Pod::fromJson(
      {{"metadata", {{"name", "p"}, {"namespace", "ns"}}},
       {"spec",
        {{"containers", json::array()},
         {"schedulingGates", json::array({{{"name", "a"}}, {{"name", kClassClaimsGate}}})}}}});
  EXPECT_EQ(pod.schedulingGates, (std::vector<std::string>{"a", kClassClaimsGate}));
  EXPECT_EQ(podChanged(pod, {}, false).keys.size(), 1u);
}

TEST(ClassClaims, ARequestForMoreThanAClaimHoldsCannotBeServed) {
  auto cls = makeClass("gpu", "nvidia.com/gpu", "t");
  const Pod pod = podAsking({{"nvidia.com/gpu", "2k"}});
  const ClassRequests requests = classRequestsOf(pod, [cls] { return std::vector<ClassPtr>{cls}; });
  const PodClaims resolved = resolveClaims(
      pod, [](const std::string&) { return ClaimPtr(); }, requests);
  EXPECT_EQ(resolved.block, ClaimsBlock::kClaimInvalid);
  EXPECT_TRUE(resolved.unresolvable());
  EXPECT_EQ(resolved.blockMessage,
            "the containers ask for 2000 of nvidia.com/gpu, more devices than a claim holds "
            "(1024)");
}

// The extender fits a request with no recorded claim as the claim it makes at bind, takes one
// made for it already (by an earlier bind, or the controller of an earlier version), and refuses
// one under that name that asks anything else; a recorded claim is checked the same way.
TEST(ClassClaims, TheExtenderFitsTheClaimItWillMakeAndChecksOneMadeBefore) {
  auto cls = makeClass("gpu", "nvidia.com/gpu", "t");
  const Pod pod = podAsking({{"nvidia.com/gpu", "1"}});
  const ClassSource source = [cls] { return std::vector<ClassPtr>{cls}; };
  const ClassRequests requests = classRequestsOf(pod, source);
  EXPECT_TRUE(withoutClaims(pod, {})) << "no class serves the name: not this project's";
  EXPECT_FALSE(withoutClaims(pod, requests));
  const std::string name = podClaimName(pod, "gpu", "nvidia.com/gpu");

  std::vector<std::string> looked;
  PodClaims resolved = resolveClaims(
      pod,
      [&](const std::string& key) {
        looked.push_back(key);
        return ClaimPtr();
      },
      requests);
  EXPECT_EQ(looked, std::vector<std::string>{"ns/" + name});
  looked.clear();
  std::vector<std::string> cachedOnly;
  resolveClaims(
      pod,
      [&](const std::string& key) {
        looked.push_back(key);
        return ClaimPtr();
      },
      requests,
      [&](const std::string& key) {
        cachedOnly.push_back(key);
        return ClaimPtr();
      });
  EXPECT_TRUE(looked.empty()) << "the filter's live read is not asked for a claim made at bind";
  EXPECT_EQ(cachedOnly, std::vector<std::string>{"ns/" + name});
  EXPECT_EQ(resolved.block, ClaimsBlock::kNone) << resolved.blockMessage;
  ASSERT_EQ(resolved.pending.size(), 1u);
  EXPECT_EQ(resolved.pending[0]->meta.name, name);
  EXPECT_EQ(resolved.pending[0]->extendedResourceNum, 1);
  EXPECT_EQ(resolved.pending[0]->meta.uid, "") << "not made yet";
  ASSERT_EQ(resolved.unrecorded.size(), 1u);
  EXPECT_EQ(resolved.unrecorded[0].resource, "nvidia.com/gpu");
  EXPECT_EQ(resolved.unrecorded[0].name, name);
  ASSERT_TRUE(resolved.unrecorded[0].make.has_value());
  EXPECT_EQ(*resolved.unrecorded[0].make, claimFromClass(pod, requests.at("nvidia.com/gpu"), true))
      << "made protected, as the controller protects every claim at once";

  json made = claimFromClass(pod, requests.at("nvidia.com/gpu"), true);
  made["metadata"]["uid"] = "claim-uid";
  auto existing =
      std::make_shared<const ExtendedResourceClaim>(ExtendedResourceClaim::fromJson(made));
  resolved = resolveClaims(
      pod, [existing](const std::string&) { return existing; }, requests);
  EXPECT_EQ(resolved.block, ClaimsBlock::kNone) << resolved.blockMessage;
  ASSERT_EQ(resolved.pending.size(), 1u);
  EXPECT_EQ(resolved.pending[0], existing);
  ASSERT_EQ(resolved.unrecorded.size(), 1u);
  EXPECT_FALSE(resolved.unrecorded[0].make.has_value()) << "it exists: recorded, not made";

  for (auto edit : std::vector<std::function<void(json&)>>{
           [](json& c) { c["spec"]["metadataRequirements"]["matchLabels"]["type"] = "h100"; },
           [](json& c) { c["metadata"]["ownerReferences"][0]["uid"] = "other-pod"; }}) {
    json taken = made;
    edit(taken);
    auto claim =
        std::make_shared<const ExtendedResourceClaim>(ExtendedResourceClaim::fromJson(taken));
    resolved = resolveClaims(
        pod, [claim](const std::string&) { return claim; }, requests);
    EXPECT_EQ(resolved.block, ClaimsBlock::kClaimInvalid) << taken.dump();
    EXPECT_TRUE(resolved.unresolvable());
  }

  const Pod recorded =
      podAsking({{"nvidia.com/gpu", "1"}}, R"({"nvidia.com/gpu":"web-gpu-abcde"})");
  made = claimFromClass(recorded, requests.at("nvidia.com/gpu"), false);
  made["metadata"]["name"] = "web-gpu-abcde";
  auto claim = std::make_shared<const ExtendedResourceClaim>(ExtendedResourceClaim::fromJson(made));
  const ClaimLookup lookup = [claim](const std::string& key) {
    return key == "ns/web-gpu-abcde" ? claim : nullptr;
  };
  resolved = resolveClaims(recorded, lookup, requests);
  EXPECT_EQ(resolved.block, ClaimsBlock::kNone) << resolved.blockMessage;
  ASSERT_EQ(resolved.pending.size(), 1u);
  EXPECT_TRUE(resolved.unrecorded.empty());
  EXPECT_EQ(resolveClaims(
                recorded, [](const std::string&) { return ClaimPtr(); }, requests)
                .block,
            ClaimsBlock::kClaimMissing)
      << "a recorded claim that is gone is not made again";

  made["spec"]["extendedResourceNum"] = 4;
  made["spec"]["containers"][0]["count"] = 4;
  auto edited =
      std::make_shared<const ExtendedResourceClaim>(ExtendedResourceClaim::fromJson(made));
  resolved = resolveClaims(
      recorded, [edited](const std::string&) { return edited; }, requests);
  EXPECT_EQ(resolved.block, ClaimsBlock::kClaimInvalid);
  EXPECT_NE(resolved.blockMessage.find("does not ask what class gpu"), std::string::npos)
      << resolved.blockMessage;
}

TEST(ClassClaims, AClassAppearingReconcilesItsParamsAndThePodsAwaitingTemplates) {
  auto cls = makeClass("gpu", "nvidia.com/gpu", "t");
  auto waiting = std::make_shared<const WatchedPod>(WatchedPod::fromJson(
      {{"metadata", {{"name", "a"}, {"namespace", "ns"}, {"uid", "1"}}},
       {"spec", {{"containers", json::array({container("c", {{"nvidia.com/gpu", "1"}})})}}}}));
  auto recorded = std::make_shared<WatchedPod>(*waiting);
  recorded->meta.name = "b";
  recorded->resourceClaims = {{"nvidia.com/gpu", "b-gpu-x"}};
  auto bound = std::make_shared<WatchedPod>(*waiting);
  bound->meta.name = "c";
  bound->nodeName = "n";
  auto other = std::make_shared<WatchedPod>(*waiting);
  other->meta.name = "d";
  other->extendedRequests = {{"example.com/fpga", {{"c", 1, ContainerKind::kApp}}}};
  auto awaitingTemplate = std::make_shared<WatchedPod>(*other);
  awaitingTemplate->meta.name = "e";
  awaitingTemplate->awaitingTemplates = {"gpu"};
  const Triggers tr = classChanged({waiting, recorded, bound, other, awaitingTemplate});
  ASSERT_EQ(tr.keys.size(), 2u);
  EXPECT_EQ(tr.keys[0], WorkKey(ClassParamsKey{}));
  EXPECT_EQ(std::get<PodKey>(tr.keys[1]).key, "ns/e")
      << "a template's devices may have become, or stopped being, for pods only";
  EXPECT_TRUE(podChanged(*waiting, {}, false).keys.empty())
      << "a pod asking in its resources has nothing for the controller to do";
  auto gated = std::make_shared<WatchedPod>(*waiting);
  gated->schedulingGates = {kClassClaimsGate};
  EXPECT_EQ(podChanged(*gated, {}, false).keys.size(), 1u) << "unless it carries the old gate";
}

TEST(ClassClaims, APodMixesAClassRequestWithNamedClaims) {
  auto cls = makeClass("gpu", "nvidia.com/gpu", "t");
  json pod = {
      {"metadata",
       {{"name", "web"},
        {"namespace", "ns"},
        {"uid", "pod-uid"},
        {"annotations",
         {{kClaimsAnnotation, "licence"},
          {kGeneratedClaimsAnnotation, R"({"nvidia.com/gpu":"web-gpu-abcde"})"}}}}},
      {"spec", {{"containers", json::array({container("cuda", {{"nvidia.com/gpu", "1"}})})}}}};
  const Pod p = Pod::fromJson(pod);
  EXPECT_EQ(p.claims, (std::vector<std::string>{"licence", "web-gpu-abcde"}));
  const ClassRequests requests = classRequestsOf(p, [cls] { return std::vector<ClassPtr>{cls}; });
  json made = claimFromClass(p, requests.at("nvidia.com/gpu"), false);
  made["metadata"]["name"] = "web-gpu-abcde";
  auto gpuClaim =
      std::make_shared<const ExtendedResourceClaim>(ExtendedResourceClaim::fromJson(made));
  auto licence = std::make_shared<const ExtendedResourceClaim>(
      ExtendedResourceClaim::fromJson({{"metadata", {{"name", "licence"}, {"namespace", "ns"}}},
                                       {"spec", {{"rawResourceName", "example.com/licence"}}}}));
  const PodClaims resolved = resolveClaims(
      p,
      [&](const std::string& key) -> ClaimPtr {
        return key == "ns/licence" ? licence : key == "ns/web-gpu-abcde" ? gpuClaim : nullptr;
      },
      requests);
  EXPECT_EQ(resolved.block, ClaimsBlock::kNone) << resolved.blockMessage;
  EXPECT_EQ(resolved.pending.size(), 2u);
}

}  // namespace
}  // namespace ker

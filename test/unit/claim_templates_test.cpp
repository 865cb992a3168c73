// Claims made from templates: the annotations' syntax (common/objects), the controller's plan
// (controller/template_claims_plan), the extender's wait (scheduler/fit/planner) and the node
// agent's view (agent/injection), each through the one function that reads a pod's claims.
#include <gtest/gtest.h>

#include <functional>

#include "agent/injection.h"
#include "controller/template_claims_plan.h"
#include "controller/watch_triggers.h"
#include "model/objects.h"
#include "scheduler/fit/planner.h"

namespace ker {
namespace {

using json = nlohmann::json;

std::map<std::string, std::string> annotations(const std::string& claims,
                                               const std::string& templates,
                                               const std::string& generated = "") {
  std::map<std::string, std::string> a;
  if (!claims.empty()) {
    a[kClaimsAnnotation] = claims;
  }
  if (!templates.empty()) {
    a[kClaimTemplatesAnnotation] = templates;
  }
  if (!generated.empty()) {
    a[kGeneratedClaimsAnnotation] = generated;
  }
  return a;
}

TEST(ClaimTemplatesAnnotation, ParsesEntriesTrimmedInOrder) {
  const auto entries = parseClaimTemplatesAnnotation(" gpu = gpu-template,fpga=fpga.t ,, ");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0], (TemplateEntry{"gpu", "gpu-template"}));
  EXPECT_EQ(entries[1], (TemplateEntry{"fpga", "fpga.t"}));
  EXPECT_EQ(parseClaimTemplatesAnnotation("a=t, a=t").size(), 1u) << "a repeat counts once";
  EXPECT_TRUE(parseClaimTemplatesAnnotation("").empty());
}

TEST(ClaimTemplatesAnnotation, RejectsMalformedEntries) {
  for (const char* bad :
       {"gpu", "=t", "gpu=", "Gpu=t", "g.p=t", "gpu=T_1", "a=t1, a=t2", "gpu=t=u"}) {
    EXPECT_THROW(parseClaimTemplatesAnnotation(bad), std::invalid_argument) << bad;
  }
  EXPECT_THROW(parseClaimTemplatesAnnotation(std::string(64, 'a') + "=t"), std::invalid_argument)
      << "an entry name is a DNS-1123 label";
}

TEST(GeneratedClaimsAnnotation, IsAJsonObjectOfClaimNames) {
  EXPECT_EQ(parseGeneratedClaimsAnnotation(R"({"gpu":"w-gpu-abcde"})"),
            (std::map<std::string, std::string>{{"gpu", "w-gpu-abcde"}}));
  for (const char* bad : {"", "[]", R"({"gpu": 1})", R"({"gpu": "Bad_Name"})", "gpu=x"}) {
    EXPECT_THROW(parseGeneratedClaimsAnnotation(bad), std::invalid_argument) << bad;
  }
  const std::map<std::string, std::string> m{{"b", "c2"}, {"a", "c1"}};
  EXPECT_EQ(parseGeneratedClaimsAnnotation(generatedClaimsValue(m)), m);
}

TEST(PodClaimNames, NamedClaimsThenRecordedGeneratedOnesAndTheEntriesStillAwaited) {
  const PodClaimNames n = podClaimNames(
      annotations("a, b", "gpu=t1, fpga=t2, nic=t3", R"({"gpu":"w-gpu-1","old":"w-old-1"})"));
  EXPECT_EQ(n.invalid, "");
  EXPECT_EQ(n.claims, (std::vector<std::string>{"a", "b", "w-gpu-1"}))
      << "a recorded entry no longer named is not used";
  EXPECT_EQ(n.generated, (std::map<std::string, std::string>{{"gpu", "w-gpu-1"}}));
  EXPECT_EQ(n.awaiting, (std::vector<std::string>{"fpga", "nic"}));

  // A generated claim the claims annotation names too, or two entries recorded with one claim,
  // is used once, where it first appears.
  const PodClaimNames twice = podClaimNames(
      annotations("w-gpu-1, a", "gpu=t1, fpga=t2", R"({"gpu":"w-gpu-1","fpga":"a"})"));
  EXPECT_EQ(twice.claims, (std::vector<std::string>{"w-gpu-1", "a"}));
}

TEST(PodClaimNames, AGarbledAnnotationIsNamedInTheProblem) {
  EXPECT_NE(podClaimNames(annotations("", "gpu")).invalid.find(kClaimTemplatesAnnotation),
            std::string::npos);
  EXPECT_NE(podClaimNames(annotations("", "gpu=t", "{")).invalid.find(kGeneratedClaimsAnnotation),
            std::string::npos);
  EXPECT_EQ(
      podClaimNames(annotations("Bad_Name", ""))
          .invalid.rfind(std::string("annotation ") + kClaimsAnnotation + ": \"Bad_Name\"", 0),
      0u);
}

TEST(PodClaimNames, PodFromJsonUsesThem) {
  const Pod p = Pod::fromJson(
      json{{"metadata",
            {{"name", "w"},
             {"namespace", "ns"},
             {"annotations", annotations("", "gpu=t1, fpga=t2", R"({"gpu":"w-gpu-1"})")}}}});
  EXPECT_EQ(p.invalid, "");
  EXPECT_EQ(p.claims, std::vector<std::string>{"w-gpu-1"});
  EXPECT_EQ(p.claimTemplates.size(), 2u);
  EXPECT_EQ(p.awaitingTemplates, std::vector<std::string>{"fpga"});
}

TEST(ClaimTemplateObject, ParsesLenientlyAndChecksTheClaimSpec) {
  const json good = {{"metadata", {{"name", "t"}, {"namespace", "ns"}}},
                     {"spec",
                      {{"metadata", {{"labels", {{"l", "v"}}}, {"annotations", {{"a", "b"}}}}},
                       {"spec", {{"rawResourceName", "x.io/gpu"}, {"extendedResourceNum", 2}}}}}};
  const auto t = ExtendedResourceClaimTemplate::fromJson(good);
  EXPECT_EQ(t.invalid, "");
  EXPECT_EQ(t.meta.name, "t");
  EXPECT_EQ(t.claimLabels, (std::map<std::string, std::string>{{"l", "v"}}));
  EXPECT_EQ(t.claimAnnotations, (std::map<std::string, std::string>{{"a", "b"}}));
  EXPECT_EQ(t.claimSpec["extendedResourceNum"], 2);

  json noSpec = good;
  noSpec["spec"].erase("spec");
  EXPECT_NE(ExtendedResourceClaimTemplate::fromJson(noSpec).invalid.find("spec.spec"),
            std::string::npos);
  json badSpec = good;
  badSpec["spec"]["spec"]["extendedResourceNum"] = "two";
  const auto bad = ExtendedResourceClaimTemplate::fromJson(badSpec);
  EXPECT_NE(bad.invalid.find("extendedResourceNum"), std::string::npos) << bad.invalid;
  EXPECT_EQ(bad.meta.name, "t") << "one bad field does not hide the name";
  json badLabels = good;
  badLabels["spec"]["metadata"]["labels"] = json::array();
  EXPECT_NE(ExtendedResourceClaimTemplate::fromJson(badLabels).invalid.find("spec.metadata.labels"),
            std::string::npos);
  EXPECT_NE(ExtendedResourceClaimTemplate::fromJson(json::array()).invalid, "");
}

TEST(ObjectMetaOwners, TheControllingOwnerIsRead) {
  const auto c = ExtendedResourceClaim::fromJson(
      json{{"metadata",
            {{"name", "c"},
             {"ownerReferences",
              {{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "a"}, {"uid", "u1"}},
               {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"name", "b"},
                {"uid", "u2"},
                {"controller", true}}}}}},
           {"spec", {{"rawResourceName", "x.io/gpu"}}}});
  EXPECT_EQ(c.invalid, "");
  ASSERT_EQ(c.meta.ownerReferences.size(), 2u);
  EXPECT_EQ(c.meta.controllerUid(), "u2");
}

// ---- the controller's plan ----

class TemplateClaimsPlanTest : public ::testing::Test {
 protected:
  TemplateClaimsPlanTest() {
    pod.meta = {.name = "web-0", .ns = "ns", .uid = "pod-uid", .resourceVersion = "7"};
    pod.meta.annotations = {{kClaimTemplatesAnnotation, "gpu=gpu-tmpl"}};
    pod.phase = "Pending";
    pod.claimTemplates = {{"gpu", "gpu-tmpl"}};
    pod.awaitingTemplates = {"gpu"};
    tmpl = ExtendedResourceClaimTemplate::fromJson(
        json{{"metadata", {{"name", "gpu-tmpl"}, {"namespace", "ns"}}},
             {"spec",
              {{"metadata", {{"labels", {{"team", "a"}}}, {"annotations", {{"note", "n"}}}}},
               {"spec", {{"rawResourceName", "x.io/gpu"}}}}}});
    in.pod = &pod;
    in.templates = {{"gpu-tmpl", &tmpl}};
  }

  ExtendedResourceClaim ownedClaim(const std::string& name, const std::string& entry,
                                   const std::string& ownerUid) {
    json labels = {{kTemplateEntryLabel, entry}, {kPodUidLabel, ownerUid}};
    return ExtendedResourceClaim::fromJson(json{{"metadata",
                                                 {{"name", name},
                                                  {"namespace", "ns"},
                                                  {"labels", labels},
                                                  {"ownerReferences",
                                                   {{{"apiVersion", "v1"},
                                                     {"kind", "Pod"},
                                                     {"name", "web-0"},
                                                     {"uid", ownerUid},
                                                     {"controller", true}}}}}},
                                                {"spec", {{"rawResourceName", "x.io/gpu"}}}});
  }

  // The name the pod's entry "gpu" gets.
  std::string gpuName() const { return podClaimName(pod, "gpu", "gpu"); }

  Pod pod;
  ExtendedResourceClaimTemplate tmpl;
  TemplateClaimsInputs in;
};

TEST_F(TemplateClaimsPlanTest, LooksUpTheEntrysClaimNameBeforeCreatingAny) {
  const auto plan = planTemplateClaims(in);
  EXPECT_EQ(plan.lookups, std::vector<std::string>{gpuName()});
  EXPECT_TRUE(plan.creates.empty());
  EXPECT_FALSE(plan.recordPatch);
}

TEST_F(TemplateClaimsPlanTest, AClaimsNameIsTheSameForEverySyncAndItsOwnForEachPodAndEntry) {
  const std::string name = gpuName();
  EXPECT_EQ(name.rfind("web-0-gpu-", 0), 0u) << name;
  EXPECT_EQ(name.size(), std::string("web-0-gpu-").size() + 8) << name;
  EXPECT_TRUE(isDns1123Subdomain(name)) << name;
  EXPECT_EQ(podClaimName(pod, "gpu", "gpu"), name);
  EXPECT_NE(podClaimName(pod, "gpu", "gpu2"), name) << "another entry";
  Pod replacement = pod;
  replacement.meta.uid = "pod-uid-2";
  EXPECT_NE(podClaimName(replacement, "gpu", "gpu"), name) << "a pod of the same name";
}

TEST_F(TemplateClaimsPlanTest, CreatesTheWholeClaimFromTheTemplate) {
  in.existing[gpuName()] = nullptr;
  const auto plan = planTemplateClaims(in);
  EXPECT_TRUE(plan.lookups.empty());
  EXPECT_FALSE(plan.recordPatch) << "recorded once it exists";
  ASSERT_EQ(plan.creates.size(), 1u);
  EXPECT_EQ(plan.creates[0].entry, "gpu");
  EXPECT_EQ(plan.creates[0].name, gpuName());
  const json expected = {{"apiVersion", "extendedresource.io/v1alpha1"},
                         {"kind", "ExtendedResourceClaim"},
                         {"metadata",
                          {{"name", gpuName()},
                           {"namespace", "ns"},
                           {"labels",
                            {{"team", "a"},
                             {"extendedresource.io/template-entry", "gpu"},
                             {"extendedresource.io/pod-uid", "pod-uid"}}},
                           {"annotations", {{"note", "n"}}},
                           {"ownerReferences",
                            {{{"apiVersion", "v1"},
                              {"kind", "Pod"},
                              {"name", "web-0"},
                              {"uid", "pod-uid"},
                              {"controller", true},
                              {"blockOwnerDeletion", true}}}}}},
                         {"spec", {{"rawResourceName", "x.io/gpu"}}}};
  EXPECT_EQ(plan.creates[0].claim, expected) << plan.creates[0].claim.dump(2);

  in.protect = true;
  const auto protectedPlan = planTemplateClaims(in);
  ASSERT_EQ(protectedPlan.creates.size(), 1u);
  json withFinalizer = expected;
  withFinalizer["metadata"]["finalizers"] = {"extendedresource.io/claim-protection"};
  EXPECT_EQ(protectedPlan.creates[0].claim, withFinalizer)
      << "created protected, rather than protected by a second write";
}

TEST_F(TemplateClaimsPlanTest, AdoptsAClaimThePodControlsAndRecordsItWhileTheRecordIsUnchanged) {
  const auto mine = ownedClaim(gpuName(), "gpu", "pod-uid");
  in.existing[gpuName()] = &mine;
  const auto plan = planTemplateClaims(in);
  EXPECT_TRUE(plan.creates.empty());
  ASSERT_TRUE(plan.recordPatch);
  const std::string path = "/metadata/annotations/extendedresource.io~1generated-claims";
  EXPECT_EQ(*plan.recordPatch,
            (json{{{"op", "test"}, {"path", "/metadata/uid"}, {"value", "pod-uid"}},
                  {{"op", "test"}, {"path", path}, {"value", nullptr}},
                  {{"op", "add"}, {"path", path}, {"value", json{{"gpu", gpuName()}}.dump()}}}))
      << "conditional on the pod and on its record, not on every other write of the pod";
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].reason, "ClaimsGenerated");
}

TEST_F(TemplateClaimsPlanTest, AClaimUnderTheNameNotMadeForTheEntryIsNeverAdopted) {
  const auto otherPods = ownedClaim(gpuName(), "gpu", "old-pod-uid");
  const auto otherEntrys = ownedClaim(gpuName(), "nic", "pod-uid");
  for (const auto* taken : {&otherPods, &otherEntrys}) {
    in.existing[gpuName()] = taken;
    const auto plan = planTemplateClaims(in);
    EXPECT_TRUE(plan.creates.empty());
    EXPECT_FALSE(plan.recordPatch);
    EXPECT_EQ(plan.waitingEntries.at("gpu"),
              "claim ns/" + gpuName() + " exists and was not made for it");
    ASSERT_EQ(plan.warnings.size(), 1u);
    EXPECT_EQ(plan.warnings[0].reason, "ClaimTemplateUnusable");
  }
}

TEST_F(TemplateClaimsPlanTest, KeepsEntriesAlreadyRecordedAndTestsThatRecord) {
  pod.claimTemplates.push_back({"nic", "gpu-tmpl"});
  pod.meta.annotations[kGeneratedClaimsAnnotation] = R"({"nic":"web-0-nic-1"})";
  pod.generatedClaims = {{"nic", "web-0-nic-1"}};
  const auto mine = ownedClaim(gpuName(), "gpu", "pod-uid");
  in.existing[gpuName()] = &mine;
  const auto plan = planTemplateClaims(in);
  ASSERT_TRUE(plan.recordPatch);
  ASSERT_EQ(plan.recordPatch->size(), 3u);
  EXPECT_EQ((*plan.recordPatch)[1]["value"], R"({"nic":"web-0-nic-1"})")
      << "applies only while the record is the one the plan started from";
  EXPECT_EQ((*plan.recordPatch)[2]["value"],
            (json{{"gpu", gpuName()}, {"nic", "web-0-nic-1"}}.dump()));
}

TEST_F(TemplateClaimsPlanTest, AMissingOrInvalidTemplateWaits) {
  in.templates["gpu-tmpl"] = nullptr;
  auto plan = planTemplateClaims(in);
  EXPECT_TRUE(plan.lookups.empty());
  EXPECT_TRUE(plan.creates.empty());
  EXPECT_EQ(plan.waitingEntries.at("gpu"), "template ns/gpu-tmpl not found");
  tmpl.invalid = "spec.spec: required";
  in.templates["gpu-tmpl"] = &tmpl;
  plan = planTemplateClaims(in);
  EXPECT_TRUE(plan.creates.empty());
  EXPECT_NE(plan.waitingEntries.at("gpu").find("is invalid"), std::string::npos);
}

TEST_F(TemplateClaimsPlanTest, ATemplateOfDevicesAClassGivesToPodsOnlyWaits) {
  auto makeClass = [](const std::string& name, const std::string& resource, bool podsOnly) {
    json meta = {{"name", name}, {"creationTimestamp", "2026-01-01T00:00:00Z"}};
    if (podsOnly) {
      meta["labels"] = {{kPodsOnlyLabel, "true"}};
    }
    return std::make_shared<const ExtendedResourceClass>(ExtendedResourceClass::fromJson(
        {{"metadata", meta},
         {"spec", {{"extendedResourceName", resource}, {"rawResourceName", "x.io/gpu"}}}}));
  };
  in.existing[gpuName()] = nullptr;
  in.classes = ClassTable({makeClass("gpu", "nvidia.com/gpu", false)});
  EXPECT_EQ(planTemplateClaims(in).creates.size(), 1u) << "a class without the label";

  in.classes = ClassTable({makeClass("gpu", "nvidia.com/gpu", true)});
  const auto plan = planTemplateClaims(in);
  EXPECT_TRUE(plan.creates.empty());
  EXPECT_EQ(plan.waitingEntries.at("gpu"),
            "template ns/gpu-tmpl asks for devices of x.io/gpu, which ExtendedResourceClass gpu "
            "gives only to pods that ask for nvidia.com/gpu in their resources");
}

TEST_F(TemplateClaimsPlanTest, AWaitingEntryIsWarnedOfOncePerProblem) {
  in.templates["gpu-tmpl"] = nullptr;
  auto plan = planTemplateClaims(in);
  EXPECT_EQ(plan.problem, "template entry gpu: template ns/gpu-tmpl not found");
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_EQ(plan.warnings[0].reason, "ClaimTemplateUnusable");
  EXPECT_EQ(plan.warnings[0].type, EventType::kWarning);
  in.warned = plan.problem;
  plan = planTemplateClaims(in);
  EXPECT_TRUE(plan.warnings.empty()) << "warned of already";
  in.templates["gpu-tmpl"] = &tmpl;
  in.existing[gpuName()] = nullptr;
  plan = planTemplateClaims(in);
  EXPECT_EQ(plan.problem, "") << "mended: the warning is forgotten";
  EXPECT_TRUE(plan.warnings.empty());
}

TEST_F(TemplateClaimsPlanTest, NothingForPodsPastScheduling) {
  in.existing[gpuName()] = nullptr;
  for (auto change : std::vector<std::function<void(Pod&)>>{
           [](Pod& p) { p.nodeName = "n1"; }, [](Pod& p) { p.phase = "Succeeded"; },
           [](Pod& p) { p.meta.deleting = true; }, [](Pod& p) { p.invalid = "garbled"; },
           [](Pod& p) { p.awaitingTemplates.clear(); }}) {
    Pod before = pod;
    change(pod);
    const auto plan = planTemplateClaims(in);
    EXPECT_TRUE(plan.creates.empty());
    EXPECT_TRUE(plan.lookups.empty());
    EXPECT_FALSE(plan.recordPatch);
    pod = before;
  }
}

TEST_F(TemplateClaimsPlanTest, TheClaimsNameStaysValidForLongPodNames) {
  pod.meta.name = std::string(179, 'a') + "." + std::string(70, 'b');
  const json c = claimFromTemplate(pod, {std::string(63, 'e'), "gpu-tmpl"}, tmpl, true);
  const std::string name = c["metadata"]["name"];
  EXPECT_LE(name.size(), 253u);
  EXPECT_TRUE(isDns1123Subdomain(name)) << name;
}

TEST(TemplateTriggers, ATemplateChangeQueuesThePodsWaitingForIt) {
  auto pod = [](const std::string& name, const std::string& ns, const std::string& templates,
                const std::string& generated) {
    return std::make_shared<const WatchedPod>(
        WatchedPod::fromJson(json{{"metadata",
                                   {{"name", name},
                                    {"namespace", ns},
                                    {"annotations", annotations("", templates, generated)}}}}));
  };
  ExtendedResourceClaimTemplate t;
  t.meta.name = "t";
  t.meta.ns = "ns";
  const std::vector<CachedPod> pods = {
      pod("waiting", "ns", "gpu=t", ""),
      pod("recorded", "ns", "gpu=t", R"({"gpu":"c"})"),
      pod("other-template", "ns", "gpu=u", ""),
      pod("other-namespace", "ns2", "gpu=t", ""),
  };
  const Triggers tr = templateChanged(t, pods);
  ASSERT_EQ(tr.keys.size(), 1u);
  EXPECT_EQ(std::get<PodKey>(tr.keys[0]).key, "ns/waiting");
  // A pod naming only templates is reconciled when it changes.
  EXPECT_EQ(podChanged(*pods[0], {}, false).keys.size(), 1u);
}

// ---- the extender ----

TEST(TemplateClaimsExtender, AnEntryWithoutClaimYetFailsResolvably) {
  const Pod p = Pod::fromJson(json{{"metadata",
                                    {{"name", "w"},
                                     {"namespace", "ns"},
                                     {"uid", "u"},
                                     {"annotations", annotations("", "gpu=t")}}}});
  const PodClaims claims = resolveClaims(p, [](const std::string&) -> ClaimPtr { return nullptr; });
  EXPECT_FALSE(claims.unresolvable());
  EXPECT_EQ(claims.block, ClaimsBlock::kAwaitingClaim);
  EXPECT_EQ(
      claims.blockMessage,
      "waiting for the controller to create the claim for template entry gpu (template ns/t)");
  DeviceIndex index;
  const NodePlan plan = planNode(claims, "u", "n1", {}, index);
  EXPECT_FALSE(plan.fits);
  EXPECT_FALSE(plan.unresolvable);
  EXPECT_EQ(plan.message, claims.blockMessage);
}

TEST(TemplateClaimsExtender, RecordedClaimsAreLookedUpLikeNamedOnes) {
  const Pod p =
      Pod::fromJson(json{{"metadata",
                          {{"name", "w"},
                           {"namespace", "ns"},
                           {"uid", "u"},
                           {"annotations", annotations("", "gpu=t", R"({"gpu":"w-gpu-1"})")}}}});
  std::vector<std::string> looked;
  const PodClaims claims = resolveClaims(p, [&](const std::string& key) -> ClaimPtr {
    looked.push_back(key);
    return nullptr;
  });
  EXPECT_EQ(looked, std::vector<std::string>{"ns/w-gpu-1"});
  EXPECT_EQ(claims.block, ClaimsBlock::kClaimMissing);
  EXPECT_EQ(claims.blockMessage, "claim ns/w-gpu-1 not found");
}

// ---- the node agent ----

TEST(TemplateClaimsAgent, SeesGeneratedClaimsAndRefusesAPodStillWaiting) {
  agent::PodIdentity pod{"u", "ns", "w", annotations("a", "gpu=t", R"({"gpu":"w-gpu-1"})")};
  const agent::NamedClaims named = agent::namedClaims(pod);
  EXPECT_EQ(named.names, (std::vector<std::string>{"a", "w-gpu-1"}));
  EXPECT_TRUE(named.awaiting.empty());

  pod.annotations = annotations("", "gpu=t");
  agent::InjectionInput in;
  in.pod = &pod;
  in.node = "n1";
  in.named = agent::namedClaims(pod);
  const agent::Injection inj = agent::decideInjection(in);
  ASSERT_TRUE(std::holds_alternative<agent::Refusal>(inj));
  EXPECT_EQ(std::get<agent::Refusal>(inj).reason, agent::RefusalReason::kClaimNotFound);
  EXPECT_TRUE(agent::startedWithoutDevices(pod, {}, "p") == false)
      << "the pod does not require the plugin";
}

}  // namespace
}  // namespace ker

// The record of a pod's generated claims, as the controller's plan writes it, against a real
// kube-apiserver: it is written past other writes of the pod (kube-scheduler's status among
// them), and refused while the record or the pod is not the one the plan started from.
#include <gtest/gtest.h>

#include "common/api_error.h"
#include "controller/template_claims_plan.h"
#include "model/objects.h"
#include "test_env.h"

namespace ker::itest {
namespace {

using nlohmann::json;

class TemplateRecordTest : public ApiTest {
 protected:
  void SetUp() override {
    ApiTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    ns_ = createNamespace(*api_, "record");
    const json created = api_->create(resources::kPods, ns_, templatePod("w"));
    pod_ = Pod::fromJson(created);
    ASSERT_TRUE(pod_.invalid.empty()) << pod_.invalid;
  }

  void TearDown() override {
    if (api_ != nullptr && !ns_.empty()) {
      deleteAllPodsNow(*api_, ns_);
    }
  }

  // A pod that names one template entry, for a scheduler nobody serves.
  json templatePod(const std::string& name) {
    json p = podObject(ns_, name, {}, "nobody");
    p["metadata"]["annotations"] = {{kClaimTemplatesAnnotation, "gpu=gpu-tmpl"}};
    return p;
  }

  // The record patch the controller plans for `pod` (its cached copy) once a claim of its own
  // named `claim` exists for the entry.
  json recordPatch(const Pod& pod, const std::string& claim) {
    const auto tmpl = ExtendedResourceClaimTemplate::fromJson(
        {{"metadata", {{"name", "gpu-tmpl"}, {"namespace", ns_}}},
         {"spec", {{"spec", {{"rawResourceName", "x.io/gpu"}}}}}});
    const auto owned = ExtendedResourceClaim::fromJson(
        {{"metadata",
          {{"name", claim},
           {"namespace", ns_},
           {"labels", {{kTemplateEntryLabel, "gpu"}, {kPodUidLabel, pod.meta.uid}}},
           {"ownerReferences",
            {{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"name", pod.meta.name},
              {"uid", pod.meta.uid},
              {"controller", true}}}}}},
         {"spec", {{"rawResourceName", "x.io/gpu"}}}});
    TemplateClaimsInputs in;
    in.pod = &pod;
    in.templates = {{"gpu-tmpl", &tmpl}};
    in.existing[podClaimName(pod, "gpu", "gpu")] = &owned;
    const TemplateClaimsPlan plan = planTemplateClaims(in);
    EXPECT_TRUE(plan.recordPatch) << "no record planned";
    return plan.recordPatch.value_or(json::array());
  }

  std::string record(const std::string& name) {
    return api_->get(resources::kPods, ns_, name)
        .value("/metadata/annotations"_json_pointer, json::object())
        .value(kGeneratedClaimsAnnotation, "");
  }

  void patch(const std::string& name, const json& p) {
    api_->patch(resources::kPods, ns_, name, PatchType::kJson, p);
  }

  std::string ns_;
  Pod pod_;  // the pod as created: the controller's cached copy
};

TEST_F(TemplateRecordTest, IsWrittenPastAnotherWriteOfThePod) {
  // kube-scheduler's status write when it tries the pod before its claim is recorded.
  api_->patch(
      resources::kPods, ns_, "w", PatchType::kMerge,
      {{"status",
        {{"conditions",
          {{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}}}}}},
      "status");
  patch("w", recordPatch(pod_, "w-gpu-1"));
  EXPECT_EQ(record("w"), R"({"gpu":"w-gpu-1"})");
}

TEST_F(TemplateRecordTest, IsRefusedOnceTheRecordChanged) {
  patch("w", recordPatch(pod_, "w-gpu-1"));
  // A second plan from the copy without the record (a stale cache, or a leader that lost its
  // lease) must not replace it.
  try {
    patch("w", recordPatch(pod_, "w-gpu-2"));
    FAIL() << "a record planned against no record replaced one";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.kind(), ApiErrorKind::kInvalid) << e.what();
  }
  EXPECT_EQ(record("w"), R"({"gpu":"w-gpu-1"})");
}

TEST_F(TemplateRecordTest, IsRefusedOnAPodOfTheSameNameButAnotherUid) {
  deletePodNow(*api_, ns_, "w");
  api_->create(resources::kPods, ns_, templatePod("w"));
  EXPECT_THROW(patch("w", recordPatch(pod_, "w-gpu-1")), ApiError);
  EXPECT_EQ(record("w"), "") << "the new pod got the old pod's claim";
}

}  // namespace
}  // namespace ker::itest

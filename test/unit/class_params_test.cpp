// The controller keeps the class admission policies' params (an annotation of a Namespace) equal
// to the classes: controller/class_params against the in-memory API.
#include "controller/class_params.h"

#include <gtest/gtest.h>

#include "fake_api_client.h"

namespace ker {
namespace {

using json = nlohmann::json;
using testing::FakeApiClient;

ClassPtr makeClass(const std::string& name, const std::string& extendedResourceName,
                   const std::string& created, bool podsOnly = false) {
  json meta = {{"name", name}, {"creationTimestamp", created}};
  if (podsOnly) {
    meta["labels"] = {{kPodsOnlyLabel, "true"}};
  }
  return std::make_shared<const ExtendedResourceClass>(ExtendedResourceClass::fromJson(
      {{"metadata", meta},
       {"spec", {{"extendedResourceName", extendedResourceName}, {"rawResourceName", "k80"}}}}));
}

class ClassParamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_.create(resources::kNamespaces, "",
                {{"metadata", {{"name", "params"}, {"annotations", {{"team", "infra"}}}}}});
  }
  json annotations() {
    return api_.get(resources::kNamespaces, "", "params")["metadata"]["annotations"];
  }
  std::string version() {
    return api_.get(resources::kNamespaces, "", "params")["metadata"]["resourceVersion"];
  }

  FakeApiClient api_;
  bool leading_ = true;
  ClassParamsPublisher publisher_{api_, [this] { return leading_; }, "params"};
};

TEST_F(ClassParamsTest, TheAnnotationFollowsTheServingClassesAndNothingElseChanges) {
  const ClassTable one({makeClass("gpu", "nvidia.com/gpu", "2026-01-01T00:00:00Z"),
                        makeClass("gpu-2", "nvidia.com/gpu", "2026-02-01T00:00:00Z")});
  ASSERT_EQ(publisher_.sync(one).status, ReconcileResult::Status::kDone);
  EXPECT_EQ(annotations(),
            (json{{"team", "infra"}, {kClassParamsAnnotation, "nvidia.com/gpu=gpu"}}));

  const std::string written = version();
  const ReconcileResult again = publisher_.sync(one);
  ASSERT_EQ(again.status, ReconcileResult::Status::kDone);
  EXPECT_EQ(version(), written) << "an equal annotation is not written again";
  EXPECT_EQ(again.requeueAfter, ClassParamsPublisher::kRecheck)
      << "nothing watches the Namespace: it is looked at again";

  ASSERT_EQ(publisher_.sync(ClassTable({makeClass("gpu", "nvidia.com/gpu", "t", true)})).status,
            ReconcileResult::Status::kDone);
  EXPECT_EQ(annotations(), (json{{"team", "infra"},
                                 {kClassParamsAnnotation, "nvidia.com/gpu=gpu"},
                                 {kPodsOnlyParamsAnnotation, "k80=gpu=nvidia.com/gpu"}}));

  ASSERT_EQ(publisher_.sync(ClassTable()).status, ReconcileResult::Status::kDone);
  EXPECT_EQ(annotations(), (json{{"team", "infra"}})) << "with no class the annotations go";
  const std::string removed = version();
  ASSERT_EQ(publisher_.sync(ClassTable()).status, ReconcileResult::Status::kDone);
  EXPECT_EQ(version(), removed);
}

TEST_F(ClassParamsTest, AMissingNamespaceIsRetriedAndNeverCreated) {
  api_.remove(resources::kNamespaces, "", "params", {});
  const int creates = api_.calls(FakeApiClient::Verb::kCreate);
  const ReconcileResult r = publisher_.sync(ClassTable({makeClass("gpu", "nvidia.com/gpu", "t")}));
  EXPECT_EQ(r.status, ReconcileResult::Status::kRetry);
  EXPECT_TRUE(r.error.isNotFound()) << r.error;
  EXPECT_NE(r.error.message().find("Namespace params"), std::string::npos) << r.error;
  EXPECT_EQ(api_.calls(FakeApiClient::Verb::kCreate), creates);
}

TEST_F(ClassParamsTest, AStandbyWritesNothing) {
  leading_ = false;
  const ReconcileResult r = publisher_.sync(ClassTable({makeClass("gpu", "nvidia.com/gpu", "t")}));
  EXPECT_EQ(r.status, ReconcileResult::Status::kAborted);
  EXPECT_EQ(annotations(), (json{{"team", "infra"}}));
}

TEST_F(ClassParamsTest, WithoutANamespaceNothingIsRead) {
  ClassParamsPublisher off(
      api_, [] { return true; }, "");
  const int gets = api_.calls(FakeApiClient::Verb::kGet);
  EXPECT_EQ(off.sync(ClassTable({makeClass("gpu", "nvidia.com/gpu", "t")})).status,
            ReconcileResult::Status::kDone);
  EXPECT_EQ(api_.calls(FakeApiClient::Verb::kGet), gets);
}

}  // namespace
}  // namespace ker

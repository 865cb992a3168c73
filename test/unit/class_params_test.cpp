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
                   const std::string& created) {
  return std::make_shared<const ExtendedResourceClass>(ExtendedResourceClass::fromJson(
      {{"metadata", {{"name", name}, {"creationTimestamp", created}}},
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
  ASSERT_EQ(publisher_.sync(one).status, ReconcileResult::Status::kDone);
  EXPECT_EQ(version(), written) << "an equal annotation is not written again";

  ASSERT_EQ(publisher_.sync(ClassTable()).status, ReconcileResult::Status::kDone);
  EXPECT_EQ(annotations(), (json{{"team", "infra"}})) << "with no class the annotation goes";
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

#include "common/event_recorder.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "common/api_error.h"
#include "common/logging.h"
#include "fake_api_client.h"
#include "model/objects.h"

namespace ker {
namespace {

using namespace std::chrono_literals;
using testing::FakeApiClient;

const auto kAt = std::chrono::system_clock::time_point(std::chrono::seconds(1136214245));

ExtendedResourceClaim claim() {
  ExtendedResourceClaim c;
  c.meta.name = "c";
  c.meta.ns = "team";
  c.meta.uid = "uid-c";
  return c;
}

EventRecorderOptions options(size_t queueSize = 100) {
  EventRecorderOptions o;
  o.instance = "host_1234";
  o.queueSize = queueSize;
  o.clock = [] { return kAt; };
  return o;
}

std::vector<nlohmann::json> events(FakeApiClient& api, const std::string& ns) {
  return api.list(resources::kEvents, ns, {})["items"].get<std::vector<nlohmann::json>>();
}

TEST(EventRecorderTest, PostsACompleteCoreV1Event) {
  FakeApiClient api;
  EventRecorder r(api, options());
  r.start();
  r.record(referenceTo(claim()), EventType::kNormal, "Released", "released from pod p");
  ASSERT_TRUE(r.flush(5s));
  auto list = events(api, "team");
  ASSERT_EQ(list.size(), 1u);
  const auto& e = list[0];
  EXPECT_EQ(e["involvedObject"], (nlohmann::json{{"apiVersion", "extendedresource.io/v1alpha1"},
                                                 {"kind", "ExtendedResourceClaim"},
                                                 {"namespace", "team"},
                                                 {"name", "c"},
                                                 {"uid", "uid-c"}}));
  EXPECT_EQ(e["reason"], "Released");
  EXPECT_EQ(e["message"], "released from pod p");
  EXPECT_EQ(e["type"], "Normal");
  EXPECT_EQ(e["source"]["component"], "extended-resource-controller");
  EXPECT_EQ(e["reportingComponent"], "extended-resource-controller");
  EXPECT_EQ(e["reportingInstance"], "host_1234");
  EXPECT_EQ(e["firstTimestamp"], "2006-01-02T15:04:05Z");
  EXPECT_EQ(e["lastTimestamp"], "2006-01-02T15:04:05Z");
  EXPECT_EQ(e["count"], 1);
  EXPECT_EQ(e["metadata"]["namespace"], "team");
  EXPECT_EQ(e["metadata"]["name"].get<std::string>().rfind("c.", 0), 0u);
  EXPECT_EQ(r.stats().sent, 1u);
}

TEST(EventRecorderTest, PodEventsAndWarnings) {
  FakeApiClient api;
  EventRecorder r(api, options());
  r.start();
  Pod p;
  p.meta.name = "p";
  p.meta.ns = "team";
  p.meta.uid = "uid-p";
  r.record(referenceTo(p), EventType::kWarning, "ClaimReleased", "claim c released");
  ASSERT_TRUE(r.flush(5s));
  auto list = events(api, "team");
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["type"], "Warning");
  EXPECT_EQ(list[0]["involvedObject"]["kind"], "Pod");
  EXPECT_EQ(list[0]["involvedObject"]["apiVersion"], "v1");
}

TEST(EventRecorderTest, NamesStayUniqueForEventsAtTheSameInstant) {
  FakeApiClient api;
  EventRecorder r(api, options());
  r.start();
  for (int i = 0; i < 5; ++i) {
    r.record(referenceTo(claim()), EventType::kNormal, "Bound", "again");
  }
  ASSERT_TRUE(r.flush(5s));
  EXPECT_EQ(events(api, "team").size(), 5u);
  EXPECT_EQ(r.stats().failed, 0u);
}

// Several posters: each event is posted once, under a name of its own, and flush waits for
// the posts still in flight as well as the queue.
TEST(EventRecorderTest, SeveralPostersPostEveryEventOnce) {
  FakeApiClient api;
  EventRecorderOptions o = options(1000);
  o.posters = 4;
  EventRecorder r(api, o);
  r.start();
  constexpr int kEvents = 200;
  for (int i = 0; i < kEvents; ++i) {
    r.record(referenceTo(claim()), EventType::kNormal, "Bound", std::to_string(i));
  }
  ASSERT_TRUE(r.flush(5s));
  const auto list = events(api, "team");
  ASSERT_EQ(list.size(), static_cast<size_t>(kEvents));
  std::set<std::string> names;
  std::set<std::string> messages;
  for (const auto& e : list) {
    names.insert(e["metadata"]["name"].get<std::string>());
    messages.insert(e["message"].get<std::string>());
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(kEvents));
  EXPECT_EQ(messages.size(), static_cast<size_t>(kEvents));
  EXPECT_EQ(r.stats().sent, static_cast<uint64_t>(kEvents));
  r.stop();
  r.record(referenceTo(claim()), EventType::kNormal, "Bound", "after stop");
  EXPECT_EQ(r.stats().dropped, 1u);
}

TEST(EventRecorderTest, AFullQueueDropsInsteadOfBlocking) {
  FakeApiClient api;
  EventRecorder r(api, options(2));
  for (int i = 0; i < 5; ++i) {
    r.record(referenceTo(claim()), EventType::kNormal, "Bound", std::to_string(i));
  }
  EXPECT_EQ(r.stats().dropped, 3u);
  r.start();
  ASSERT_TRUE(r.flush(5s));
  auto list = events(api, "team");
  ASSERT_EQ(list.size(), 2u);
  std::set<std::string> messages{list[0]["message"], list[1]["message"]};
  EXPECT_EQ(messages, (std::set<std::string>{"0", "1"}));
}

TEST(EventRecorderTest, FailuresAreCountedAndLaterEventsStillGo) {
  FakeApiClient api;
  api.failNext(FakeApiClient::Verb::kCreate,
               ApiError(ApiErrorKind::kForbidden, 403, "Forbidden", "no events for you"));
  EventRecorder r(api, options());
  r.start();
  r.record(referenceTo(claim()), EventType::kNormal, "Bound", "first");
  r.record(referenceTo(claim()), EventType::kNormal, "Bound", "second");
  ASSERT_TRUE(r.flush(5s));
  EXPECT_EQ(r.stats().failed, 1u);
  EXPECT_EQ(r.stats().sent, 1u);
  auto list = events(api, "team");
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["message"], "second");
}

// An event whose namespace is being deleted is refused for good (the API server says so with a
// cause, not just a 403): counted, and no warning, as client-go's recorder does. Any other
// refusal is still a warning.
TEST(EventRecorderTest, AnEventInATerminatingNamespaceFailsWithoutAWarning) {
  std::ostringstream logged;
  log::init(log::Format::kJson, 0, &logged);
  struct Restore {
    ~Restore() { log::init(log::Format::kText, 0); }
  } restore;
  FakeApiClient api;
  api.failNext(
      FakeApiClient::Verb::kCreate,
      ApiError::fromResponse(
          403,
          R"({"kind":"Status","status":"Failure","reason":"Forbidden","code":403,)"
          R"("message":"events is forbidden: namespace team is being terminated",)"
          R"("details":{"kind":"events","causes":[{"reason":"NamespaceTerminating",)"
          R"("message":"namespace team is being terminated","field":"metadata.namespace"}]}})",
          ""));
  EventRecorder r(api, options());
  r.start();
  r.record(referenceTo(claim()), EventType::kNormal, "Bound", "while the namespace goes");
  ASSERT_TRUE(r.flush(5s));
  EXPECT_EQ(r.stats().failed, 1u);
  EXPECT_EQ(logged.str().find("event not recorded"), std::string::npos) << logged.str();

  api.failNext(FakeApiClient::Verb::kCreate,
               ApiError(ApiErrorKind::kForbidden, 403, "Forbidden", "no events for you"));
  r.record(referenceTo(claim()), EventType::kNormal, "Bound", "refused by RBAC");
  ASSERT_TRUE(r.flush(5s));
  EXPECT_EQ(r.stats().failed, 2u);
  EXPECT_NE(logged.str().find("event not recorded"), std::string::npos) << logged.str();
}

TEST(EventRecorderTest, StopDropsWhatIsQueuedAndLaterRecords) {
  FakeApiClient api;
  EventRecorder r(api, options());
  r.record(referenceTo(claim()), EventType::kNormal, "Bound", "queued");
  r.stop();
  r.record(referenceTo(claim()), EventType::kNormal, "Bound", "late");
  r.start();
  EXPECT_TRUE(r.flush(1s));
  EXPECT_EQ(r.stats().dropped, 2u);
  EXPECT_TRUE(events(api, "team").empty());
}

TEST(EventRecorderTest, ClusterScopedObjectsGoToTheDefaultNamespace) {
  FakeApiClient api;
  EventRecorder r(api, options());
  auto e = r.buildEvent({"extendedresource.io/v1alpha1", "ExtendedResource", "", "gpu-0", "u"},
                        EventType::kWarning, "Orphaned", "freed", kAt, "gpu-0.1");
  EXPECT_EQ(e["metadata"]["namespace"], "default");
  EXPECT_FALSE(e["involvedObject"].contains("namespace"));
  EXPECT_EQ(e["metadata"]["name"], "gpu-0.1");
}

}  // namespace
}  // namespace ker

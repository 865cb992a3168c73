// The watch-backed cache against a real kube-apiserver: it must stay exact when the server
// ends watches, and when the server itself restarts (connections cut mid-stream).
#include "common/informer.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>

#include "common/api_error.h"
#include "model/objects.h"
#include "test_env.h"

namespace ker::itest {
namespace {

using nlohmann::json;

class InformerTest : public ApiTest {
 protected:
  void SetUp() override {
    ApiTest::SetUp();
    if (env_ != nullptr) {
      ns_ = createNamespace(*api_, "informer");
    }
  }

  std::set<std::string> serverNames() {
    std::set<std::string> names;
    for (const auto& item : api_->listAll(resources::kExtendedResourceClaims, ns_, {}).items) {
      names.insert(objectKey(ns_, item["metadata"]["name"].get<std::string>()) + "@" +
                   item["metadata"]["resourceVersion"].get<std::string>());
    }
    return names;
  }

  // Cache content as key@resourceVersion, comparable with serverNames().
  static std::set<std::string> cacheNames(const Informer<ExtendedResourceClaim>& inf) {
    std::set<std::string> names;
    for (const auto& c : inf.list()) {
      names.insert(objectKey(c->meta.ns, c->meta.name) + "@" + c->meta.resourceVersion);
    }
    return names;
  }

  void create(const std::string& name) {
    api_->create(resources::kExtendedResourceClaims, ns_, claimObject(ns_, name, "x.io/g", 1));
  }

  std::string ns_;
};

TEST_F(InformerTest, StaysExactThroughWatchEndsAndAnApiServerRestart) {
  for (int i = 0; i < 5; ++i) {
    create("before-" + std::to_string(i));
  }
  // Short server-side watch timeouts: the server ends the stream every second, so resuming
  // from the last resourceVersion is exercised many times.
  Informer<ExtendedResourceClaim> informer(*api_, resources::kExtendedResourceClaims,
                                           {.ns = ns_,
                                            .watchTimeoutSeconds = 1,
                                            .initialBackoff = std::chrono::milliseconds(50),
                                            .maxBackoff = std::chrono::seconds(1)});
  std::mutex mu;
  std::map<std::string, int> adds, deletes;
  informer.addHandlers({
      .onAdd =
          [&](const auto& c) {
            std::lock_guard l(mu);
            adds[c->meta.name]++;
          },
      .onDelete =
          [&](const auto& c) {
            std::lock_guard l(mu);
            deletes[c->meta.name]++;
          },
  });
  informer.start();
  ASSERT_TRUE(informer.waitForSync(30s));
  EXPECT_TRUE(eventually([&] { return cacheNames(informer) == serverNames(); }, 10s));

  // Changes across several server-ended watches.
  for (int i = 0; i < 5; ++i) {
    create("during-" + std::to_string(i));
    std::this_thread::sleep_for(300ms);
  }
  api_->remove(resources::kExtendedResourceClaims, ns_, "before-0");
  EXPECT_TRUE(eventually([&] { return cacheNames(informer) == serverNames(); }, 10s))
      << "after watch ends";

  // The server goes away with the watch open; while it is down nothing can change, and the
  // cache must catch up with what changes right after it returns.
  ASSERT_EQ(env_->launch("restart-apiserver"), 0);
  api_->remove(resources::kExtendedResourceClaims, ns_, "before-1");
  create("after-restart");
  EXPECT_TRUE(eventually([&] { return cacheNames(informer) == serverNames(); }, 30s))
      << "after restart";

  informer.stop();
  std::lock_guard l(mu);
  EXPECT_EQ(deletes["before-0"], 1);
  EXPECT_EQ(deletes["before-1"], 1);
  EXPECT_EQ(adds["after-restart"], 1);
  for (const auto& [name, n] : adds) {
    EXPECT_EQ(n, 1) << name << " added more than once";
  }
  EXPECT_GE(informer.watchRestarts(), 3u);
}

}  // namespace
}  // namespace ker::itest

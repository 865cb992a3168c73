#include "common/informer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/api_error.h"
#include "model/objects.h"
#include "test/unit/eventually.h"
#include "test/unit/fake_api_client.h"

namespace ker {
namespace {

using namespace std::chrono_literals;
using testing::FakeApiClient;
using Verb = FakeApiClient::Verb;

const Resource kWidgets{"test.io", "v1", "widgets", true};
const Resource kGadgets{"test.io", "v1", "gadgets", false};

// A minimal typed view; "poison" data makes decoding fail.
struct Widget {
  std::string ns;
  std::string name;
  std::string rv;
  std::string data;

  static Widget fromJson(const nlohmann::json& j) {
    Widget w{j["metadata"].value("namespace", ""), j["metadata"].value("name", ""),
             j["metadata"].value("resourceVersion", ""), j.value("data", "")};
    if (w.data == "poison") {
      throw std::invalid_argument("poisoned widget");
    }
    return w;
  }
};

nlohmann::json widget(const std::string& ns, const std::string& name, const std::string& data,
                      std::map<std::string, std::string> labels = {}) {
  nlohmann::json j = {{"apiVersion", "test.io/v1"},
                      {"kind", "Widget"},
                      {"metadata", {{"name", name}, {"namespace", ns}}},
                      {"data", data}};
  if (!labels.empty()) {
    j["metadata"]["labels"] = labels;
  }
  return j;
}

using testing::eventually;

// Records handler calls as "add ns/name=data", "update ns/name old->new", "delete ns/name".
class Recorder {
 public:
  Informer<Widget>::Handlers handlers() {
    return {
        .onAdd = [this](const auto& w) { record("add " + key(w) + "=" + w->data); },
        .onUpdate =
            [this](const auto& o, const auto& n) {
              record("update " + key(n) + " " + o->data + "->" + n->data);
            },
        .onDelete = [this](const auto& w) { record("delete " + key(w)); },
    };
  }

  std::vector<std::string> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }
  size_t count() const {
    std::lock_guard lock(mu_);
    return events_.size();
  }
  bool waitFor(size_t n, std::chrono::milliseconds timeout = 5s) const {
    return eventually([&] { return count() >= n; }, timeout);
  }
  void clear() {
    std::lock_guard lock(mu_);
    events_.clear();
  }

 private:
  static std::string key(const Informer<Widget>::Ptr& w) { return objectKey(w->ns, w->name); }
  void record(std::string e) {
    std::lock_guard lock(mu_);
    events_.push_back(std::move(e));
  }

  mutable std::mutex mu_;
  std::vector<std::string> events_;
};

InformerOptions fastOptions() {
  InformerOptions o;
  o.initialBackoff = 5ms;
  o.maxBackoff = 40ms;
  return o;
}

// Records into rec, starts, and waits for the first list and for the watch after it.
bool startWatching(Informer<Widget>& inf, Recorder& rec, FakeApiClient& api) {
  inf.addHandlers(rec.handlers());
  inf.start();
  return inf.waitForSync(5s) && api.waitForWatches(1, 2s);
}

ApiError transportError() {
  return ApiError(ApiErrorKind::kTransport, 0, "", "connection reset");
}

// Makes `change` while the informer is disconnected, then forgets the history, so that the
// informer must list again to see it.
::testing::AssertionResult changeUnwatched(FakeApiClient& api,
                                           const std::function<void()>& change) {
  api.failNext(Verb::kWatch, transportError(), -1);
  api.dropWatches();
  if (!eventually([&] { return api.activeWatches() == 0; })) {
    return ::testing::AssertionFailure() << "the informer kept watching";
  }
  change();
  api.compact();
  api.clearFailures();
  return ::testing::AssertionSuccess();
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(Informer, ListsThenFollowsTheWatch) {
  FakeApiClient api;
  api.seed(kWidgets, widget("ns", "a", "1"));
  api.seed(kWidgets, widget("ns", "b", "1"));
  Informer<Widget> inf(api, kWidgets, fastOptions());
  Recorder rec;
  inf.addHandlers(rec.handlers());
  EXPECT_FALSE(inf.hasSynced());
  inf.start();
  ASSERT_TRUE(inf.waitForSync(5s));
  EXPECT_EQ(inf.size(), 2u);
  EXPECT_EQ(sorted(rec.events()), (std::vector<std::string>{"add ns/a=1", "add ns/b=1"}));
  EXPECT_THROW(inf.addHandlers(rec.handlers()), std::logic_error);

  rec.clear();
  api.create(kWidgets, "ns", widget("ns", "c", "1"));
  auto b = api.get(kWidgets, "ns", "b");
  b["data"] = "2";
  api.update(kWidgets, "ns", b);
  api.remove(kWidgets, "ns", "a");
  ASSERT_TRUE(rec.waitFor(3));
  EXPECT_EQ(rec.events(),
            (std::vector<std::string>{"add ns/c=1", "update ns/b 1->2", "delete ns/a"}));

  EXPECT_EQ(inf.get("ns/a"), nullptr);
  ASSERT_NE(inf.get("ns/b"), nullptr);
  EXPECT_EQ(inf.get("ns/b")->data, "2");
  std::vector<std::string> names;
  for (const auto& w : inf.list()) {
    names.push_back(w->name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(inf.lastResourceVersion(), api.resourceVersion());
  EXPECT_EQ(api.calls(Verb::kList), 1);
  EXPECT_EQ(inf.relists(), 0u);
}

TEST(Informer, CacheIsUpdatedBeforeHandlersRun) {
  FakeApiClient api;
  Informer<Widget> inf(api, kWidgets, fastOptions());
  std::vector<bool> seen;
  std::mutex mu;
  inf.addHandlers({.onAdd =
                       [&](const auto& w) {
                         std::lock_guard lock(mu);
                         seen.push_back(inf.get(objectKey(w->ns, w->name)) == w);
                       },
                   .onDelete =
                       [&](const auto& w) {
                         std::lock_guard lock(mu);
                         seen.push_back(inf.get(objectKey(w->ns, w->name)) == nullptr);
                       }});
  inf.start();
  ASSERT_TRUE(inf.waitForSync(5s));
  api.create(kWidgets, "ns", widget("ns", "a", "1"));
  api.remove(kWidgets, "ns", "a");
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mu);
    return seen.size() == 2;
  }));
  EXPECT_EQ(seen, (std::vector<bool>{true, true}));
}

TEST(Informer, CleanWatchEndResumesFromTheLastResourceVersion) {
  FakeApiClient api;
  Informer<Widget> inf(api, kWidgets, fastOptions());
  Recorder rec;
  inf.addHandlers(rec.handlers());
  inf.start();
  ASSERT_TRUE(inf.waitForSync(5s));
  api.create(kWidgets, "ns", widget("ns", "a", "1"));
  ASSERT_TRUE(rec.waitFor(1));

  for (int i = 2; i <= 4; ++i) {
    const int watches = api.calls(Verb::kWatch);
    api.endWatches();
    // Most likely written before the informer watches again: it must replay it.
    auto a = api.get(kWidgets, "ns", "a");
    a["data"] = std::to_string(i);
    api.update(kWidgets, "ns", a);
    ASSERT_TRUE(
        eventually([&] { return api.calls(Verb::kWatch) > watches && api.activeWatches() == 1; }));
  }
  ASSERT_TRUE(rec.waitFor(4));
  std::this_thread::sleep_for(50ms);  // room for duplicates to show up, if any
  EXPECT_EQ(rec.events(), (std::vector<std::string>{"add ns/a=1", "update ns/a 1->2",
                                                    "update ns/a 2->3", "update ns/a 3->4"}));
  EXPECT_EQ(api.calls(Verb::kList), 1);
  EXPECT_EQ(inf.watchRestarts(), 3u);
}

TEST(Informer, BookmarksAdvanceTheResourceVersion) {
  FakeApiClient api;
  Informer<Widget> inf(api, kWidgets, fastOptions());
  inf.start();
  ASSERT_TRUE(inf.waitForSync(5s));
  ASSERT_TRUE(api.waitForWatches(1, 2s));
  // Writes to another resource move the global resourceVersion without widget events.
  api.create(kGadgets, "", widget("", "g1", "x"));
  api.create(kGadgets, "", widget("", "g2", "x"));
  EXPECT_NE(inf.lastResourceVersion(), api.resourceVersion());
  api.sendBookmark(kWidgets);
  EXPECT_TRUE(eventually([&] { return inf.lastResourceVersion() == api.resourceVersion(); }));
  EXPECT_EQ(inf.size(), 0u);
}

TEST(Informer, DroppedWatchBacksOffAndLosesNothing) {
  FakeApiClient api;
  Informer<Widget> inf(api, kWidgets, fastOptions());
  Recorder rec;
  ASSERT_TRUE(startWatching(inf, rec, api));

  api.failNext(Verb::kWatch, transportError(), 3);
  api.dropWatches();
  api.create(kWidgets, "ns", widget("ns", "a", "1"));
  api.create(kWidgets, "ns", widget("ns", "b", "1"));
  api.remove(kWidgets, "ns", "a");
  ASSERT_TRUE(rec.waitFor(3));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(rec.events(), (std::vector<std::string>{"add ns/a=1", "add ns/b=1", "delete ns/a"}));
  EXPECT_EQ(api.calls(Verb::kList), 1);
  EXPECT_GE(api.calls(Verb::kWatch), 5);  // first, three refused, the one that worked
  EXPECT_GE(inf.watchRestarts(), 4u);
}

// Every watch from the cached resourceVersion fails, as after etcd was restored to an older
// revision: after a few tries the informer lists afresh and catches up.
TEST(Informer, WatchesThatKeepFailingEndInAFreshList) {
  FakeApiClient api;
  Informer<Widget> inf(api, kWidgets, fastOptions());
  Recorder rec;
  ASSERT_TRUE(startWatching(inf, rec, api));

  api.failNext(Verb::kWatch,
               ApiError(ApiErrorKind::kTimeout, 504, "Timeout", "Too large resource version"), 5);
  api.dropWatches();
  api.create(kWidgets, "ns", widget("ns", "a", "1"));
  ASSERT_TRUE(eventually([&] { return inf.relists() == 1 && api.activeWatches() == 1; }));
  EXPECT_EQ(api.calls(Verb::kList), 2);
  ASSERT_TRUE(rec.waitFor(1));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(rec.events(), std::vector<std::string>{"add ns/a=1"}) << "once, however it came";
}

// Records the server-side timeout each watch asks for, then fails it so the next comes soon.
class TimeoutRecordingApi : public FakeApiClient {
 public:
  void watch(const Resource&, const std::string&, const WatchOptions& opts,
             const std::function<bool(const WatchEvent&)>&, const std::atomic<bool>*) override {
    std::lock_guard lock(mu);
    timeouts.push_back(opts.timeoutSeconds);
    throw ApiError(ApiErrorKind::kTransport, 0, "", "connection reset");
  }
  std::mutex mu;
  std::vector<int> timeouts;
};

TEST(Informer, EachWatchAsksForItsOwnTimeoutBetweenOnceAndTwiceTheBase) {
  TimeoutRecordingApi api;
  InformerOptions opts = fastOptions();
  opts.maxBackoff = 5ms;
  Informer<Widget> inf(api, kWidgets, opts);
  inf.start();
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(api.mu);
    return api.timeouts.size() >= 10;
  }));
  inf.stop();
  std::lock_guard lock(api.mu);
  for (int t : api.timeouts) {
    EXPECT_GE(t, 300);
    EXPECT_LT(t, 600);
  }
  EXPECT_NE(std::set<int>(api.timeouts.begin(), api.timeouts.end()).size(), 1u);
}

TEST(Informer, GoneRelistsAndReconcilesWithoutLostOrDuplicateEvents) {
  FakeApiClient api;
  api.seed(kWidgets, widget("ns", "a", "1"));
  api.seed(kWidgets, widget("ns", "b", "1"));
  api.seed(kWidgets, widget("ns", "c", "1"));
  api.seed(kWidgets, widget("ns", "f", "1"));
  Informer<Widget> inf(api, kWidgets, fastOptions());
  Recorder rec;
  ASSERT_TRUE(startWatching(inf, rec, api));
  const auto cachedC = inf.get("ns/c");
  rec.clear();

  // Disconnect the informer, change things behind its back, then forget the history.
  api.failNext(Verb::kWatch, transportError(), -1);
  api.dropWatches();
  ASSERT_TRUE(eventually([&] { return api.activeWatches() == 0; }));
  api.remove(kWidgets, "ns", "a");
  auto b = api.get(kWidgets, "ns", "b");
  b["data"] = "2";
  api.update(kWidgets, "ns", b);
  api.create(kWidgets, "ns", widget("ns", "d", "1"));
  api.create(kWidgets, "ns", widget("ns", "e", "1"));
  api.remove(kWidgets, "ns", "e");  // created and deleted unseen: no event at all
  // Deleted and created again under its name: a delete and an add, not an update.
  api.remove(kWidgets, "ns", "f");
  api.create(kWidgets, "ns", widget("ns", "f", "2"));
  api.compact();
  api.clearFailures();

  ASSERT_TRUE(eventually([&] { return inf.relists() == 1; }));
  ASSERT_TRUE(rec.waitFor(5));
  std::this_thread::sleep_for(50ms);
  const auto events = rec.events();
  EXPECT_EQ(sorted(events), (std::vector<std::string>{"add ns/d=1", "add ns/f=2", "delete ns/a",
                                                      "delete ns/f", "update ns/b 1->2"}));
  EXPECT_LT(std::find(events.begin(), events.end(), "delete ns/f"),
            std::find(events.begin(), events.end(), "add ns/f=2"));
  EXPECT_EQ(inf.get("ns/c"), cachedC) << "unchanged objects keep their cached instance";
  EXPECT_EQ(api.calls(Verb::kList), 2);

  // The watch resumes from the relist's resourceVersion.
  rec.clear();
  api.remove(kWidgets, "ns", "c");
  ASSERT_TRUE(rec.waitFor(1));
  EXPECT_EQ(rec.events(), (std::vector<std::string>{"delete ns/c"}));
  EXPECT_EQ(inf.size(), 3u);
}

TEST(Informer, ExpiredWatchRelistsQuietlyWhenNothingChanged) {
  FakeApiClient api;
  api.seed(kWidgets, widget("ns", "a", "1"));
  Informer<Widget> inf(api, kWidgets, fastOptions());
  Recorder rec;
  ASSERT_TRUE(startWatching(inf, rec, api));
  api.expireWatches();
  ASSERT_TRUE(eventually([&] { return inf.relists() == 1; }));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(rec.events(), (std::vector<std::string>{"add ns/a=1"}));
}

TEST(Informer, PersistentGoneRelistsWithBackoff) {
  FakeApiClient api;
  api.failNext(Verb::kWatch, ApiError(ApiErrorKind::kGone, 410, "Expired", "too old"), -1);
  Informer<Widget> inf(api, kWidgets, fastOptions());
  inf.start();
  ASSERT_TRUE(inf.waitForSync(5s));
  std::this_thread::sleep_for(300ms);
  inf.stop();
  // Capped at 40 ms, each wait at least 20 ms: about 15 lists, never a tight loop.
  EXPECT_GT(api.calls(Verb::kList), 3);
  EXPECT_LT(api.calls(Verb::kList), 40);
}

TEST(Informer, ErrorEventsRetryOrRelist) {
  FakeApiClient api;
  Informer<Widget> inf(api, kWidgets, fastOptions());
  inf.start();
  ASSERT_TRUE(inf.waitForSync(5s));
  ASSERT_TRUE(api.waitForWatches(1, 2s));

  api.sendWatchEvent(kWidgets, {WatchEventType::kError, {{"code", 500}, {"message", "boom"}}});
  ASSERT_TRUE(eventually([&] { return inf.watchRestarts() == 1 && api.activeWatches() == 1; }));
  EXPECT_EQ(inf.relists(), 0u);

  api.sendWatchEvent(kWidgets, {WatchEventType::kError, {{"code", 410}, {"message", "gone"}}});
  EXPECT_TRUE(eventually([&] { return inf.relists() == 1; }));
}

// A watch that delivered events and then broke (a server restart, a proxy's cut) is not a
// failing server: however often that happens, the informer neither backs off further nor
// lists everything again.
TEST(Informer, WatchesThatBreakAfterEventsAreNotFailures) {
  FakeApiClient api;
  Informer<Widget> inf(api, kWidgets, fastOptions());
  Recorder rec;
  ASSERT_TRUE(startWatching(inf, rec, api));
  for (int i = 0; i < 8; ++i) {
    const std::string name = "w" + std::to_string(i);
    api.create(kWidgets, "ns", widget("ns", name, "1"));
    ASSERT_TRUE(rec.waitFor(static_cast<size_t>(i + 1))) << name;
    api.sendWatchEvent(kWidgets, {WatchEventType::kError, {{"code", 500}, {"message", "reset"}}});
    ASSERT_TRUE(eventually([&] {
      return inf.watchRestarts() == static_cast<uint64_t>(i + 1) && api.activeWatches() == 1;
    }));
  }
  EXPECT_EQ(inf.relists(), 0u);
  EXPECT_EQ(api.calls(Verb::kList), 1);
}

// An object the relist cannot decode still exists: it keeps its cached version rather than
// being reported deleted (a holder pod taken for deleted has its devices freed).
TEST(Informer, ARelistKeepsTheCachedVersionOfAnObjectItCannotDecode) {
  FakeApiClient api;
  api.seed(kWidgets, widget("ns", "a", "1"));
  Informer<Widget> inf(api, kWidgets, fastOptions());
  Recorder rec;
  ASSERT_TRUE(startWatching(inf, rec, api));
  rec.clear();
  ASSERT_TRUE(changeUnwatched(api, [&] {
    auto a = api.get(kWidgets, "ns", "a");
    a["data"] = "poison";
    api.update(kWidgets, "ns", a);
  }));
  ASSERT_TRUE(eventually([&] { return inf.relists() == 1; }));
  std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(rec.events().empty()) << rec.events().front();
  ASSERT_TRUE(inf.get("ns/a"));
  EXPECT_EQ(inf.get("ns/a")->data, "1");

  // Deleted and created again under its name, undecodable: the one cached was deleted.
  ASSERT_TRUE(changeUnwatched(api, [&] {
    api.remove(kWidgets, "ns", "a");
    api.create(kWidgets, "ns", widget("ns", "a", "poison"));
  }));
  ASSERT_TRUE(eventually([&] { return inf.relists() == 2; }));
  EXPECT_TRUE(rec.waitFor(1));
  EXPECT_EQ(rec.events(), std::vector<std::string>{"delete ns/a"});
  EXPECT_FALSE(inf.get("ns/a"));
}

TEST(Informer, ResyncFiresUpdateForEveryCachedObject) {
  FakeApiClient api;
  api.seed(kWidgets, widget("ns", "a", "1"));
  api.seed(kWidgets, widget("ns", "b", "1"));
  InformerOptions opts = fastOptions();
  opts.resyncPeriod = 30ms;
  Informer<Widget> inf(api, kWidgets, opts);
  std::mutex mu;
  std::map<std::string, int> resyncs;
  inf.addHandlers({.onUpdate = [&](const auto& o, const auto& n) {
    if (o == n) {
      std::lock_guard lock(mu);
      ++resyncs[n->name];
    }
  }});
  inf.start();
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mu);
    return resyncs["a"] >= 2 && resyncs["b"] >= 2;
  }));
}

TEST(Informer, HandlerExceptionsAreContained) {
  FakeApiClient api;
  Informer<Widget> inf(api, kWidgets, fastOptions());
  Recorder rec;
  inf.addHandlers({.onAdd = [](const auto&) { throw std::runtime_error("handler bug"); },
                   .onDelete = [](const auto&) { throw 7; }});
  inf.addHandlers(rec.handlers());
  inf.start();
  ASSERT_TRUE(inf.waitForSync(5s));
  api.create(kWidgets, "ns", widget("ns", "a", "1"));
  api.remove(kWidgets, "ns", "a");
  api.create(kWidgets, "ns", widget("ns", "b", "1"));
  ASSERT_TRUE(rec.waitFor(3));
  EXPECT_EQ(rec.events(), (std::vector<std::string>{"add ns/a=1", "delete ns/a", "add ns/b=1"}));
}

TEST(Informer, UndecodableObjectsAreSkipped) {
  FakeApiClient api;
  api.seed(kWidgets, widget("ns", "bad", "poison"));
  api.seed(kWidgets, widget("ns", "good", "1"));
  Informer<Widget> inf(api, kWidgets, fastOptions());
  Recorder rec;
  inf.addHandlers(rec.handlers());
  inf.start();
  ASSERT_TRUE(inf.waitForSync(5s));
  EXPECT_EQ(inf.size(), 1u);
  api.create(kWidgets, "ns", widget("ns", "worse", "poison"));
  api.create(kWidgets, "ns", widget("ns", "fine", "1"));
  ASSERT_TRUE(rec.waitFor(2));
  EXPECT_EQ(rec.events(), (std::vector<std::string>{"add ns/good=1", "add ns/fine=1"}));
  EXPECT_EQ(inf.lastResourceVersion(), api.resourceVersion());
}

TEST(Informer, ListFailuresAreRetried) {
  FakeApiClient api;
  api.seed(kWidgets, widget("ns", "a", "1"));
  api.failNext(Verb::kList, ApiError(ApiErrorKind::kServerError, 500, "", "etcd down"), 3);
  Informer<Widget> inf(api, kWidgets, fastOptions());
  inf.start();
  ASSERT_TRUE(inf.waitForSync(5s));
  EXPECT_EQ(api.calls(Verb::kList), 4);
  EXPECT_EQ(inf.size(), 1u);
  EXPECT_EQ(inf.relists(), 0u);
}

TEST(Informer, WaitForSyncTimesOutAndStopIsPrompt) {
  FakeApiClient api;
  api.failNext(Verb::kList, ApiError(ApiErrorKind::kForbidden, 403, "Forbidden", "no"), -1);
  InformerOptions opts = fastOptions();
  opts.initialBackoff = 10s;  // stop() must cut a long backoff short
  opts.maxBackoff = 10s;
  Informer<Widget> inf(api, kWidgets, opts);
  inf.start();
  EXPECT_FALSE(inf.waitForSync(100ms));
  const auto start = std::chrono::steady_clock::now();
  inf.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_FALSE(inf.waitForSync(10ms));
}

TEST(Informer, StopIsPromptWhileWatching) {
  FakeApiClient api;
  Informer<Widget> inf(api, kWidgets, fastOptions());
  inf.start();
  ASSERT_TRUE(inf.waitForSync(5s));
  ASSERT_TRUE(api.waitForWatches(1, 2s));
  const auto start = std::chrono::steady_clock::now();
  inf.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_EQ(api.activeWatches(), 0);
  inf.stop();  // idempotent
}

TEST(Informer, StopFromAHandlerOnlySignals) {
  FakeApiClient api;
  api.seed(kWidgets, widget("ns", "a", "1"));
  InformerOptions opts = fastOptions();
  opts.resyncPeriod = 1ms;  // keep the resync thread contending for the dispatch lock
  auto inf = std::make_unique<Informer<Widget>>(api, kWidgets, opts);
  Informer<Widget>* raw = inf.get();  // the handler must not read `inf` while it is reset
  std::atomic<int> stops{0};
  inf->addHandlers({.onUpdate = [&stops, raw](const auto&, const auto&) {
    ++stops;
    raw->stop();
  }});
  inf->start();
  ASSERT_TRUE(eventually([&] { return stops > 0; }));
  const auto start = std::chrono::steady_clock::now();
  inf.reset();  // the destructor joins
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_EQ(api.activeWatches(), 0);
}

TEST(Informer, NamespaceAndSelectorsScopeTheCache) {
  FakeApiClient api;
  api.seed(kWidgets, widget("ns1", "a", "1", {{"app", "x"}}));
  api.seed(kWidgets, widget("ns1", "b", "1", {{"app", "y"}}));
  api.seed(kWidgets, widget("ns2", "c", "1", {{"app", "x"}}));
  InformerOptions opts = fastOptions();
  opts.ns = "ns1";
  opts.labelSelector = "app=x";
  Informer<Widget> inf(api, kWidgets, opts);
  Recorder rec;
  inf.addHandlers(rec.handlers());
  inf.start();
  ASSERT_TRUE(inf.waitForSync(5s));
  EXPECT_EQ(rec.events(), (std::vector<std::string>{"add ns1/a=1"}));

  rec.clear();
  auto a = api.get(kWidgets, "ns1", "a");
  a["metadata"]["labels"]["app"] = "z";  // leaves the selector: seen as a delete
  api.update(kWidgets, "ns1", a);
  auto b = api.get(kWidgets, "ns1", "b");
  b["metadata"]["labels"]["app"] = "x";  // enters it: seen as an add
  api.update(kWidgets, "ns1", b);
  api.create(kWidgets, "ns2", widget("ns2", "d", "1", {{"app", "x"}}));
  ASSERT_TRUE(rec.waitFor(2));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(rec.events(), (std::vector<std::string>{"delete ns1/a", "add ns1/b=1"}));
}

TEST(Informer, ListsInPages) {
  FakeApiClient api;
  for (int i = 0; i < 7; ++i) {
    api.seed(kGadgets, widget("", "g" + std::to_string(i), "1"));
  }
  InformerOptions opts = fastOptions();
  opts.pageSize = 3;
  Informer<Widget> inf(api, kGadgets, opts);
  inf.start();
  ASSERT_TRUE(inf.waitForSync(5s));
  EXPECT_EQ(inf.size(), 7u);
  EXPECT_EQ(api.calls(Verb::kList), 3);
  ASSERT_NE(inf.get("g4"), nullptr) << "cluster-scoped keys are bare names";
}

// ---- The fake itself: the semantics other tests rely on.

TEST(FakeApiClient, OptimisticConcurrency) {
  FakeApiClient api;
  auto created = api.create(kWidgets, "ns", widget("ns", "a", "1"));
  EXPECT_FALSE(created["metadata"].value("uid", "").empty());
  EXPECT_EQ(created["metadata"]["resourceVersion"], api.resourceVersion());
  try {
    api.create(kWidgets, "ns", widget("ns", "a", "1"));
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_TRUE(e.isAlreadyExists());
  }
  auto stale = created;
  created["data"] = "2";
  auto updated = api.update(kWidgets, "ns", created);
  EXPECT_NE(updated["metadata"]["resourceVersion"], stale["metadata"]["resourceVersion"]);
  stale["data"] = "3";
  try {
    api.update(kWidgets, "ns", stale);
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_TRUE(e.isConflict());
  }
  try {
    api.get(kWidgets, "ns", "missing");
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_TRUE(e.isNotFound());
  }
  // A write that changes nothing keeps the resourceVersion.
  const std::string rv = api.resourceVersion();
  EXPECT_EQ(api.update(kWidgets, "ns", updated)["metadata"]["resourceVersion"], rv);
  EXPECT_EQ(api.resourceVersion(), rv);
}

TEST(FakeApiClient, StatusIsASeparateSubresource) {
  FakeApiClient api;
  auto obj = api.create(kWidgets, "ns", widget("ns", "a", "1"));
  obj["status"] = {{"phase", "Bound"}};
  obj = api.update(kWidgets, "ns", obj);
  EXPECT_FALSE(obj.contains("status"));
  obj["status"] = {{"phase", "Bound"}};
  obj["data"] = "ignored";
  obj = api.updateStatus(kWidgets, "ns", obj);
  EXPECT_EQ(obj["status"]["phase"], "Bound");
  EXPECT_EQ(obj["data"], "1");
  obj = api.patch(kWidgets, "ns", "a", PatchType::kMerge, {{"status", {{"phase", "Lost"}}}},
                  "status");
  EXPECT_EQ(obj["status"]["phase"], "Lost");
  obj = api.patch(kWidgets, "ns", "a", PatchType::kMerge,
                  {{"data", "2"}, {"metadata", {{"labels", {{"k", "v"}}}}}});
  EXPECT_EQ(obj["data"], "2");
  EXPECT_EQ(obj["metadata"]["labels"]["k"], "v");
  EXPECT_EQ(obj["status"]["phase"], "Lost");
  EXPECT_THROW(api.patch(kWidgets, "ns", "a", PatchType::kMerge,
                         {{"metadata", {{"resourceVersion", "1"}}}, {"data", "3"}}),
               ApiError);
}

TEST(FakeApiClient, FinalizersDelayDeletion) {
  FakeApiClient api;
  auto obj = widget("ns", "a", "1");
  obj["metadata"]["finalizers"] = {"test.io/cleanup"};
  api.create(kWidgets, "ns", obj);
  api.remove(kWidgets, "ns", "a");
  auto deleting = api.get(kWidgets, "ns", "a");
  EXPECT_TRUE(deleting["metadata"].contains("deletionTimestamp"));
  deleting["metadata"]["finalizers"] = nlohmann::json::array();
  api.update(kWidgets, "ns", deleting);
  EXPECT_FALSE(api.peek(kWidgets, "ns", "a"));
}

TEST(FakeApiClient, BindPodRecordsAndGuards) {
  FakeApiClient api;
  nlohmann::json pod = {{"metadata", {{"name", "p"}, {"namespace", "ns"}}}, {"spec", {}}};
  const std::string uid = api.create(resources::kPods, "ns", pod)["metadata"]["uid"];
  EXPECT_THROW(api.bindPod("ns", "p", "wrong-uid", "n1"), ApiError);
  api.bindPod("ns", "p", uid, "n1", {{"a", "b"}});
  auto bound = api.get(resources::kPods, "ns", "p");
  EXPECT_EQ(bound["spec"]["nodeName"], "n1");
  EXPECT_EQ(bound["metadata"]["annotations"]["a"], "b");
  try {
    api.bindPod("ns", "p", uid, "n2");
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_TRUE(e.isConflict());
  }
  ASSERT_EQ(api.bindings().size(), 1u);
  EXPECT_EQ(api.bindings()[0].node, "n1");
}

TEST(FakeApiClient, InjectedFailuresAndCompaction) {
  FakeApiClient api;
  api.failNext(Verb::kGet, ApiError(ApiErrorKind::kTimeout, 0, "", "slow"), 2);
  api.create(kWidgets, "ns", widget("ns", "a", "1"));
  EXPECT_THROW(api.get(kWidgets, "ns", "a"), ApiError);
  EXPECT_THROW(api.get(kWidgets, "ns", "a"), ApiError);
  EXPECT_NO_THROW(api.get(kWidgets, "ns", "a"));
  EXPECT_EQ(api.calls(Verb::kGet), 3);

  const std::string old = api.resourceVersion();
  api.create(kWidgets, "ns", widget("ns", "b", "1"));
  api.compact();
  WatchOptions wo;
  wo.resourceVersion = old;
  try {
    api.watch(
        kWidgets, "", wo, [](const WatchEvent&) { return true; }, nullptr);
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_TRUE(e.isGone());
  }
}

TEST(FakeApiClient, FieldSelectorsAndPagination) {
  FakeApiClient api;
  for (const char* n : {"a", "b", "c"}) {
    api.create(kWidgets, "ns", widget("ns", n, n == std::string("b") ? "x" : "y"));
  }
  ListOptions lo;
  lo.fieldSelector = "data=y";
  auto all = api.listAll(kWidgets, "ns", lo, 1);
  ASSERT_EQ(all.items.size(), 2u);
  EXPECT_EQ(all.items[1]["metadata"]["name"], "c");
  lo.fieldSelector = "metadata.name!=a,data!=x";
  EXPECT_EQ(api.listAll(kWidgets, "", lo).items.size(), 1u);
}

}  // namespace
}  // namespace ker

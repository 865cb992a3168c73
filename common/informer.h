#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/api_client.h"
#include "common/resource.h"

namespace ker {

struct InformerOptions {
  // Members default-initialized explicitly so designated initializers may omit them.
  std::string name = {};  // for logs; defaults to the resource's plural
  std::string ns = {};    // "" = all namespaces
  std::string labelSelector = {};
  std::string fieldSelector = {};
  // Every period, onUpdate(obj, obj) fires for each cached object so controllers re-check
  // state they may have missed or failed to act on. 0 = off.
  std::chrono::milliseconds resyncPeriod{0};
  int64_t pageSize = 500;
  // Each watch asks the server to end it after a time drawn from [this, twice this), as
  // client-go does, so informers started together do not all reconnect at once.
  int watchTimeoutSeconds = 300;
  // Delay before retrying a failed list or watch: doubles per consecutive failure up to the
  // cap, each wait drawn at random from its upper half.
  std::chrono::milliseconds initialBackoff{200};
  std::chrono::milliseconds maxBackoff{std::chrono::seconds(30)};
};

// The type-erased engine behind Informer<T>: list, then watch from the list's
// resourceVersion, keeping a cache keyed by objectKey(namespace, name) and calling handlers
// on the informer's thread. A clean end of the watch resumes from the last resourceVersion
// seen (bookmarks included); an error resumes after a backoff; 410 Gone relists and
// reconciles the cache against the list, firing onDelete for objects that vanished meanwhile,
// onAdd for new ones, onUpdate for those whose resourceVersion changed, and onDelete then
// onAdd for one deleted and created again under the same name (its UID changed). The cache is
// updated before handlers run. Handler calls are serialized (watch and resync never
// overlap); exceptions from handlers are logged and swallowed.
class InformerCore {
 public:
  using Object = std::shared_ptr<const void>;
  using Decode = std::function<Object(const nlohmann::json&)>;
  struct Handlers {
    std::function<void(const Object&)> onAdd = {};
    std::function<void(const Object& oldObj, const Object& newObj)> onUpdate = {};
    std::function<void(const Object&)> onDelete = {};  // the last state seen
  };

  InformerCore(ApiClient& client, Resource res, InformerOptions opts, Decode decode);
  ~InformerCore();
  InformerCore(const InformerCore&) = delete;
  InformerCore& operator=(const InformerCore&) = delete;

  // Before start() only (std::logic_error otherwise).
  void addHandlers(Handlers handlers);
  void start();
  // Returns once the threads have exited: within the client's watch stop latency. Called
  // from a handler it only signals; the destructor then joins.
  void stop();

  // True once the first complete list has been applied (and its handlers have run).
  bool hasSynced() const { return synced_.load(); }
  bool waitForSync(std::chrono::milliseconds timeout) const;

  Object get(const std::string& key) const;
  std::vector<Object> list() const;  // ordered by key
  size_t size() const;

  // Successful lists after the initial one (each follows a 410 Gone), and watch streams that
  // ended and were re-established, for metrics.
  uint64_t relists() const { return relists_.load(); }
  uint64_t watchRestarts() const { return watchRestarts_.load(); }
  std::string lastResourceVersion() const;

 private:
  struct Item {
    Object obj;
    std::string resourceVersion;
    std::string uid;
  };
  enum class WatchEnd { kClean, kError, kGone };

  void run();
  void resyncLoop();
  void relist();
  WatchEnd watchOnce(bool& sawEvents, int timeoutSeconds);
  bool onEvent(const WatchEvent& ev, WatchEnd& end, bool& sawEvents);
  void apply(const nlohmann::json& obj, bool deleted);
  // nullptr (logged) when the typed view cannot be built.
  Object decode(const nlohmann::json& obj) const;
  // Waits up to d unless stopped; returns false when stopped.
  bool sleep(std::chrono::milliseconds d);
  void setLastResourceVersion(const std::string& rv);

  void fireAdd(const Object& obj);
  void fireUpdate(const Object& oldObj, const Object& newObj);
  void fireDelete(const Object& obj);

  ApiClient& client_;
  const Resource res_;
  const InformerOptions opts_;
  const Decode decode_;
  std::vector<Handlers> handlers_;

  mutable std::mutex storeMu_;
  std::map<std::string, Item> store_;
  std::string lastRv_;  // guarded by storeMu_

  std::mutex dispatchMu_;  // held while the cache changes and its handlers run

  mutable std::mutex waitMu_;
  mutable std::condition_variable waitCv_;  // stop, sync and sleeps
  std::atomic<bool> stop_{false};
  std::atomic<bool> synced_{false};
  bool started_ = false;
  std::thread thread_;
  std::thread resyncThread_;

  std::atomic<uint64_t> relists_{0};
  std::atomic<uint64_t> watchRestarts_{0};
};

// A watch-backed cache of T, where T has `static T fromJson(const nlohmann::json&)`.
//
//   Informer<Pod> pods(client, resources::kPods, {.resyncPeriod = std::chrono::minutes(10)});
//   pods.addHandlers({.onAdd = [&](const auto& p) { queue.add(p->meta.ns + "/" + ...); }});
//   pods.start();
//   pods.waitForSync(std::chrono::seconds(30));
template <class T>
class Informer {
 public:
  using Ptr = std::shared_ptr<const T>;
  struct Handlers {
    // Any may be left empty; `= {}` lets designated initializers omit them.
    std::function<void(const Ptr&)> onAdd = {};
    std::function<void(const Ptr& oldObj, const Ptr& newObj)> onUpdate = {};
    std::function<void(const Ptr&)> onDelete = {};
  };

  Informer(ApiClient& client, Resource res, InformerOptions opts = {})
      : core_(client, std::move(res), std::move(opts),
              [](const nlohmann::json& j) -> InformerCore::Object {
                return std::make_shared<const T>(T::fromJson(j));
              }) {}

  void addHandlers(Handlers h) {
    InformerCore::Handlers erased;
    if (h.onAdd) {
      erased.onAdd = [f = std::move(h.onAdd)](const InformerCore::Object& o) { f(cast(o)); };
    }
    if (h.onUpdate) {
      erased.onUpdate = [f = std::move(h.onUpdate)](const InformerCore::Object& a,
                                                    const InformerCore::Object& b) {
        f(cast(a), cast(b));
      };
    }
    if (h.onDelete) {
      erased.onDelete = [f = std::move(h.onDelete)](const InformerCore::Object& o) { f(cast(o)); };
    }
    core_.addHandlers(std::move(erased));
  }

  void start() { core_.start(); }
  void stop() { core_.stop(); }
  bool hasSynced() const { return core_.hasSynced(); }
  bool waitForSync(std::chrono::milliseconds timeout) const { return core_.waitForSync(timeout); }

  // key = objectKey(namespace, name); nullptr when absent.
  Ptr get(const std::string& key) const { return cast(core_.get(key)); }
  std::vector<Ptr> list() const {
    std::vector<Ptr> out;
    for (const auto& o : core_.list()) {
      out.push_back(cast(o));
    }
    return out;
  }
  size_t size() const { return core_.size(); }

  uint64_t relists() const { return core_.relists(); }
  uint64_t watchRestarts() const { return core_.watchRestarts(); }
  std::string lastResourceVersion() const { return core_.lastResourceVersion(); }

 private:
  static Ptr cast(const InformerCore::Object& o) { return std::static_pointer_cast<const T>(o); }

  InformerCore core_;
};

}  // namespace ker

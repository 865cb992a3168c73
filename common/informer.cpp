#include "common/informer.h"

#include <algorithm>
#include <random>
#include <stdexcept>
#include <utility>

#include "common/api_error.h"
#include "common/backoff.h"
#include "common/kube_objects.h"
#include "common/logging.h"

namespace ker {

namespace {

// A watch that ends this quickly without delivering anything counts as a failure, so a server
// that keeps closing watches at once is not hammered.
constexpr auto kMinHealthyWatch = std::chrono::seconds(1);
// Watches failing this many times in a row from the same resourceVersion may never succeed
// from it (etcd restored to an older revision answers every one "too large"): list afresh,
// as client-go's reflector does after a failed watch. Not sooner: a list is a full read.
constexpr int kRelistAfterWatchFailures = 5;

std::string metaString(const nlohmann::json& obj, const char* field) {
  auto meta = obj.find("metadata");
  if (meta == obj.end() || !meta->is_object()) {
    return {};
  }
  auto it = meta->find(field);
  return it != meta->end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The informer whose thread this is, so stop() can tell it is called from a handler.
thread_local const InformerCore* tRunning = nullptr;

std::string keyOf(const nlohmann::json& obj) {
  return objectKey(metaString(obj, "namespace"), metaString(obj, "name"));
}

}  // namespace

InformerCore::InformerCore(ApiClient& client, Resource res, InformerOptions opts, Decode decode)
    : client_(client),
      res_(std::move(res)),
      opts_([&] {
        if (opts.name.empty()) {
          opts.name = res_.plural;
        }
        return std::move(opts);
      }()),
      decode_(std::move(decode)) {}

InformerCore::~InformerCore() {
  stop();
  if (thread_.joinable()) {
    thread_.join();
  }
  if (resyncThread_.joinable()) {
    resyncThread_.join();
  }
}

void InformerCore::addHandlers(Handlers handlers) {
  if (started_) {
    throw std::logic_error("informer " + opts_.name + ": handlers must be added before start()");
  }
  handlers_.push_back(std::move(handlers));
}

void InformerCore::start() {
  if (started_) {
    throw std::logic_error("informer " + opts_.name + " already started");
  }
  started_ = true;
  thread_ = std::thread([this] {
    tRunning = this;
    run();
  });
  if (opts_.resyncPeriod.count() > 0) {
    resyncThread_ = std::thread([this] {
      tRunning = this;
      resyncLoop();
    });
  }
}

void InformerCore::stop() {
  {
    std::lock_guard lock(waitMu_);
    stop_ = true;
  }
  waitCv_.notify_all();
  // From a handler (on one of our threads), joining would deadlock: the other thread may be
  // waiting for the dispatch lock this one holds. The destructor joins instead.
  if (tRunning == this) {
    return;
  }
  for (std::thread* t : {&thread_, &resyncThread_}) {
    if (t->joinable()) {
      t->join();
    }
  }
}

bool InformerCore::waitForSync(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(waitMu_);
  waitCv_.wait_for(lock, timeout, [&] { return synced_.load() || stop_.load(); });
  return synced_.load();
}

InformerCore::Object InformerCore::get(const std::string& key) const {
  std::lock_guard lock(storeMu_);
  auto it = store_.find(key);
  return it == store_.end() ? nullptr : it->second.obj;
}

std::vector<InformerCore::Object> InformerCore::list() const {
  std::lock_guard lock(storeMu_);
  std::vector<Object> out;
  out.reserve(store_.size());
  for (const auto& [key, item] : store_) {
    out.push_back(item.obj);
  }
  return out;
}

size_t InformerCore::size() const {
  std::lock_guard lock(storeMu_);
  return store_.size();
}

std::string InformerCore::lastResourceVersion() const {
  std::lock_guard lock(storeMu_);
  return lastRv_;
}

void InformerCore::setLastResourceVersion(const std::string& rv) {
  if (rv.empty()) {
    return;
  }
  std::lock_guard lock(storeMu_);
  lastRv_ = rv;
}

bool InformerCore::sleep(std::chrono::milliseconds d) {
  std::unique_lock lock(waitMu_);
  return !waitCv_.wait_for(lock, d, [&] { return stop_.load(); });
}

void InformerCore::run() {
  std::mt19937_64 rng(std::random_device{}());  // spreads the watches' timeouts
  const Backoff retries{opts_.initialBackoff, 2.0, opts_.maxBackoff, 0.5};
  int failures = 0;
  auto backoff = [&] {
    return std::max(
        std::chrono::milliseconds(1),
        std::chrono::duration_cast<std::chrono::milliseconds>(retries.next(failures++)));
  };

  bool needList = true;
  int watchFailures = 0;  // in a row, since the last list or healthy watch
  bool listedOnce = false;
  bool freshList = false;  // the next watch starts from a list just made
  while (!stop_) {
    if (needList) {
      try {
        relist();
      } catch (const std::exception& e) {
        log::warn("informer list failed", {{"informer", opts_.name}, {"error", e.what()}});
        sleep(backoff());
        continue;
      }
      relists_ += listedOnce ? 1 : 0;
      listedOnce = true;
      needList = false;
      freshList = true;
      watchFailures = 0;
    }

    const auto started = std::chrono::steady_clock::now();
    bool sawEvents = false;
    const bool fromFreshList = std::exchange(freshList, false);
    WatchEnd end = WatchEnd::kClean;
    try {
      const int base = std::max(1, opts_.watchTimeoutSeconds);
      end = watchOnce(sawEvents, std::uniform_int_distribution<int>(base, 2 * base - 1)(rng));
    } catch (const ApiError& e) {
      end = e.isGone() ? WatchEnd::kGone : WatchEnd::kError;
      if (!stop_ && !e.isGone()) {
        log::warn("informer watch failed", {{"informer", opts_.name}, {"error", e.what()}});
      }
    } catch (const std::exception& e) {
      end = WatchEnd::kError;
      if (!stop_) {
        log::warn("informer watch failed", {{"informer", opts_.name}, {"error", e.what()}});
      }
    }
    if (stop_) {
      break;
    }
    ++watchRestarts_;
    if (end == WatchEnd::kGone) {
      if (log::v(2)) {
        log::info("informer resourceVersion expired, relisting", {{"informer", opts_.name}});
      }
      needList = true;
      // Expired straight after a list: the server is not keeping up; do not relist in a loop.
      if (fromFreshList && !sawEvents) {
        sleep(backoff());
      }
    } else if (sawEvents || (end == WatchEnd::kClean &&
                             std::chrono::steady_clock::now() - started >= kMinHealthyWatch)) {
      // Healthy, however it ended: a reset after minutes of events is how a server restart or
      // a proxy's cut looks, not a failing server. Only a healthy watch proves the server well
      // again.
      failures = 0;
      watchFailures = 0;
      if (end == WatchEnd::kError) {
        sleep(backoff());
      }
    } else {
      needList = ++watchFailures >= kRelistAfterWatchFailures;
      sleep(backoff());
    }
  }
}

InformerCore::Object InformerCore::decode(const nlohmann::json& obj) const {
  std::string error;
  try {
    return decode_(obj);
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown exception";
  }
  log::error("informer cannot decode object",
             {{"informer", opts_.name}, {"key", keyOf(obj)}, {"error", error}});
  return nullptr;
}

void InformerCore::relist() {
  ListOptions lo;
  lo.labelSelector = opts_.labelSelector;
  lo.fieldSelector = opts_.fieldSelector;
  // Decoded page by page: the typed objects are a fraction of the documents' size.
  std::map<std::string, Item> fresh;
  std::map<std::string, std::string> undecodable;  // key -> uid
  const std::string listRv = client_.listEach(
      res_, opts_.ns, lo, opts_.pageSize,
      [&](nlohmann::json& obj) {
        if (Object decoded = decode(obj)) {
          fresh[keyOf(obj)] =
              Item{std::move(decoded), metaString(obj, "resourceVersion"), metaString(obj, "uid")};
        } else {
          undecodable[keyOf(obj)] = metaString(obj, "uid");
        }
      },
      [&] {
        fresh.clear();
        undecodable.clear();
      });

  std::lock_guard dispatch(dispatchMu_);
  std::map<std::string, Item> old;
  {
    std::lock_guard lock(storeMu_);
    // Unchanged objects keep their cached instance, so pointers handed out stay current.
    for (auto& [key, item] : fresh) {
      auto it = store_.find(key);
      if (it != store_.end() && it->second.resourceVersion == item.resourceVersion) {
        item.obj = it->second.obj;
      }
    }
    // An object that exists but cannot be decoded keeps the version cached before, as a watch
    // event it cannot decode does: "not understood" must never read as "deleted" (a holder pod
    // taken for gone has its devices freed). Not under another UID: that one was deleted.
    for (const auto& [key, uid] : undecodable) {
      if (auto it = store_.find(key); it != store_.end() && it->second.uid == uid) {
        fresh.insert(*it);
      }
    }
    old.swap(store_);
    store_ = fresh;
    lastRv_ = listRv;
  }
  for (const auto& [key, item] : old) {
    if (fresh.count(key) == 0) {
      fireDelete(item.obj);
    }
  }
  for (const auto& [key, item] : fresh) {
    auto it = old.find(key);
    if (it == old.end()) {
      fireAdd(item.obj);
    } else if (it->second.uid != item.uid) {
      // Deleted and created again while unwatched: handlers keyed by UID must see both.
      fireDelete(it->second.obj);
      fireAdd(item.obj);
    } else if (it->second.resourceVersion != item.resourceVersion) {
      fireUpdate(it->second.obj, item.obj);
    }
  }
  if (!synced_) {
    {
      std::lock_guard lock(waitMu_);
      synced_ = true;
    }
    waitCv_.notify_all();
    if (log::v(2)) {
      log::info("informer synced", {{"informer", opts_.name}, {"items", fresh.size()}});
    }
  }
}

InformerCore::WatchEnd InformerCore::watchOnce(bool& sawEvents, int timeoutSeconds) {
  WatchOptions wo;
  wo.resourceVersion = lastResourceVersion();
  wo.labelSelector = opts_.labelSelector;
  wo.fieldSelector = opts_.fieldSelector;
  wo.allowWatchBookmarks = true;
  wo.timeoutSeconds = timeoutSeconds;
  WatchEnd end = WatchEnd::kClean;
  client_.watch(
      res_, opts_.ns, wo, [&](const WatchEvent& ev) { return onEvent(ev, end, sawEvents); },
      &stop_);
  return end;
}

bool InformerCore::onEvent(const WatchEvent& ev, WatchEnd& end, bool& sawEvents) {
  // An ERROR event is not a sign of health: a watch answered with one at once failed.
  sawEvents = sawEvents || ev.type != WatchEventType::kError;
  switch (ev.type) {
    case WatchEventType::kBookmark:
      setLastResourceVersion(metaString(ev.object, "resourceVersion"));
      break;
    case WatchEventType::kError: {
      // Clients normally turn a 410 ERROR event into ApiError kGone; accept either form.
      const bool gone = ev.object.value("code", 0) == 410;
      end = gone ? WatchEnd::kGone : WatchEnd::kError;
      if (!gone) {
        log::warn("informer watch error event",
                  {{"informer", opts_.name}, {"status", ev.object.value("message", "")}});
      }
      return false;
    }
    case WatchEventType::kAdded:
    case WatchEventType::kModified:
      apply(ev.object, false);
      break;
    case WatchEventType::kDeleted:
      apply(ev.object, true);
      break;
  }
  return !stop_;
}

void InformerCore::apply(const nlohmann::json& obj, bool deleted) {
  const std::string key = keyOf(obj);
  const std::string rv = metaString(obj, "resourceVersion");
  const Object decoded = decode(obj);

  std::lock_guard dispatch(dispatchMu_);
  Object previous;
  {
    std::lock_guard lock(storeMu_);
    auto it = store_.find(key);
    if (it != store_.end()) {
      previous = it->second.obj;
    }
    if (deleted) {
      store_.erase(key);
    } else if (decoded) {
      store_[key] = Item{decoded, rv, metaString(obj, "uid")};
    }
    if (!rv.empty()) {
      lastRv_ = rv;
    }
  }
  if (deleted) {
    if (previous) {
      fireDelete(decoded ? decoded : previous);
    }
  } else if (decoded && previous) {
    fireUpdate(previous, decoded);
  } else if (decoded) {
    fireAdd(decoded);
  }
}

void InformerCore::resyncLoop() {
  while (sleep(opts_.resyncPeriod)) {
    if (!synced_) {
      continue;
    }
    std::lock_guard dispatch(dispatchMu_);
    for (const Object& obj : list()) {
      if (stop_) {
        return;
      }
      fireUpdate(obj, obj);
    }
  }
}

namespace {

template <class Fn>
void guarded(const std::string& informer, const char* what, Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    log::error("informer handler failed",
               {{"informer", informer}, {"handler", what}, {"error", e.what()}});
  } catch (...) {
    log::error("informer handler failed",
               {{"informer", informer}, {"handler", what}, {"error", "unknown exception"}});
  }
}

}  // namespace

void InformerCore::fireAdd(const Object& obj) {
  for (const auto& h : handlers_) {
    if (h.onAdd) {
      guarded(opts_.name, "onAdd", [&] { h.onAdd(obj); });
    }
  }
}

void InformerCore::fireUpdate(const Object& oldObj, const Object& newObj) {
  for (const auto& h : handlers_) {
    if (h.onUpdate) {
      guarded(opts_.name, "onUpdate", [&] { h.onUpdate(oldObj, newObj); });
    }
  }
}

void InformerCore::fireDelete(const Object& obj) {
  for (const auto& h : handlers_) {
    if (h.onDelete) {
      guarded(opts_.name, "onDelete", [&] { h.onDelete(obj); });
    }
  }
}

}  // namespace ker

#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/api_client.h"
#include "common/api_error.h"
#include "common/resource.h"

namespace ker::testing {

// An in-memory API server for unit tests, with the semantics controllers rely on:
// - every write bumps one global resourceVersion and is appended to an event log;
// - update/updateStatus/patch honour metadata.resourceVersion as a precondition (kConflict),
//   create of an existing name gives kAlreadyExists, a missing object kNotFound;
// - the main resource and the status subresource are separate (update and patch keep the
//   stored status, updateStatus and patch(..., "status") change only the status);
// - a write that changes nothing keeps the resourceVersion and emits no event;
// - delete of an object with finalizers only sets deletionTimestamp; dropping the last
//   finalizer of such an object deletes it;
// - watch replays the log after the given resourceVersion, then streams new changes, with
//   label/field selectors (an object moving out of a selector's scope arrives as DELETED);
// - compact() makes older resourceVersions answer kGone, as etcd compaction does.
// Failures can be injected per verb, and current watches can be ended, dropped or expired.
// ListOptions.resourceVersion is ignored: lists always read the latest state.
// Thread-safe; watch callbacks run without the lock held, so they may call back in.
class FakeApiClient : public ApiClient {
 public:
  enum class Verb { kGet, kList, kCreate, kUpdate, kUpdateStatus, kPatch, kRemove, kBind, kWatch };

  struct Binding {
    std::string ns;
    std::string pod;
    std::string uid;
    std::string node;
    std::map<std::string, std::string> annotations;
  };

  // ---- ApiClient

  nlohmann::json get(const Resource& res, const std::string& ns, const std::string& name) override {
    std::lock_guard lock(mu_);
    enter(Verb::kGet);
    return find(res, ns, name);
  }

  nlohmann::json list(const Resource& res, const std::string& ns,
                      const ListOptions& opts) override {
    std::lock_guard lock(mu_);
    enter(Verb::kList);
    int64_t listRv = rv_;
    std::string after;
    if (!opts.continueToken.empty()) {
      const size_t slash = opts.continueToken.find('/');
      listRv = std::stoll(opts.continueToken.substr(0, slash));
      after = opts.continueToken.substr(slash + 1);
      if (listRv < compactedRv_) {
        throw ApiError(ApiErrorKind::kGone, 410, "Expired",
                       "The provided continue parameter is too old");
      }
    }
    nlohmann::json items = nlohmann::json::array();
    std::string last;
    bool more = false;
    for (const auto& [key, obj] : store_[resKey(res)]) {
      if (key <= after && !after.empty()) {
        continue;
      }
      if (!inNamespace(res, ns, obj) || !selected(obj, opts.labelSelector, opts.fieldSelector)) {
        continue;
      }
      if (opts.limit > 0 && static_cast<int64_t>(items.size()) == opts.limit) {
        more = true;
        break;
      }
      items.push_back(obj);
      last = key;
    }
    nlohmann::json out = {{"kind", "List"},
                          {"apiVersion", "v1"},
                          {"metadata", {{"resourceVersion", std::to_string(listRv)}}},
                          {"items", std::move(items)}};
    if (more) {
      out["metadata"]["continue"] = std::to_string(listRv) + "/" + last;
    }
    return out;
  }

  nlohmann::json create(const Resource& res, const std::string& ns,
                        const nlohmann::json& obj) override {
    std::lock_guard lock(mu_);
    enter(Verb::kCreate);
    nlohmann::json created = insert(res, ns, obj);
    loseReply(lostCreateReplies_, res);
    return created;
  }

  nlohmann::json update(const Resource& res, const std::string& ns,
                        const nlohmann::json& obj) override {
    std::lock_guard lock(mu_);
    enter(Verb::kUpdate);
    const nlohmann::json& cur = find(res, ns, nameOf(obj));
    checkPreconditions(cur, obj);
    nlohmann::json next = obj;
    keepSystemMetadata(cur, next);
    copyField(cur, next, "status");
    return write(res, cur, std::move(next));
  }

  nlohmann::json updateStatus(const Resource& res, const std::string& ns,
                              const nlohmann::json& obj) override {
    std::lock_guard lock(mu_);
    enter(Verb::kUpdateStatus);
    const nlohmann::json& cur = find(res, ns, nameOf(obj));
    checkPreconditions(cur, obj);
    nlohmann::json next = cur;
    copyField(obj, next, "status");
    nlohmann::json written = write(res, cur, std::move(next));
    loseReply(lostStatusReplies_, res);
    return written;
  }

  nlohmann::json patch(const Resource& res, const std::string& ns, const std::string& name,
                       PatchType type, const nlohmann::json& patch,
                       const std::string& subresource = {}) override {
    std::lock_guard lock(mu_);
    enter(Verb::kPatch);
    const nlohmann::json& cur = find(res, ns, name);
    nlohmann::json patched;
    try {
      if (type == PatchType::kJson) {
        patched = cur.patch(withoutNullTests(cur, patch));
      } else {  // strategic merge is approximated by a JSON merge patch
        patched = cur;
        patched.merge_patch(patch);
      }
    } catch (const nlohmann::json::exception& e) {
      throw ApiError(ApiErrorKind::kInvalid, 422, "Invalid", e.what());
    }
    checkPreconditions(cur, patched);
    nlohmann::json next;
    if (subresource == "status") {
      next = cur;
      copyField(patched, next, "status");
    } else if (subresource.empty()) {
      next = std::move(patched);
      keepSystemMetadata(cur, next);
      copyField(cur, next, "status");
    } else {
      throw ApiError(ApiErrorKind::kNotFound, 404, "NotFound",
                     "the fake has no subresource " + subresource);
    }
    return write(res, cur, std::move(next));
  }

  void remove(const Resource& res, const std::string& ns, const std::string& name,
              const DeleteOptions& opts = {}) override {
    std::lock_guard lock(mu_);
    enter(Verb::kRemove);
    const nlohmann::json& cur = find(res, ns, name);
    const auto& meta = cur["metadata"];
    if ((opts.preconditionUid && *opts.preconditionUid != meta.value("uid", "")) ||
        (opts.preconditionResourceVersion &&
         *opts.preconditionResourceVersion != meta.value("resourceVersion", ""))) {
      throw conflict("Precondition failed: the object changed since it was read");
    }
    if (!meta.value("finalizers", nlohmann::json::array()).empty()) {
      if (!meta.contains("deletionTimestamp")) {
        nlohmann::json next = cur;
        next["metadata"]["deletionTimestamp"] = now();
        write(res, cur, std::move(next));
      }
      return;
    }
    erase(res, cur);
  }

  void bindPod(const std::string& ns, const std::string& podName, const std::string& podUid,
               const std::string& nodeName,
               const std::map<std::string, std::string>& annotations = {}) override {
    std::lock_guard lock(mu_);
    enter(Verb::kBind);
    const Resource& pods = resources::kPods;
    const nlohmann::json& cur = find(pods, ns, podName);
    const auto& meta = cur["metadata"];
    if (!podUid.empty() && podUid != meta.value("uid", "")) {
      throw conflict("Precondition failed: UID in precondition: " + podUid +
                     ", UID in object meta: " + meta.value("uid", ""));
    }
    if (const std::string node = cur.value("/spec/nodeName"_json_pointer, ""); !node.empty()) {
      throw conflict("pod " + podName + " is already assigned to node \"" + node + "\"");
    }
    if (meta.contains("deletionTimestamp")) {
      throw ApiError(ApiErrorKind::kServerError, 500, "InternalError",
                     "pod " + podName + " is being deleted, cannot be assigned to a host");
    }
    nlohmann::json next = cur;
    next["spec"]["nodeName"] = nodeName;
    for (const auto& [k, v] : annotations) {
      next["metadata"]["annotations"][k] = v;
    }
    auto& conditions = next["status"]["conditions"];
    if (!conditions.is_array()) {
      conditions = nlohmann::json::array();
    }
    conditions.push_back({{"type", "PodScheduled"}, {"status", "True"}});
    write(pods, cur, std::move(next));
    bindings_.push_back(Binding{ns, podName, podUid, nodeName, annotations});
  }

  void watch(const Resource& res, const std::string& ns, const WatchOptions& opts,
             const std::function<bool(const WatchEvent&)>& onEvent,
             const std::atomic<bool>* stop) override {
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::seconds(opts.timeoutSeconds > 0 ? opts.timeoutSeconds : 365 * 24 * 3600);
    uint64_t ended = 0, dropped = 0, expired = 0, startSeq = 0, cursor = 0;
    int64_t from = 0;
    {
      std::lock_guard lock(mu_);
      enter(Verb::kWatch);
      from = rv_;
      if (!opts.resourceVersion.empty() && opts.resourceVersion != "0") {
        from = std::stoll(opts.resourceVersion);
        if (from < compactedRv_) {
          throw gone(from);
        }
      }
      ended = endGen_;
      dropped = dropGen_;
      expired = expireGen_;
      startSeq = nextSeq_;
      cursor = log_.empty() ? nextSeq_ : log_.front().seq;
      ++active_;
      cv_.notify_all();
    }
    struct Leave {
      FakeApiClient& f;
      ~Leave() {
        std::lock_guard lock(f.mu_);
        --f.active_;
        f.cv_.notify_all();
      }
    } leave{*this};

    std::unique_lock lock(mu_);
    for (;;) {
      if (stop != nullptr && stop->load()) {
        return;
      }
      if (endGen_ != ended || std::chrono::steady_clock::now() >= deadline) {
        return;
      }
      if (dropGen_ != dropped) {
        throw ApiError(ApiErrorKind::kTransport, 0, "", "watch stream dropped (fake)");
      }
      if (expireGen_ != expired || (!log_.empty() && cursor < log_.front().seq)) {
        throw gone(from);
      }
      std::vector<WatchEvent> batch;
      for (; cursor < nextSeq_; ++cursor) {
        const Entry& e = log_[cursor - log_.front().seq];
        if (e.res != resKey(res)) {
          continue;
        }
        if (e.seq < startSeq && (e.injected || e.rv <= from)) {
          continue;  // history before the watch started: only changes after `from` count
        }
        if (auto ev = visible(e, res, ns, opts)) {
          batch.push_back(std::move(*ev));
        }
      }
      if (batch.empty()) {
        cv_.wait_for(lock, std::chrono::milliseconds(20));
        continue;
      }
      lock.unlock();
      for (const auto& ev : batch) {
        if (!onEvent(ev)) {
          return;
        }
      }
      lock.lock();
    }
  }

  // ---- Test controls

  // Stores an object as create() would, without failure injection or call counting.
  nlohmann::json seed(const Resource& res, const nlohmann::json& obj) {
    std::lock_guard lock(mu_);
    return insert(res, obj.value("/metadata/namespace"_json_pointer, ""), obj);
  }

  // The next `times` calls of verb throw error; times < 0 keeps failing until clearFailures.
  // Failures queued for one verb apply in order.
  void failNext(Verb verb, const ApiError& error, int times = 1) {
    std::lock_guard lock(mu_);
    failures_[verb].push_back(Failure{error, times});
  }
  // The next `times` status updates of res are applied, then throw a transport error: the
  // reply lost after the server acted.
  void loseNextStatusReplies(const Resource& res, int times = 1) {
    std::lock_guard lock(mu_);
    lostStatusReplies_[resKey(res)] += times;
  }
  // The next `times` creates of res are applied, then throw a transport error.
  void loseNextCreateReplies(const Resource& res, int times = 1) {
    std::lock_guard lock(mu_);
    lostCreateReplies_[resKey(res)] += times;
  }
  void clearFailures() {
    std::lock_guard lock(mu_);
    failures_.clear();
  }

  // Calls made per verb, failed ones included (seed() and test controls excluded).
  int calls(Verb verb) const {
    std::lock_guard lock(mu_);
    auto it = calls_.find(verb);
    return it == calls_.end() ? 0 : it->second;
  }

  std::vector<Binding> bindings() const {
    std::lock_guard lock(mu_);
    return bindings_;
  }

  // The store's current resourceVersion (that of the latest write).
  std::string resourceVersion() const {
    std::lock_guard lock(mu_);
    return std::to_string(rv_);
  }

  // Reads an object without counting a call; nullopt when absent.
  std::optional<nlohmann::json> peek(const Resource& res, const std::string& ns,
                                     const std::string& name) const {
    std::lock_guard lock(mu_);
    auto resIt = store_.find(resKey(res));
    if (resIt == store_.end()) {
      return std::nullopt;
    }
    auto it = resIt->second.find(storeKey(res, ns, name));
    return it == resIt->second.end() ? std::nullopt : std::optional(it->second);
  }

  // Delivers ev as is to the current watches of res, whatever their namespace or selectors.
  void sendWatchEvent(const Resource& res, const WatchEvent& ev) {
    std::lock_guard lock(mu_);
    append(resKey(res), "", ev, nlohmann::json(), true);
  }

  // A BOOKMARK at the current resourceVersion to the watches of res that asked for them.
  void sendBookmark(const Resource& res) {
    std::lock_guard lock(mu_);
    nlohmann::json obj = {{"metadata", {{"resourceVersion", std::to_string(rv_)}}}};
    append(resKey(res), "", WatchEvent{WatchEventType::kBookmark, std::move(obj)}, nlohmann::json(),
           true);
  }

  // Current watches return normally, as when the server's watch timeout passes.
  void endWatches() { bump(endGen_); }
  // Current watches throw ApiError kTransport, as on a broken connection.
  void dropWatches() { bump(dropGen_); }
  // Current watches throw ApiError kGone, as when the watch cache has moved past them.
  void expireWatches() { bump(expireGen_); }

  // Forgets the history up to now: watching from an older resourceVersion, or continuing an
  // older paginated list, gives kGone.
  void compact() {
    std::lock_guard lock(mu_);
    compactedRv_ = rv_;
    while (!log_.empty() && log_.front().rv <= compactedRv_) {
      log_.pop_front();
    }
  }

  int activeWatches() const {
    std::lock_guard lock(mu_);
    return active_;
  }

  // Until at least n watches are running; false on timeout.
  bool waitForWatches(int n, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return active_ >= n; });
  }

 private:
  // The API server's JSON Patch passes a test for null where the path's last member is absent
  // (json-patch v4), though not where its parent is; nlohmann's would fail it. Such tests are
  // checked here and left out of the patch.
  static nlohmann::json withoutNullTests(const nlohmann::json& doc, const nlohmann::json& patch) {
    nlohmann::json kept = nlohmann::json::array();
    for (const auto& op : patch) {
      if (op.value("op", "") == "test" && op.contains("value") && op["value"].is_null()) {
        const nlohmann::json::json_pointer ptr(op.value("path", ""));
        if (!doc.contains(ptr.parent_pointer()) || (doc.contains(ptr) && !doc.at(ptr).is_null())) {
          throw nlohmann::json::other_error::create(
              501, "testing value " + ptr.to_string() + " failed", nullptr);
        }
        continue;
      }
      kept.push_back(op);
    }
    return kept;
  }

  struct Entry {
    uint64_t seq;
    int64_t rv;
    std::string res;
    std::string ns;
    WatchEvent event;
    nlohmann::json previous;  // the object before the change, null for ADDED
    bool injected;            // sent by a test control rather than produced by a write
  };

  struct Failure {
    ApiError error;
    int remaining;
  };

  static std::string resKey(const Resource& res) {
    return res.group + "/" + res.version + "/" + res.plural;
  }
  static std::string storeKey(const Resource& res, const std::string& ns, const std::string& name) {
    return (res.namespaced ? ns : std::string()) + "/" + name;
  }
  static std::string nameOf(const nlohmann::json& obj) {
    return obj.value("/metadata/name"_json_pointer, "");
  }
  static std::string now() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
  }
  static ApiError conflict(const std::string& msg) {
    return ApiError(ApiErrorKind::kConflict, 409, "Conflict", msg);
  }
  static ApiError gone(int64_t rv) {
    return ApiError(ApiErrorKind::kGone, 410, "Expired",
                    "too old resource version: " + std::to_string(rv));
  }
  static void copyField(const nlohmann::json& from, nlohmann::json& to, const char* field) {
    if (from.contains(field)) {
      to[field] = from[field];
    } else if (to.is_object()) {
      to.erase(field);
    }
  }
  // Fields clients cannot change through update or patch.
  static void keepSystemMetadata(const nlohmann::json& cur, nlohmann::json& next) {
    for (const char* f : {"uid", "creationTimestamp", "deletionTimestamp", "namespace", "name",
                          "generation", "resourceVersion"}) {
      copyField(cur["metadata"], next["metadata"], f);
    }
  }

  void enter(Verb verb) {
    ++calls_[verb];
    auto it = failures_.find(verb);
    if (it == failures_.end() || it->second.empty()) {
      return;
    }
    Failure& f = it->second.front();
    ApiError err = fresh(f.error);
    if (f.remaining > 0 && --f.remaining == 0) {
      it->second.pop_front();
    }
    throw err;
  }

  // An equal error that shares no state with e: copies of a std::runtime_error share a
  // reference-counted message, which ThreadSanitizer (libstdc++ is not instrumented) reports
  // as a race once the stored failure is cleared while another thread still reads its copy.
  static ApiError fresh(const ApiError& e) {
    const std::string prefix = ApiError(e.kind(), e.httpStatus(), "", "").what();
    const std::string what = e.what();
    const std::string message =
        what.size() > prefix.size() + 2 ? what.substr(prefix.size() + 2) : std::string();
    return ApiError(e.kind(), e.httpStatus(), e.reason(), message, e.retryAfter(), e.causes());
  }

  const nlohmann::json& find(const Resource& res, const std::string& ns, const std::string& name) {
    auto& objects = store_[resKey(res)];
    auto it = objects.find(storeKey(res, ns, name));
    if (it == objects.end()) {
      throw ApiError(ApiErrorKind::kNotFound, 404, "NotFound",
                     res.plural + " \"" + name + "\" not found");
    }
    return it->second;
  }

  void checkPreconditions(const nlohmann::json& cur, const nlohmann::json& next) {
    const std::string wantRv = next.value("/metadata/resourceVersion"_json_pointer, "");
    if (!wantRv.empty() && wantRv != cur["metadata"].value("resourceVersion", "")) {
      throw conflict("Operation cannot be fulfilled on " + nameOf(cur) +
                     ": the object has been modified; please apply your changes to the latest "
                     "version and try again");
    }
    const std::string wantUid = next.value("/metadata/uid"_json_pointer, "");
    if (!wantUid.empty() && wantUid != cur["metadata"].value("uid", "")) {
      throw conflict("Precondition failed: UID in precondition: " + wantUid);
    }
  }

  // A reply to lose after the server acted: a transport error in its place.
  void loseReply(std::map<std::string, int>& lost, const Resource& res) {
    if (auto it = lost.find(resKey(res)); it != lost.end() && it->second > 0) {
      --it->second;
      throw ApiError(ApiErrorKind::kTransport, 0, "", "connection cut after the request was sent");
    }
  }

  nlohmann::json insert(const Resource& res, const std::string& ns, nlohmann::json obj) {
    auto& meta = obj["metadata"];
    if (!meta.is_object()) {
      throw ApiError(ApiErrorKind::kInvalid, 422, "Invalid", "metadata must be an object");
    }
    if (meta.value("name", "").empty()) {
      if (meta.value("generateName", "").empty()) {
        throw ApiError(ApiErrorKind::kInvalid, 422, "Invalid", "metadata.name: Required value");
      }
      meta["name"] = meta.value("generateName", "") + std::to_string(++generated_);
    }
    if (res.namespaced) {
      if (ns.empty()) {
        throw ApiError(ApiErrorKind::kBadRequest, 400, "BadRequest",
                       "a namespaced object needs a namespace");
      }
      meta["namespace"] = ns;
    } else {
      meta.erase("namespace");
    }
    const std::string name = meta["name"].get<std::string>();
    const std::string key = storeKey(res, ns, name);
    auto& objects = store_[resKey(res)];
    if (objects.count(key) != 0) {
      throw ApiError(ApiErrorKind::kAlreadyExists, 409, "AlreadyExists",
                     res.plural + " \"" + name + "\" already exists");
    }
    meta["uid"] = "fake-uid-" + std::to_string(++uids_);
    meta["creationTimestamp"] = now();
    meta["generation"] = 1;
    meta.erase("deletionTimestamp");
    meta["resourceVersion"] = std::to_string(++rv_);
    objects[key] = obj;
    append(resKey(res), meta.value("namespace", ""), WatchEvent{WatchEventType::kAdded, obj},
           nlohmann::json(), false);
    return obj;
  }

  // Stores next in place of cur (same key), with the bookkeeping of a real write.
  nlohmann::json write(const Resource& res, const nlohmann::json& cur, nlohmann::json next) {
    next["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"];
    if (next == cur) {
      return next;  // no-op writes keep the resourceVersion and emit nothing
    }
    if (next["metadata"].contains("deletionTimestamp") &&
        next["metadata"].value("finalizers", nlohmann::json::array()).empty()) {
      erase(res, cur);
      return next;
    }
    if (next.value("spec", nlohmann::json()) != cur.value("spec", nlohmann::json())) {
      next["metadata"]["generation"] = cur["metadata"].value("generation", 0) + 1;
    }
    next["metadata"]["resourceVersion"] = std::to_string(++rv_);
    const std::string ns = cur["metadata"].value("namespace", "");
    nlohmann::json previous = cur;  // cur is replaced below
    store_[resKey(res)][storeKey(res, ns, nameOf(cur))] = next;
    append(resKey(res), ns, WatchEvent{WatchEventType::kModified, next}, std::move(previous),
           false);
    return next;
  }

  void erase(const Resource& res, const nlohmann::json& cur) {
    nlohmann::json gone = cur;
    gone["metadata"]["resourceVersion"] = std::to_string(++rv_);
    const std::string ns = cur["metadata"].value("namespace", "");
    store_[resKey(res)].erase(storeKey(res, ns, nameOf(cur)));
    append(resKey(res), ns, WatchEvent{WatchEventType::kDeleted, gone}, gone, false);
  }

  void append(const std::string& res, const std::string& ns, WatchEvent ev, nlohmann::json previous,
              bool injected) {
    log_.push_back(Entry{nextSeq_++, rv_, res, ns, std::move(ev), std::move(previous), injected});
    cv_.notify_all();
  }

  void bump(uint64_t& gen) {
    std::lock_guard lock(mu_);
    ++gen;
    cv_.notify_all();
  }

  // The event a watch with these options sees for entry e, if any.
  static std::optional<WatchEvent> visible(const Entry& e, const Resource& res,
                                           const std::string& ns, const WatchOptions& opts) {
    if (e.injected) {
      if (e.event.type == WatchEventType::kBookmark && !opts.allowWatchBookmarks) {
        return std::nullopt;
      }
      return e.event;
    }
    if (res.namespaced && !ns.empty() && e.ns != ns) {
      return std::nullopt;
    }
    const bool now = e.event.type != WatchEventType::kDeleted &&
                     selected(e.event.object, opts.labelSelector, opts.fieldSelector);
    const bool before =
        !e.previous.is_null() && selected(e.previous, opts.labelSelector, opts.fieldSelector);
    if (now && before) {
      return e.event;
    }
    if (now) {
      return WatchEvent{WatchEventType::kAdded, e.event.object};
    }
    if (before) {
      return WatchEvent{WatchEventType::kDeleted, e.event.object};
    }
    return std::nullopt;
  }

  static bool inNamespace(const Resource& res, const std::string& ns, const nlohmann::json& obj) {
    return !res.namespaced || ns.empty() || obj["metadata"].value("namespace", "") == ns;
  }

  static std::vector<std::string> splitTopLevel(const std::string& s) {
    std::vector<std::string> parts;
    std::string cur;
    int depth = 0;
    for (char c : s) {
      depth += c == '(' ? 1 : c == ')' ? -1 : 0;
      if (c == ',' && depth == 0) {
        parts.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) {
      parts.push_back(cur);
    }
    return parts;
  }

  static std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(' ');
    return b == std::string::npos ? "" : s.substr(b, s.find_last_not_of(' ') - b + 1);
  }

  static ApiError badSelector(const std::string& what) {
    return ApiError(ApiErrorKind::kBadRequest, 400, "BadRequest", "invalid selector: " + what);
  }

  // The label selector string syntax: k=v, k==v, k!=v, k, !k, k in (a,b), k notin (a,b).
  static bool labelsMatch(const std::string& selector, const nlohmann::json& labels) {
    for (const std::string& raw : splitTopLevel(selector)) {
      const std::string req = trim(raw);
      auto label = [&](const std::string& k) -> std::optional<std::string> {
        if (!labels.is_object() || !labels.contains(k)) {
          return std::nullopt;
        }
        return labels[k].get<std::string>();
      };
      bool ok = false;
      if (size_t op = req.find(" notin "); op != std::string::npos) {
        ok = !inSet(label(trim(req.substr(0, op))), req.substr(op + 7));
      } else if (size_t in = req.find(" in "); in != std::string::npos) {
        ok = inSet(label(trim(req.substr(0, in))), req.substr(in + 4));
      } else if (size_t ne = req.find("!="); ne != std::string::npos) {
        ok = label(trim(req.substr(0, ne))) != trim(req.substr(ne + 2));
      } else if (size_t eq = req.find('='); eq != std::string::npos) {
        const size_t valueAt = req.compare(eq, 2, "==") == 0 ? eq + 2 : eq + 1;
        ok = label(trim(req.substr(0, eq))) == trim(req.substr(valueAt));
      } else if (!req.empty() && req[0] == '!') {
        ok = !label(trim(req.substr(1)));
      } else if (!req.empty()) {
        ok = label(req).has_value();
      } else {
        throw badSelector(selector);
      }
      if (!ok) {
        return false;
      }
    }
    return true;
  }

  static bool inSet(const std::optional<std::string>& value, const std::string& set) {
    const std::string body = trim(set);
    if (body.size() < 2 || body.front() != '(' || body.back() != ')') {
      throw badSelector(set);
    }
    if (!value) {
      return false;
    }
    for (const std::string& v : splitTopLevel(body.substr(1, body.size() - 2))) {
      if (trim(v) == *value) {
        return true;
      }
    }
    return false;
  }

  // Field selectors: path=value, path==value, path!=value on dotted paths such as
  // metadata.name or spec.nodeName; a missing field reads as "".
  static bool fieldsMatch(const std::string& selector, const nlohmann::json& obj) {
    for (const std::string& raw : splitTopLevel(selector)) {
      const std::string req = trim(raw);
      const size_t ne = req.find("!=");
      const size_t eq = req.find('=');
      if (eq == std::string::npos) {
        throw badSelector(selector);
      }
      const bool negate = ne != std::string::npos;
      const std::string path = trim(req.substr(0, negate ? ne : eq));
      size_t valueAt = negate ? ne + 2 : (req.compare(eq, 2, "==") == 0 ? eq + 2 : eq + 1);
      const std::string want = trim(req.substr(valueAt));
      std::string pointer = "/" + path;
      std::replace(pointer.begin(), pointer.end(), '.', '/');
      const nlohmann::json::json_pointer ptr(pointer);
      std::string have;
      if (obj.contains(ptr)) {
        const auto& v = obj[ptr];
        have = v.is_string() ? v.get<std::string>() : v.dump();
      }
      if ((have == want) == negate) {
        return false;
      }
    }
    return true;
  }

  static bool selected(const nlohmann::json& obj, const std::string& labelSelector,
                       const std::string& fieldSelector) {
    const nlohmann::json labels = obj.value("/metadata/labels"_json_pointer, nlohmann::json());
    return labelsMatch(labelSelector, labels) && fieldsMatch(fieldSelector, obj);
  }

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  int64_t rv_ = 1000;  // arbitrary start, so "0" and small numbers are never real versions
  int64_t compactedRv_ = 0;
  uint64_t nextSeq_ = 0;
  uint64_t endGen_ = 0, dropGen_ = 0, expireGen_ = 0;
  uint64_t uids_ = 0, generated_ = 0;
  int active_ = 0;
  std::deque<Entry> log_;
  std::map<std::string, std::map<std::string, nlohmann::json>> store_;  // resKey -> key -> obj
  std::map<Verb, std::deque<Failure>> failures_;
  std::map<std::string, int> lostStatusReplies_;
  std::map<std::string, int> lostCreateReplies_;
  std::map<Verb, int> calls_;
  std::vector<Binding> bindings_;
};

}  // namespace ker::testing

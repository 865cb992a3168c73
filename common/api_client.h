#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/resource.h"

namespace ker {

struct ListOptions {
  std::string labelSelector;
  std::string fieldSelector;
  int64_t limit = 0;  // 0 = server default (no pagination)
  std::string continueToken;
  std::string resourceVersion;  // "" = most recent (quorum read)
};

struct WatchOptions {
  std::string resourceVersion;  // resume point; "" = from now
  std::string labelSelector;
  std::string fieldSelector;
  bool allowWatchBookmarks = true;
  int timeoutSeconds = 300;  // server-side watch duration, after which the stream ends cleanly
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

struct WatchEvent {
  WatchEventType type;
  nlohmann::json object;  // the object, or a metav1.Status for kError
};

enum class PatchType { kMerge, kJson, kStrategicMerge };

struct DeleteOptions {
  std::optional<std::string> preconditionUid;
  std::optional<std::string> preconditionResourceVersion;
  std::optional<int64_t> gracePeriodSeconds;
};

// The Kubernetes API as the rest of the project sees it. KubeClient implements it over HTTP;
// unit tests substitute small fakes. Every method throws ApiError on failure.
class ApiClient {
 public:
  virtual ~ApiClient() = default;

  virtual nlohmann::json get(const Resource& res, const std::string& ns,
                             const std::string& name) = 0;
  // One page; the returned List carries metadata.continue and metadata.resourceVersion.
  virtual nlohmann::json list(const Resource& res, const std::string& ns,
                              const ListOptions& opts) = 0;
  virtual nlohmann::json create(const Resource& res, const std::string& ns,
                                const nlohmann::json& obj) = 0;
  // PUT; obj's metadata.resourceVersion is the optimistic-concurrency precondition.
  virtual nlohmann::json update(const Resource& res, const std::string& ns,
                                const nlohmann::json& obj) = 0;
  virtual nlohmann::json updateStatus(const Resource& res, const std::string& ns,
                                      const nlohmann::json& obj) = 0;
  virtual nlohmann::json patch(const Resource& res, const std::string& ns, const std::string& name,
                               PatchType type, const nlohmann::json& patch,
                               const std::string& subresource = {}) = 0;
  virtual void remove(const Resource& res, const std::string& ns, const std::string& name,
                      const DeleteOptions& opts = {}) = 0;
  // POST pods/{name}/binding with metadata.uid as precondition. The API server copies the
  // Binding's annotations onto the pod in the same write that sets spec.nodeName.
  virtual void bindPod(const std::string& ns, const std::string& podName, const std::string& podUid,
                       const std::string& nodeName,
                       const std::map<std::string, std::string>& annotations = {}) = 0;
  // Streams events to onEvent until the server ends the watch, onEvent returns false, or
  // *stop becomes true (checked at least every 200 ms). ERROR events are delivered to onEvent
  // as kError; a 410 Gone status (as HTTP status or ERROR event) is thrown as ApiError kGone.
  virtual void watch(const Resource& res, const std::string& ns, const WatchOptions& opts,
                     const std::function<bool(const WatchEvent&)>& onEvent,
                     const std::atomic<bool>* stop) = 0;

  // Lists every page (limit per page) and returns items plus the list's resourceVersion.
  // opts.limit and opts.continueToken are managed here. When a continue token expires (410)
  // mid-way, the listing restarts from the first page, a bounded number of times.
  struct FullList {
    std::vector<nlohmann::json> items;
    std::string resourceVersion;
  };
  FullList listAll(const Resource& res, const std::string& ns, ListOptions opts,
                   int64_t pageSize = 500);

  // listAll without holding every item at once: onItem gets each item of a page as the page
  // arrives (it may move from it), and onRestart is called before a restarted listing
  // delivers the first page again, so the caller can drop what it had. Returns the list's
  // resourceVersion. A cache of tens of thousands of objects then never holds more than one
  // page of documents.
  std::string listEach(const Resource& res, const std::string& ns, ListOptions opts,
                       int64_t pageSize, const std::function<void(nlohmann::json&)>& onItem,
                       const std::function<void()>& onRestart);
};

}  // namespace ker

#include "common/api_client.h"

#include "common/api_error.h"

namespace ker {

namespace {

// A continue token expires with etcd compaction (about 5 minutes); a listing that keeps
// outliving it is not going to finish.
constexpr int kMaxListRestarts = 3;

}  // namespace

ApiClient::FullList ApiClient::listAll(const Resource& res, const std::string& ns, ListOptions opts,
                                       int64_t pageSize) {
  FullList result;
  result.resourceVersion = listEach(
      res, ns, std::move(opts), pageSize,
      [&](nlohmann::json& item) { result.items.push_back(std::move(item)); },
      [&] { result.items.clear(); });
  return result;
}

std::string ApiClient::listEach(const Resource& res, const std::string& ns, ListOptions opts,
                                int64_t pageSize,
                                const std::function<void(nlohmann::json&)>& onItem,
                                const std::function<void()>& onRestart) {
  opts.limit = pageSize > 0 ? pageSize : 0;
  for (int restart = 0;; ++restart) {
    if (restart > 0) {
      onRestart();
    }
    ListOptions page = opts;
    page.continueToken.clear();
    try {
      for (;;) {
        nlohmann::json chunk = list(res, ns, page);
        if (!chunk.is_object()) {
          throw ApiError(ApiErrorKind::kOther, 0, "",
                         "list " + res.path(ns) + ": the response is not a List");
        }
        auto items = chunk.find("items");
        if (items != chunk.end() && items->is_array()) {
          for (auto& item : *items) {
            onItem(item);
          }
        }
        nlohmann::json meta = chunk.value("metadata", nlohmann::json::object());
        std::string next = meta.value("continue", "");
        if (next.empty()) {
          return meta.value("resourceVersion", "");
        }
        if (next == page.continueToken) {
          throw ApiError(ApiErrorKind::kOther, 0, "",
                         "list " + res.path(ns) + ": the server repeated a continue token");
        }
        page.continueToken = std::move(next);
        // The continue token pins the snapshot; the API rejects a resourceVersion beside it.
        page.resourceVersion.clear();
      }
    } catch (const ApiError& e) {
      bool tokenExpired = e.isGone() && !page.continueToken.empty();
      if (!tokenExpired || restart + 1 >= kMaxListRestarts) {
        throw;
      }
    }
  }
}

}  // namespace ker

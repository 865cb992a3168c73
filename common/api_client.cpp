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
  opts.limit = pageSize > 0 ? pageSize : 0;
  for (int restart = 0;; ++restart) {
    FullList result;
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
            result.items.push_back(std::move(item));
          }
        }
        nlohmann::json meta = chunk.value("metadata", nlohmann::json::object());
        result.resourceVersion = meta.value("resourceVersion", "");
        std::string next = meta.value("continue", "");
        if (next.empty()) {
          return result;
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

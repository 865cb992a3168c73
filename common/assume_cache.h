#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/kube_objects.h"

namespace ker {

// The objects this process wrote, kept beside a watch's copies until the watch catches up, so
// that a decision made right after a write sees that write rather than the copy it replaced.
// kube-scheduler's assume cache is the model: the newer resourceVersion wins
// (ObjectMeta::olderThan decides), and only the watch says whether an object exists. T has an
// `ObjectMeta meta`. Thread-safe.
template <class T>
class AssumeCache {
 public:
  using Ptr = std::shared_ptr<const T>;

  // Keeps `written` for `key` unless a newer copy is kept already.
  void assume(const std::string& key, Ptr written) {
    if (!written) {
      return;
    }
    std::lock_guard lock(mu_);
    auto [it, inserted] = assumed_.try_emplace(key, written);
    // Versions that do not compare, or another object under the name: the latest write wins.
    if (!inserted && !written->meta.olderThan(it->second->meta)) {
      it->second = std::move(written);
    }
  }

  // The newer of `watched` (the watch's copy, nullptr when it has none) and the copy kept for
  // `key`. A kept copy the watch has caught up with (the same version or a newer one, or
  // another object under the name) is dropped. With no watched copy the answer is nullptr and
  // the kept copy stays: the watch may not have delivered the object yet, or deleted it (then
  // forget drops it).
  Ptr newest(const std::string& key, Ptr watched) const {
    if (!watched) {
      return watched;
    }
    std::lock_guard lock(mu_);
    auto it = assumed_.find(key);
    if (it == assumed_.end()) {
      return watched;
    }
    if (watched->meta.olderThan(it->second->meta)) {
      return it->second;
    }
    assumed_.erase(it);
    return watched;
  }

  // The object is gone (the watch delivered its deletion): nothing kept for it is newer.
  void forget(const std::string& key) {
    std::lock_guard lock(mu_);
    assumed_.erase(key);
  }

  size_t size() const {
    std::lock_guard lock(mu_);
    return assumed_.size();
  }

 private:
  mutable std::mutex mu_;
  mutable std::map<std::string, Ptr> assumed_;  // key -> the copy written last
};

}  // namespace ker

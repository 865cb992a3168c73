#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/informer.h"
#include "common/objects.h"
#include "controller/watched_pod.h"

namespace ker {

using CachedClaim = std::shared_ptr<const ExtendedResourceClaim>;
using CachedDevice = std::shared_ptr<const ExtendedResource>;
using CachedPod = std::shared_ptr<const WatchedPod>;

// What the reconciler reads: the informers' caches in the binary, plain maps in tests.
class ControllerCaches {
 public:
  virtual ~ControllerCaches() = default;
  virtual CachedClaim claim(const std::string& key) const = 0;  // "namespace/name"
  virtual CachedDevice device(const std::string& name) const = 0;
  virtual CachedPod pod(const std::string& key) const = 0;  // "namespace/name"
  virtual std::vector<CachedPod> pods() const = 0;
  // The watch delivered the deletion of the pod with this UID. UIDs are never reused, so that
  // pod's absence is as certain as a live read would make it.
  virtual bool podDeleted(const std::string& uid) const = 0;
};

class InformerCaches : public ControllerCaches {
 public:
  InformerCaches(const Informer<WatchedPod>& pods, const Informer<ExtendedResourceClaim>& claims,
                 const Informer<ExtendedResource>& devices)
      : pods_(pods), claims_(claims), devices_(devices) {}

  CachedClaim claim(const std::string& key) const override { return claims_.get(key); }
  CachedDevice device(const std::string& name) const override { return devices_.get(name); }
  CachedPod pod(const std::string& key) const override { return pods_.get(key); }
  std::vector<CachedPod> pods() const override { return pods_.list(); }
  bool podDeleted(const std::string& uid) const override {
    std::lock_guard lock(mu_);
    return deletedPods_.count(uid) > 0;
  }

  // Kept only for pods that hold claims, and forgotten once no claim names them.
  void setPodDeleted(const std::string& uid, bool deleted) {
    std::lock_guard lock(mu_);
    if (deleted) {
      deletedPods_.insert(uid);
    } else {
      deletedPods_.erase(uid);
    }
  }

 private:
  const Informer<WatchedPod>& pods_;
  const Informer<ExtendedResourceClaim>& claims_;
  const Informer<ExtendedResource>& devices_;
  mutable std::mutex mu_;
  std::unordered_set<std::string> deletedPods_;
};

}  // namespace ker

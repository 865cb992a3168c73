#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
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
  // The claims whose status lists this device name, allocated or lost, in key order.
  virtual std::vector<CachedClaim> claimsListing(const std::string& device) const = 0;
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
  std::vector<CachedClaim> claimsListing(const std::string& device) const override {
    std::set<std::string> keys;
    {
      std::lock_guard lock(mu_);
      if (auto it = listing_.find(device); it != listing_.end()) {
        keys = it->second;
      }
    }
    std::vector<CachedClaim> out;
    for (const auto& key : keys) {
      if (auto c = claims_.get(key)) {
        out.push_back(std::move(c));
      }
    }
    return out;
  }

  // Keeps claimsListing current: called with each claim's previous and current version
  // (nullptr for none).
  void indexListed(const ExtendedResourceClaim* old, const ExtendedResourceClaim* cur) {
    std::lock_guard lock(mu_);
    if (old) {
      for (const auto& name : old->listedDevices()) {
        auto it = listing_.find(name);
        if (it != listing_.end() && it->second.erase(objectKey(old->meta.ns, old->meta.name)) &&
            it->second.empty()) {
          listing_.erase(it);
        }
      }
    }
    if (cur) {
      for (const auto& name : cur->listedDevices()) {
        listing_[name].insert(objectKey(cur->meta.ns, cur->meta.name));
      }
    }
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
  std::map<std::string, std::set<std::string>> listing_;  // device name -> claim keys
};

}  // namespace ker

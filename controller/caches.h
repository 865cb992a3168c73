#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/assume_cache.h"
#include "common/informer.h"
#include "common/kube_objects.h"
#include "controller/key_sets.h"
#include "controller/watched_pod.h"
#include "model/objects.h"
#include "model/resource_class.h"

namespace ker {

using CachedClaim = std::shared_ptr<const ExtendedResourceClaim>;
using CachedDevice = std::shared_ptr<const ExtendedResource>;
using CachedPod = std::shared_ptr<const WatchedPod>;
using CachedTemplate = std::shared_ptr<const ExtendedResourceClaimTemplate>;
using CachedClass = std::shared_ptr<const ExtendedResourceClass>;

// What the reconciler reads: the informers' caches in the binary, plain maps in tests, each
// under the writes of this process the watch has not delivered yet (AssumeCache): a decision made
// right after a write sees that write, never the copy it replaced.
class ControllerCaches {
 public:
  virtual ~ControllerCaches() = default;
  CachedClaim claim(const std::string& key) const {  // "namespace/name"
    return assumedClaims_.newest(key, watchedClaim(key));
  }
  CachedDevice device(const std::string& name) const {
    return assumedDevices_.newest(name, watchedDevice(name));
  }
  CachedPod pod(const std::string& key) const {  // "namespace/name"
    return assumedPods_.newest(key, watchedPod(key));
  }
  // The claims whose status lists this device name, allocated or lost, in key order.
  std::vector<CachedClaim> claimsListing(const std::string& device) const {
    std::vector<CachedClaim> out;
    for (auto& watched : watchedClaimsListing(device)) {
      CachedClaim c =
          assumedClaims_.newest(objectKey(watched->meta.ns, watched->meta.name), watched);
      const std::vector<std::string> listed = c->listedDevices();
      if (std::find(listed.begin(), listed.end(), device) != listed.end()) {
        out.push_back(std::move(c));
      }
    }
    return out;
  }
  // Writes of this process, as the API server stored them (nullptr is ignored).
  void assume(const CachedClaim& written) {
    if (written) {
      assumedClaims_.assume(objectKey(written->meta.ns, written->meta.name), written);
    }
  }
  void assume(const CachedDevice& written) {
    if (written) {
      assumedDevices_.assume(written->meta.name, written);
    }
  }
  void assume(const CachedPod& written) {
    if (written) {
      assumedPods_.assume(objectKey(written->meta.ns, written->meta.name), written);
    }
  }
  // The watch delivered the object's deletion.
  void forgetClaim(const std::string& key) { assumedClaims_.forget(key); }
  void forgetDevice(const std::string& name) { assumedDevices_.forget(name); }
  void forgetPod(const std::string& key) { assumedPods_.forget(key); }
  // Writes kept that the watch has not been seen to deliver.
  size_t assumed() const {
    return assumedClaims_.size() + assumedDevices_.size() + assumedPods_.size();
  }

  // The watch's own copies; pods() too, unresolved: the nudge reads only what kube-scheduler
  // writes of them.
  virtual std::vector<CachedPod> pods() const = 0;
  // "namespace/name"; nullptr when there is none (or templates are not watched).
  virtual CachedTemplate claimTemplate(const std::string& /*key*/) const { return nullptr; }
  // Every ExtendedResourceClass; none when classes are not watched.
  virtual std::vector<CachedClass> classes() const { return {}; }
  // Whether a Node of this name exists; nullopt when Nodes are not watched.
  virtual std::optional<bool> nodeRegistered(const std::string& /*name*/) const {
    return std::nullopt;
  }
  // The watch delivered the deletion of the pod with this UID. UIDs are never reused, so that
  // pod's absence is as certain as a live read would make it.
  virtual bool podDeleted(const std::string& uid) const = 0;
  // How the watch last saw a claim it delivered the deletion of, once: nullptr afterwards, or
  // when there was none.
  virtual CachedClaim takeDeletedClaim(const std::string& /*key*/) { return nullptr; }

 protected:
  virtual CachedClaim watchedClaim(const std::string& key) const = 0;
  virtual CachedDevice watchedDevice(const std::string& name) const = 0;
  virtual CachedPod watchedPod(const std::string& key) const = 0;
  // The claims the watch last showed listing the device, in key order.
  virtual std::vector<CachedClaim> watchedClaimsListing(const std::string& device) const = 0;

 private:
  AssumeCache<ExtendedResourceClaim> assumedClaims_;
  AssumeCache<ExtendedResource> assumedDevices_;
  AssumeCache<WatchedPod> assumedPods_;
};

class InformerCaches : public ControllerCaches {
 public:
  InformerCaches(const Informer<WatchedPod>& pods, const Informer<ExtendedResourceClaim>& claims,
                 const Informer<ExtendedResource>& devices)
      : pods_(pods), claims_(claims), devices_(devices) {}

  std::vector<CachedPod> pods() const override { return pods_.list(); }
  CachedTemplate claimTemplate(const std::string& key) const override {
    return templates_ ? templates_->get(key) : nullptr;
  }
  void watchTemplates(const Informer<ExtendedResourceClaimTemplate>& templates) {
    templates_ = &templates;
  }
  std::vector<CachedClass> classes() const override {
    return classes_ ? classes_->list() : std::vector<CachedClass>{};
  }
  void watchClasses(const Informer<ExtendedResourceClass>& classes) { classes_ = &classes; }
  std::optional<bool> nodeRegistered(const std::string& name) const override {
    return nodes_ ? std::optional<bool>(nodes_->get(name) != nullptr) : std::nullopt;
  }
  void watchNodes(const Informer<Node>& nodes) { nodes_ = &nodes; }
  bool podDeleted(const std::string& uid) const override {
    std::lock_guard lock(mu_);
    return deletedPods_.count(uid) > 0;
  }
  CachedClaim takeDeletedClaim(const std::string& key) override {
    std::lock_guard lock(mu_);
    auto it = deletedClaims_.find(key);
    if (it == deletedClaims_.end()) {
      return nullptr;
    }
    CachedClaim last = std::move(it->second);
    deletedClaims_.erase(it);
    return last;
  }
  // The keys of the claims that name this pod UID among their holders.
  std::set<std::string> claimsHeldBy(const std::string& podUid) const {
    std::lock_guard lock(mu_);
    return claimsByHolder_.of(podUid);
  }

  // The indexes follow the watch: called from the informers' handlers with each claim's
  // previous and current version (nullptr for none), and each pod deletion.
  void claimChanged(const ExtendedResourceClaim* old, const ExtendedResourceClaim* cur) {
    std::lock_guard lock(mu_);
    indexListed(old, cur);
    indexHolder(old, cur);
    if (cur) {
      deletedClaims_.erase(objectKey(cur->meta.ns, cur->meta.name));
    }
  }
  // The devices the watch last showed with a claimRef to the claim `key`, whether or not the
  // claim lists them: those a deleted claim leaves to be freed.
  std::vector<std::string> devicesNaming(const std::string& key) const {
    std::lock_guard lock(mu_);
    const std::set<std::string> names = naming_.of(key);
    return {names.begin(), names.end()};
  }
  // Called from the device informer's handlers, as claimChanged is.
  void indexDevice(const ExtendedResource* old, const ExtendedResource* cur) {
    std::lock_guard lock(mu_);
    if (old && old->claimRef) {
      naming_.remove(objectKey(old->claimRef->ns, old->claimRef->name), old->meta.name);
    }
    if (cur && cur->claimRef) {
      naming_.add(objectKey(cur->claimRef->ns, cur->claimRef->name), cur->meta.name);
    }
  }
  // `remember`: kept for takeDeletedClaim, which only a running controller's workers call (a
  // standby's copies would pile up).
  void claimDeleted(const CachedClaim& last, bool remember) {
    claimChanged(last.get(), nullptr);
    if (remember) {
      std::lock_guard lock(mu_);
      deletedClaims_[objectKey(last->meta.ns, last->meta.name)] = last;
    }
  }
  // Kept only for pods that hold claims, and forgotten once no claim names them.
  void podDeleted(const std::string& uid) {
    std::lock_guard lock(mu_);
    if (claimsByHolder_.contains(uid)) {
      deletedPods_.insert(uid);
    }
  }

 protected:
  std::vector<CachedClaim> watchedClaimsListing(const std::string& device) const override {
    std::set<std::string> keys;
    {
      std::lock_guard lock(mu_);
      keys = listing_.of(device);
    }
    std::vector<CachedClaim> out;
    for (const auto& key : keys) {
      if (auto c = claims_.get(key)) {
        out.push_back(std::move(c));
      }
    }
    return out;
  }

  CachedClaim watchedClaim(const std::string& key) const override { return claims_.get(key); }
  CachedDevice watchedDevice(const std::string& name) const override { return devices_.get(name); }
  CachedPod watchedPod(const std::string& key) const override { return pods_.get(key); }

 private:
  void indexListed(const ExtendedResourceClaim* old, const ExtendedResourceClaim* cur) {
    if (old) {
      for (const auto& name : old->listedDevices()) {
        listing_.remove(name, objectKey(old->meta.ns, old->meta.name));
      }
    }
    if (cur) {
      for (const auto& name : cur->listedDevices()) {
        listing_.add(name, objectKey(cur->meta.ns, cur->meta.name));
      }
    }
  }
  void indexHolder(const ExtendedResourceClaim* old, const ExtendedResourceClaim* cur) {
    const std::vector<PodRef> was = old ? old->holders() : std::vector<PodRef>{};
    const std::vector<PodRef> now = cur ? cur->holders() : std::vector<PodRef>{};
    auto has = [](const std::vector<PodRef>& refs, const std::string& uid) {
      return std::any_of(refs.begin(), refs.end(), [&](const PodRef& r) { return r.uid == uid; });
    };
    // A holder in both is left as it is: removing and re-adding it would forget that it was
    // seen deleted.
    for (const auto& ref : was) {
      if (has(now, ref.uid)) {
        continue;
      }
      if (claimsByHolder_.remove(ref.uid, objectKey(old->meta.ns, old->meta.name))) {
        deletedPods_.erase(ref.uid);
      }
    }
    for (const auto& ref : now) {
      if (!has(was, ref.uid)) {
        claimsByHolder_.add(ref.uid, objectKey(cur->meta.ns, cur->meta.name));
      }
    }
  }

  const Informer<WatchedPod>& pods_;
  const Informer<ExtendedResourceClaim>& claims_;
  const Informer<ExtendedResource>& devices_;
  const Informer<ExtendedResourceClaimTemplate>* templates_ = nullptr;  // set before start
  const Informer<ExtendedResourceClass>* classes_ = nullptr;            // set before start
  const Informer<Node>* nodes_ = nullptr;                               // set before start
  // The indexes the watch keeps, beside the informers' own caches.
  mutable std::mutex mu_;
  std::unordered_set<std::string> deletedPods_;       // holder UIDs
  KeySets listing_;                                   // device name -> claim keys
  KeySets claimsByHolder_;                            // pod UID -> claim keys
  KeySets naming_;                                    // claim key -> device names
  std::map<std::string, CachedClaim> deletedClaims_;  // key -> last seen
};

}  // namespace ker

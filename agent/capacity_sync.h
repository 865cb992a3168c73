#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "agent/advertised_names.h"
#include "agent/agent_metrics.h"
#include "agent/capacity.h"
#include "agent/node_file.h"
#include "common/api_client.h"
#include "common/assume_cache.h"
#include "common/backoff.h"
#include "common/informer.h"
#include "model/resource_class.h"

namespace ker::agent {

// Keeps the node's status.capacity and status.allocatable showing planCapacity: one thread,
// woken by a change of the classes or of the node object (the kubelet zeroes extended resources
// it does not know when it registers again) and after each health check. It writes only when
// the node shows something else (capacityPatch), with a JSON merge patch of the changed names.
//
// The names it advertised and no longer should (a class deleted or renamed, superseded) are
// removed from its record of the names it wrote (a device plugin's names are never the agent's
// to remove). The record is a file of the node (AdvertisedNames), so an agent that restarts
// also removes the name of a class deleted while it was not running. A name enters the record
// before the write that advertises it and leaves it after the write that drops it succeeded
// (advertisedDuringWrite): stopping at any point forgets no name the node may show.
class CapacitySync {
 public:
  struct Options {
    std::string node;
    std::string stateDir;  // the folder of the record (AdvertisedNames)
    Backoff backoff = {};  // the waits between failed writes
    int attempts = 5;  // writes tried per turn; then the next change or health check tries again
  };
  using Health = std::shared_ptr<const std::map<std::string, bool>>;
  // nodes: this node only (field selector metadata.name). inventory: NodeSync::inventory (nothing
  // is written while it is nullptr). health: NodeSync::health.
  CapacitySync(Options options, ApiClient& api, const Informer<ExtendedResourceClass>& classes,
               const Informer<NodeResources>& nodes,
               std::function<std::shared_ptr<const NodeFile>()> inventory,
               std::function<Health()> health, AgentMetrics& metrics);
  ~CapacitySync();  // stop()
  CapacitySync(const CapacitySync&) = delete;
  CapacitySync& operator=(const CapacitySync&) = delete;

  void start();
  void stop();
  void wake();

 private:
  void run();
  // One plan and, when the node shows something else, one write: false when the write failed
  // or could not be recorded first.
  bool syncOnce();
  // Replaces the record (and advertised_) with `names`: false, logged, when the file is not
  // written (advertised_ is then left as it was).
  bool record(std::set<std::string> names);

  const Options options_;
  ApiClient& api_;
  const Informer<ExtendedResourceClass>& classes_;
  const Informer<NodeResources>& nodes_;
  const std::function<std::shared_ptr<const NodeFile>()> inventory_;
  const std::function<Health()> health_;
  AgentMetrics& metrics_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;     // guarded by mu_
  bool stopping_ = false;  // guarded by mu_

  // Used by the sync thread only.
  const AdvertisedNames record_;
  std::set<std::string> advertised_;  // what record_'s file holds
  // The node as the last write left it, until the watch shows that write: the next turn plans
  // against it rather than against the copy the write replaced, and so writes nothing again.
  AssumeCache<NodeResources> written_;
  std::thread thread_;
};

}  // namespace ker::agent

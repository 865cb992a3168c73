#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "agent/agent_metrics.h"
#include "agent/device_probe.h"
#include "agent/health.h"
#include "agent/inventory_plan.h"
#include "agent/node_file.h"
#include "common/api_client.h"
#include "common/event_recorder.h"
#include "common/informer.h"

namespace ker::agent {

// Keeps the API in step with the node: reads the node file (again whenever it changes), finds
// the devices of its discover sources (once per period), publishes them all as
// ExtendedResources (planInventory), and reports their health (decideHealth). One thread,
// woken by a timer or by a change to this node's devices.
class NodeSync {
 public:
  struct Options {
    std::string node;
    std::string nodeFile;
    // The agent's folder on the node: the last node file that parsed is kept there, so an agent
    // that starts while the file is invalid or unreadable still knows the devices it published
    // (and the DeviceGuard their device nodes). "" keeps nothing.
    std::string stateDir;
    std::chrono::milliseconds period{std::chrono::seconds(5)};
    size_t maxFileBytes = size_t{1} << 20;
    // Called on the sync thread after each sync that checked the devices' health.
    std::function<void()> healthChecked = {};
  };
  // devices: the ExtendedResources with managedSelector(node); claims: those bound on this
  // node (for the holder of an unhealthy device).
  NodeSync(Options options, ApiClient& api, const Informer<ExtendedResource>& devices,
           const Informer<ExtendedResourceClaim>& claims, const DeviceProbe& probe,
           EventRecorder& events, AgentMetrics& metrics);
  ~NodeSync();  // stop()
  NodeSync(const NodeSync&) = delete;
  NodeSync& operator=(const NodeSync&) = delete;

  // Reads the file once before returning (so injection has an inventory from the start), then
  // syncs in the background. Call it once the device cache has synced, or waited for in vain:
  // whether a node without a file has devices depends on what it shows (useNoFile).
  void start();
  void stop();
  // Sync soon (a device changed in the API).
  void wake();

  // The devices in force: the last node file that parsed (its kept copy before one did since
  // the start) with the devices its sources found; an empty one when the node has no node file,
  // none was kept and none of its devices is published; nullptr otherwise, when the agent knows
  // none of the node's devices (and gives none, and fails closed: decideInjection). See useNoFile.
  std::shared_ptr<const NodeFile> inventory() const;
  // Whether the file in force is the one on disk (false while the file on disk is invalid,
  // unreadable, or missing after one parsed or while devices of the node are published); true
  // for a node with no file and no devices.
  bool fileCurrent() const { return fileCurrent_.load(); }
  // The last health check: device name -> healthy, for the devices of the inventory this agent
  // has published; nullptr before the first check.
  std::shared_ptr<const std::map<std::string, bool>> health() const;

 private:
  void run();
  void syncOnce();
  void reloadFile();
  // Before any node file parsed since the start: puts the kept copy of the last one that did in
  // force. Looks once, or again at each sync while the copy cannot be read (not when it is too
  // large, which cannot change).
  void useKeptFile();
  // Before any node file parsed since the start, and without a kept copy: a node that has no
  // node file and no published device has no devices (an empty inventory in force); one whose
  // file is invalid or unreadable, or whose devices are published (a file was deleted), may
  // have any, so nothing is in force (and the guard fails closed).
  void useNoFile();
  // Runs the file's discover sources when the file changed or a period passed since they last
  // ran, and puts the file with what they found in force. A source that fails keeps what it
  // found last, so a command's hiccup withdraws nothing; so does a CDI spec file that does not
  // read (withLastReadable).
  void refreshDiscovery();
  // `specs` and, for each of `failedFiles` (being rewritten by its vendor, say), the spec that
  // file gave when it last read, so that its devices stay; a file gone from the directories
  // is forgotten.
  std::vector<CdiSpec> withLastReadable(std::vector<CdiSpec> specs,
                                        const std::vector<std::string>& failedFiles);
  void applyInventory(const InventoryPlan& plan);
  std::optional<ExtendedResource> readLive(const std::string& name);  // nullopt when unreadable
  // A name in the node file that another object (another node's device, one made by hand)
  // has: logged and posted as a DeviceNameTaken event on that object, once per name.
  void reportNameTaken(const std::string& name, const std::optional<ExtendedResource>& holder);
  // The health of the file's devices as probed, and of unlistedHeld (devices the file no longer
  // lists that a claim holds) as unhealthy.
  void checkHealth(const NodeFile& file, const std::vector<std::string>& unlistedHeld);
  // While no node file is in force (inventory() is nullptr) the agent gives no device, so what
  // the extender would offer (offerable, and listed by no Bound or Lost claim of the node) is
  // marked unhealthy, which takes it out of offer: pods go to other nodes or wait, rather than
  // being placed here and refused. Held devices stay with their pods, and a device a claim
  // lists stays Available for the controller to bind back. The first health check of a file
  // that parses marks them healthy again.
  void withholdFreeDevices();
  // Writes what decideHealth makes of one observation of a published device.
  void reportHealth(const ExtendedResource& device, HealthObservation seen);
  // A Warning event with the mark as reason on the claim the device names and on its holders.
  void warnHolder(const ExtendedResource& device, Reason mark, const std::string& message);

  const Options options_;
  ApiClient& api_;
  const Informer<ExtendedResource>& devices_;
  const Informer<ExtendedResourceClaim>& claims_;
  const DeviceProbe& probe_;
  EventRecorder& events_;
  AgentMetrics& metrics_;
  std::atomic<bool> fileCurrent_{false};

  mutable std::mutex inventoryMu_;
  std::shared_ptr<const NodeFile> inventory_;                  // guarded by inventoryMu_
  std::shared_ptr<const std::map<std::string, bool>> health_;  // guarded by inventoryMu_

  std::mutex wakeMu_;
  std::condition_variable wakeCv_;
  bool woken_ = false;     // guarded by wakeMu_
  bool stopping_ = false;  // guarded by wakeMu_

  // Used by the sync thread only.
  std::optional<std::string> fileText_;   // the text last read, valid or not
  std::shared_ptr<const NodeFile> file_;  // the file last parsed, before discovery
  bool fileChanged_ = false;              // since discovery last ran
  bool fileLoaded_ = false;     // a file parsed since the agent started (or its kept copy)
  bool keptFileTried_ = false;  // useKeptFile has looked
  bool keptAbsent_ = false;     // and found no kept copy
  bool fileMissing_ = false;    // the node file does not exist (at the last read)
  std::string keptReadError_;   // why the kept copy could not be read, last logged
  std::chrono::steady_clock::time_point lastDiscovery_;
  std::vector<std::vector<DeviceSpec>> foundBySource_;  // the last good result of each source
  std::map<std::string, CdiSpec> lastCdiSpecs_;  // each CDI spec file as it last read, by file
  std::string discoveryProblems_;                // last logged, to log changes only
  std::string readError_;  // why the file could not be read last time, if it could not
  // What useNoFile last logged: the file exists, or it is missing and the node has no devices,
  // its kept copy cannot be used, or devices of the node are published.
  enum class NoFile { kNotMissing, kNoDevices, kKeptCopyUnusable, kDevicesPublished };
  NoFile noFileLogged_ = NoFile::kNotMissing;
  std::map<std::string, bool> lastHealthy_;     // device name -> last observation
  std::set<std::string> conflicts_;             // names taken by objects the agent does not own
  std::map<std::string, std::string> waiting_;  // InventoryPlan::waiting last logged
  std::thread thread_;
};

}  // namespace ker::agent

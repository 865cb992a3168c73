#include "agent/node_sync.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "agent/discovery.h"
#include "agent/health.h"
#include "agent/state_file.h"
#include "common/comma_list.h"
#include "common/logging.h"
#include "common/resource.h"
#include "common/status.h"
#include "model/device_transitions.h"
#include "model/event_reasons.h"
#include "model/objects.h"
#include "model/suitability.h"
#include "model/typed_client.h"

namespace ker::agent {

namespace {

constexpr const char* kKeptFileName = "last-node-file.yaml";

}  // namespace

NodeSync::NodeSync(Options options, ApiClient& api, const Informer<ExtendedResource>& devices,
                   const Informer<ExtendedResourceClaim>& claims, const DeviceProbe& probe,
                   EventRecorder& events, AgentMetrics& metrics)
    : options_(std::move(options)),
      api_(api),
      devices_(devices),
      claims_(claims),
      probe_(probe),
      events_(events),
      metrics_(metrics),
      file_(std::make_shared<const NodeFile>()) {}

NodeSync::~NodeSync() {
  stop();
}

void NodeSync::start() {
  reloadFile();
  useKeptFile();
  useNoFile();
  refreshDiscovery();
  thread_ = std::thread([this] { run(); });
}

void NodeSync::stop() {
  {
    std::lock_guard lock(wakeMu_);
    stopping_ = true;
  }
  wakeCv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void NodeSync::wake() {
  {
    std::lock_guard lock(wakeMu_);
    woken_ = true;
  }
  wakeCv_.notify_all();
}

std::shared_ptr<const NodeFile> NodeSync::inventory() const {
  std::lock_guard lock(inventoryMu_);
  return inventory_;
}

std::shared_ptr<const std::map<std::string, bool>> NodeSync::health() const {
  std::lock_guard lock(inventoryMu_);
  return health_;
}

void NodeSync::run() {
  while (true) {
    {
      std::unique_lock lock(wakeMu_);
      wakeCv_.wait_for(lock, options_.period, [this] { return woken_ || stopping_; });
      if (stopping_) {
        return;
      }
      woken_ = false;
    }
    try {
      syncOnce();
    } catch (const std::exception& e) {
      log::error("node sync failed", {{"error", e.what()}});
    }
  }
}

void NodeSync::syncOnce() {
  reloadFile();
  useKeptFile();
  useNoFile();
  refreshDiscovery();
  if (!devices_.hasSynced()) {
    return;  // planning against a partial cache would create what exists
  }
  if (!fileLoaded_) {
    // Planning against no file (unreadable or invalid since the start, and no kept copy)
    // would withdraw every free device an earlier run published.
    if (!inventory()) {
      withholdFreeDevices();
    }
    return;
  }
  auto file = inventory();
  if (!file) {
    return;  // the file parsed, but discovery failed before putting it in force
  }
  std::vector<const ExtendedResource*> published;
  auto cached = devices_.list();
  for (const auto& d : cached) {
    published.push_back(d.get());
  }
  const InventoryPlan plan = planInventory(*file, options_.node, published);
  applyInventory(plan);
  if (claims_.hasSynced()) {
    checkHealth(*file, plan.unlistedHeld);
    if (options_.healthChecked) {
      options_.healthChecked();
    }
  }
}

void NodeSync::reloadFile() {
  std::optional<std::string> read;
  Status st = readWholeFile(options_.nodeFile, options_.maxFileBytes, read);
  fileMissing_ = st.ok() && !read;
  if (fileMissing_ && !fileLoaded_) {
    fileText_.reset();
    return;  // what no file means before any parsed is useNoFile's to say
  }
  if (fileMissing_) {
    st = Status::notFound("no file " + options_.nodeFile);
  }
  if (!st.ok()) {
    if (readError_ != st.message()) {
      readError_ = st.message();
      metrics_.nodeFileErrors.inc();
      log::error("node file unreadable; keeping the devices last read",
                 {{"file", options_.nodeFile}, {"error", st.message()}});
    }
    fileCurrent_ = false;
    fileText_.reset();  // parse it again once it is back, even unchanged
    return;
  }
  const std::string text = std::move(*read);
  readError_.clear();
  if (text == fileText_) {
    return;
  }
  fileText_ = text;
  try {
    file_ = std::make_shared<const NodeFile>(parseNodeFile(text));
    fileChanged_ = true;
    fileCurrent_ = true;
    fileLoaded_ = true;
    log::info("node file loaded", {{"file", options_.nodeFile},
                                   {"devices", file_->devices.size()},
                                   {"discoverSources", file_->discover.size()}});
  } catch (const std::invalid_argument& e) {
    fileCurrent_ = false;
    metrics_.nodeFileErrors.inc();
    log::error("node file invalid; keeping the devices last read",
               {{"file", options_.nodeFile}, {"error", e.what()}});
    return;
  }
  if (options_.stateDir.empty()) {
    return;
  }
  const std::string kept = stateFilePath(options_.stateDir, kKeptFileName);
  std::optional<std::string> keptText;
  if (readWholeFile(kept, options_.maxFileBytes, keptText).ok() && keptText == text) {
    return;  // kept already (the same file at a restart)
  }
  if (Status written = writeStateFile(options_.stateDir, kKeptFileName, text); !written.ok()) {
    // An older copy must not outlive it: the next start with a broken file would put older
    // devices in force and withdraw those added since.
    std::error_code ec;
    std::filesystem::remove(kept, ec);
    log::error("cannot keep a copy of the node file; the older copy is removed",
               {{"error", written.message()}, {"removeError", ec ? ec.message() : ""}});
  }
}

void NodeSync::useKeptFile() {
  if (fileLoaded_ || keptFileTried_ || options_.stateDir.empty()) {
    return;
  }
  const std::string path = stateFilePath(options_.stateDir, kKeptFileName);
  std::optional<std::string> text;
  if (Status st = readWholeFile(path, options_.maxFileBytes, text); !st.ok()) {
    keptFileTried_ = st.code() == StatusCode::kInvalid;  // too large: it cannot change
    if (keptReadError_ != st.message()) {                // otherwise tried again at the next sync
      keptReadError_ = st.message();
      log::error("cannot read the kept copy of the last node file that parsed",
                 {{"error", st.message()}});
    }
    return;
  }
  keptFileTried_ = true;
  if (!text) {
    keptAbsent_ = true;
    return;  // no file ever parsed here
  }
  try {
    file_ = std::make_shared<const NodeFile>(parseNodeFile(*text));
  } catch (const std::invalid_argument& e) {
    log::error("the kept copy of the last node file that parsed is invalid; not used",
               {{"file", path}, {"error", e.what()}});
    return;
  }
  fileChanged_ = true;
  fileLoaded_ = true;
  log::warn(
      "node file not usable since the start; the devices in force are those of the last "
      "one that parsed, as kept",
      {{"file", options_.nodeFile},
       {"kept", path},
       {"devices", file_->devices.size()},
       {"discoverSources", file_->discover.size()}});
}

void NodeSync::useNoFile() {
  if (fileLoaded_) {
    return;
  }
  const bool noKeptCopy = options_.stateDir.empty() || keptAbsent_;
  // Devices published for this node show it had a file once (this agent publishes them only
  // from one): without it their device nodes are unknown. Before the cache syncs nothing is
  // known either way, and failing closed then would refuse /dev on every node without devices
  // whose agent starts while the API is out of reach; AgentApp starts this after that wait.
  const size_t published = devices_.hasSynced() ? devices_.size() : 0;
  NoFile state = NoFile::kNotMissing;
  if (fileMissing_) {
    state = !noKeptCopy      ? NoFile::kKeptCopyUnusable
            : published != 0 ? NoFile::kDevicesPublished
                             : NoFile::kNoDevices;
  }
  std::shared_ptr<const NodeFile> next;
  if (state == NoFile::kNoDevices) {
    next = std::make_shared<const NodeFile>();
  }
  if (fileMissing_) {
    fileCurrent_ = next != nullptr;  // no file, and no devices in force: as the node says
  }
  if (state != noFileLogged_) {
    noFileLogged_ = state;
    switch (state) {
      case NoFile::kNotMissing:
        break;
      case NoFile::kNoDevices:
        log::info("no node file; this node has no devices until one is written",
                  {{"file", options_.nodeFile}});
        break;
      case NoFile::kKeptCopyUnusable:
        metrics_.nodeFileErrors.inc();
        log::error(
            "no node file, and the kept copy of the last one that parsed cannot be used; "
            "no device is in force",
            {{"file", options_.nodeFile}});
        break;
      case NoFile::kDevicesPublished:
        metrics_.nodeFileErrors.inc();
        log::error(
            "no node file and no kept copy, but devices of this node are published; no device "
            "is in force until a node file is written",
            {{"file", options_.nodeFile}, {"published", published}});
        break;
    }
  }
  std::lock_guard lock(inventoryMu_);
  if (static_cast<bool>(inventory_) != static_cast<bool>(next)) {
    inventory_ = std::move(next);
  }
}

std::vector<CdiSpec> NodeSync::withLastReadable(std::vector<CdiSpec> specs,
                                                const std::vector<std::string>& failedFiles) {
  std::map<std::string, CdiSpec> readable;
  for (const auto& spec : specs) {
    readable.emplace(spec.file, spec);
  }
  for (const auto& file : failedFiles) {
    if (auto last = lastCdiSpecs_.find(file); last != lastCdiSpecs_.end()) {
      specs.push_back(last->second);
      readable.emplace(file, last->second);
    }
  }
  lastCdiSpecs_ = std::move(readable);
  return specs;
}

void NodeSync::refreshDiscovery() {
  const auto now = std::chrono::steady_clock::now();
  if (!fileChanged_ && (file_->discover.empty() || now - lastDiscovery_ < options_.period)) {
    return;
  }
  if (fileChanged_) {
    foundBySource_.assign(file_->discover.size(), {});
  }
  lastDiscovery_ = now;
  std::vector<std::string> problems;
  std::optional<CdiDevices> cdi;
  for (size_t i = 0; i < file_->discover.size(); ++i) {
    const DiscoverySource& source = file_->discover[i];
    const std::string at = "discover[" + std::to_string(i) + "]";
    if (!source.cdiKind.empty()) {
      if (!cdi) {
        cdi = probe_.cdiDevices();
        for (const auto& p : cdi->problems) {
          problems.push_back(at + ": CDI spec " + p);
        }
        cdi->specs = withLastReadable(std::move(cdi->specs), cdi->failedFiles);
      }
      foundBySource_[i] = devicesFromCdi(source, cdi->specs, options_.node);
      continue;
    }
    const CommandResult r = probe_.runDiscoveryCommand(source);
    if (!r.succeeded() || r.truncated) {
      problems.push_back(at + ": " +
                         (r.truncated ? "discovery command printed over 1 MiB"
                                      : r.describe("discovery command", source.timeout)));
      continue;
    }
    try {
      foundBySource_[i] = devicesFromCommand(source, r.output, options_.node);
    } catch (const std::invalid_argument& e) {
      problems.push_back(at + ": discovery command output: " + e.what());
    }
  }
  std::vector<DeviceSpec> found;
  for (const auto& devices : foundBySource_) {
    found.insert(found.end(), devices.begin(), devices.end());
  }
  auto next = std::make_shared<const NodeFile>(withDiscovered(*file_, found, problems));
  fileChanged_ = false;  // only now: until the file is in force, the next sync tries again
  const std::string problemText = joinCommaList(problems);
  if (problemText != discoveryProblems_) {
    discoveryProblems_ = problemText;
    if (!problems.empty()) {
      log::warn("device discovery problems; keeping what each failing source found last",
                {{"problems", problems}});
    }
  }
  if (const auto current = inventory(); current && *next == *current) {
    return;
  }
  metrics_.devices.set(static_cast<double>(next->devices.size()));
  {
    std::lock_guard lock(inventoryMu_);
    inventory_ = std::move(next);
  }
  log::info("devices in force", {{"listed", file_->devices.size()},
                                 {"found", inventory()->devices.size() - file_->devices.size()}});
}

void NodeSync::applyInventory(const InventoryPlan& plan) {
  auto count = [this](const char* op, const char* result) {
    metrics_.inventoryWrites.labels({op, result}).inc();
  };
  for (const auto& [name, old] : plan.waiting) {
    if (auto last = waiting_.find(name); last == waiting_.end() || last->second != old) {
      log::info("device waits for its object under its old name to go before it is published",
                {{"device", name}, {"oldName", old}});
    }
  }
  waiting_ = plan.waiting;
  for (const auto& c : plan.creates) {
    const std::string name = c.object["metadata"]["name"];
    const Status sent = callApi([&] { api_.create(resources::kExtendedResources, "", c.object); });
    const bool exists = sent.code() == StatusCode::kAlreadyExists;
    std::optional<ExtendedResource> holder;
    if (exists) {
      holder = readLive(name);
    }
    if (sent.ok()) {
      count("create", "success");
      conflicts_.erase(name);
      log::info("published device", {{"device", name}});
    } else if (holder && publishedBy(*holder, options_.node)) {
      count("create", "exists");  // created by an earlier sync the cache had not shown yet
    } else if (exists) {
      // Another object (by hand, or another node's) has the name: never taken over.
      count("create", "conflict");
      if (conflicts_.insert(name).second) {
        reportNameTaken(name, holder);
      }
    } else {
      count("create", "error");
      log::warn("publishing device failed", {{"device", name}, {"error", sent.message()}});
    }
  }
  for (const auto& u : plan.updates) {
    const std::string name = u.object["metadata"]["name"];
    if (const Status sent =
            callApi([&] { api_.update(resources::kExtendedResources, "", u.object); });
        sent.ok()) {
      count("update", "success");
      log::info("updated device spec", {{"device", name}});
    } else {
      count("update", sent.isConflict() ? "conflict" : "error");
      log::warn("updating device failed", {{"device", name}, {"error", sent.message()}});
    }
  }
  for (const auto& d : plan.deletes) {
    const Status sent = callApi([&] {
      api_.remove(resources::kExtendedResources, "", d.name,
                  {.preconditionUid = d.uid, .preconditionResourceVersion = d.resourceVersion});
    });
    if (sent.ok()) {
      count("delete", "success");
      lastHealthy_.erase(d.name);
      log::info("withdrew device no longer in the node file", {{"device", d.name}});
    } else if (!sent.isNotFound()) {
      count("delete", sent.isConflict() ? "conflict" : "error");
      log::warn("withdrawing device failed", {{"device", d.name}, {"error", sent.message()}});
    }
  }
}

std::optional<ExtendedResource> NodeSync::readLive(const std::string& name) {
  ExtendedResource live;
  if (!getObject(api_, name, live).ok()) {
    return std::nullopt;
  }
  return live;
}

void NodeSync::reportNameTaken(const std::string& name,
                               const std::optional<ExtendedResource>& holder) {
  std::string owner = "an object this agent does not manage";
  if (holder) {
    auto node = holder->meta.labels.find(kNodeLabel);
    if (node != holder->meta.labels.end()) {
      owner = "node " + node->second + "'s device";
    }
  }
  log::warn("device name taken; not published", {{"device", name}, {"takenBy", owner}});
  events_.record({kApiVersion, "ExtendedResource", "", name, holder ? holder->meta.uid : ""},
                 EventType::kWarning, event_reason::kDeviceNameTaken,
                 "node " + options_.node + "'s node file lists " + name + ", which is " + owner +
                     ": not published (rename it in one of the node files)");
}

void NodeSync::checkHealth(const NodeFile& file, const std::vector<std::string>& unlistedHeld) {
  // The specs are read once for all devices, and only when one names a CDI device.
  std::set<std::string> cdiDevices;
  if (std::any_of(file.devices.begin(), file.devices.end(),
                  [](const DeviceSpec& d) { return !d.cdiDevice.empty(); })) {
    cdiDevices = probe_.cdiDevices().names;
  }
  auto observed = std::make_shared<std::map<std::string, bool>>();
  for (const auto& spec : file.devices) {
    if (auto device = devices_.get(spec.name)) {
      HealthObservation seen = probe_.check(spec, cdiDevices);
      (*observed)[spec.name] = seen.healthy;
      reportHealth(*device, std::move(seen));
    }
  }
  for (const auto& name : unlistedHeld) {
    if (auto device = devices_.get(name)) {
      reportHealth(*device, {.healthy = false,
                             .mark = Reason::kDeviceNotListed,
                             .problem = "not listed in node " + options_.node +
                                        "'s node file any more: kept while its claim holds it, " +
                                        "withdrawn once freed"});
    }
  }
  std::lock_guard lock(inventoryMu_);
  health_ = std::move(observed);
}

void NodeSync::withholdFreeDevices() {
  if (!claims_.hasSynced()) {
    return;  // which devices a claim lists is not known yet
  }
  std::set<std::string> listed;
  for (const auto& claim : claims_.list()) {
    for (auto& name : claim->heldDevices()) {
      listed.insert(std::move(name));
    }
  }
  for (const auto& device : devices_.list()) {
    const auto named =
        namedAllocation(*device, [&](const std::string& key) { return claims_.get(key); });
    if (offerable(*device, named) && listed.count(device->meta.name) == 0) {
      reportHealth(*device, {.healthy = false,
                             .mark = Reason::kNoNodeFile,
                             .problem = "not offered: the node agent of " + options_.node +
                                        " has no node file in force, and gives no device"});
    }
  }
}

void NodeSync::reportHealth(const ExtendedResource& device, HealthObservation seen) {
  const std::string& name = device.meta.name;
  auto last = lastHealthy_.find(name);
  seen.wasHealthy = last == lastHealthy_.end() || last->second;
  HealthAction action = decideHealth(
      device, seen,
      namedAllocation(device, [&](const std::string& key) { return claims_.get(key); }));
  lastHealthy_[name] = seen.healthy;
  if (std::holds_alternative<health_action::Nothing>(action)) {
    return;
  }
  if (auto* warn = std::get_if<health_action::WarnHolder>(&action)) {
    warnHolder(device, warn->mark, warn->message);
    metrics_.healthChanges.labels({"holder_warned"}).inc();
    return;
  }
  const auto* unhealthy = std::get_if<health_action::MarkUnhealthy>(&action);
  ExtendedResource next = device;
  if (const Status changed = unhealthy
                                 ? markDeviceUnhealthy(next, unhealthy->mark, unhealthy->message)
                                 : markDeviceHealthy(next);
      !changed.ok()) {
    // A decision at odds with the device it was made on: a fault of ours.
    log::error("status transition refused: nothing written", {{"error", changed.message()}});
    return;
  }
  if (const Status sent = writeStatus(api_, next, std::chrono::system_clock::now()); sent.ok()) {
    metrics_.healthChanges.labels({unhealthy ? "unhealthy" : "healthy"}).inc();
    log::info(!unhealthy                          ? "device healthy again"
              : next.phase == DevicePhase::kBound ? "allocated device unhealthy: kept by its pod"
                                                  : "device unhealthy: not offered",
              {{"device", name}, {"message", next.message}});
  } else {
    // A conflict is a bind or another write in between: the next sync decides again.
    lastHealthy_.erase(name);
    log::warn("writing device health failed", {{"device", name}, {"error", sent.message()}});
    return;
  }
  if (unhealthy && unhealthy->warning) {
    warnHolder(device, unhealthy->mark, *unhealthy->warning);
    metrics_.healthChanges.labels({"holder_warned"}).inc();
  }
}

void NodeSync::warnHolder(const ExtendedResource& device, Reason mark, const std::string& message) {
  if (!device.claimRef) {
    return;
  }
  const ClaimRef& ref = *device.claimRef;
  events_.record({kApiVersion, "ExtendedResourceClaim", ref.ns, ref.name, ref.uid},
                 EventType::kWarning, toString(mark), message);
  auto claim = claims_.get(objectKey(ref.ns, ref.name));
  for (const auto& holder : claim ? claim->holders() : std::vector<PodRef>{}) {
    events_.record({"v1", "Pod", ref.ns, holder.name, holder.uid}, EventType::kWarning,
                   toString(mark), message);
  }
  log::warn(
      "allocated device unhealthy; holder warned",
      {{"device", device.meta.name}, {"claim", objectKey(ref.ns, ref.name)}, {"message", message}});
}

}  // namespace ker::agent

#include "agent/capacity_sync.h"

#include "common/logging.h"
#include "common/resource.h"
#include "common/status.h"

namespace ker::agent {

CapacitySync::CapacitySync(Options options, ApiClient& api,
                           const Informer<ExtendedResourceClass>& classes,
                           const Informer<NodeResources>& nodes,
                           std::function<std::shared_ptr<const NodeFile>()> inventory,
                           std::function<Health()> health, AgentMetrics& metrics)
    : options_(std::move(options)),
      api_(api),
      classes_(classes),
      nodes_(nodes),
      inventory_(std::move(inventory)),
      health_(std::move(health)),
      metrics_(metrics),
      record_(options_.stateDir) {}

CapacitySync::~CapacitySync() {
  stop();
}

void CapacitySync::start() {
  thread_ = std::thread([this] { run(); });
}

void CapacitySync::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void CapacitySync::wake() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

void CapacitySync::run() {
  if (Status st = record_.load(advertised_); !st.ok()) {
    // Starting without the record costs at most a stale name on the node; refusing to start
    // would cost the node its agent.
    log::error(
        "advertised names not read: a name this agent advertised before and no class serves "
        "any more may stay on the node until removed by hand; the file is replaced at the "
        "next write",
        {{"node", options_.node}, {"error", st.message()}});
  } else if (!advertised_.empty()) {
    log::info("advertised names read",
              {{"node", options_.node}, {"file", record_.path()}, {"names", advertised_}});
  }
  while (true) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return woken_ || stopping_; });
      if (stopping_) {
        return;
      }
      woken_ = false;
    }
    for (int failures = 0;;) {
      bool done = false;
      try {
        done = syncOnce();
      } catch (const std::exception& e) {
        log::error("capacity sync failed", {{"error", e.what()}});
      }
      if (done) {
        break;
      }
      if (++failures >= options_.attempts) {
        log::warn("node capacity not written; trying again at the next change or health check",
                  {{"node", options_.node}, {"attempts", failures}});
        break;
      }
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, options_.backoff.next(failures - 1), [this] { return stopping_; })) {
        return;
      }
    }
  }
}

bool CapacitySync::syncOnce() {
  const Health health = health_();
  // Before the first health check every device would count as unhealthy, and a restarting
  // agent would zero what the node rightly shows.
  const auto inventory = inventory_();
  if (!classes_.hasSynced() || !nodes_.hasSynced() || !health || !inventory) {
    return true;
  }
  const auto node = written_.newest(options_.node, nodes_.get(options_.node));
  if (!node) {
    return true;
  }
  const Capacity desired = planCapacity(ClassTable(classes_.list()), *inventory, *health);
  std::set<std::string> names;
  for (const auto& [name, count] : desired) {
    names.insert(name);
  }
  const nlohmann::json patch = capacityPatch(desired, advertised_, *node);
  if (patch.empty()) {
    // The node shows the plan and none of the dropped names. A failure keeps more names
    // recorded than the node shows, which the next turn corrects.
    record(std::move(names));
    return true;
  }
  if (!record(advertisedDuringWrite(desired, advertised_))) {
    return false;
  }
  nlohmann::json reply;
  const Status sent = callApi([&] {
    reply = api_.patch(resources::kNodes, "", options_.node, PatchType::kMerge, patch, "status");
  });
  if (!sent.ok()) {
    metrics_.capacityWrites.labels({"error"}).inc();
    log::warn("writing node capacity failed",
              {{"node", options_.node}, {"patch", patch}, {"error", sent.message()}});
    return false;
  }
  metrics_.capacityWrites.labels({"success"}).inc();
  // The dropped names are gone from the node; should the record keep them, a later turn drops
  // them from it.
  record(std::move(names));
  written_.assume(options_.node,
                  std::make_shared<const NodeResources>(NodeResources::fromJson(reply)));
  log::info("node capacity written for the ExtendedResourceClasses",
            {{"node", options_.node}, {"status", patch["status"]}});
  return true;
}

bool CapacitySync::record(std::set<std::string> names) {
  if (names == advertised_) {
    return true;
  }
  if (Status st = record_.store(names); !st.ok()) {
    log::warn("advertised names not recorded",
              {{"node", options_.node}, {"names", names}, {"error", st.message()}});
    return false;
  }
  advertised_ = std::move(names);
  return true;
}

}  // namespace ker::agent

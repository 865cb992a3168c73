#include "common/leader_election.h"

#include <unistd.h>

#include <cstdio>
#include <random>
#include <stdexcept>

#include "common/api_error.h"
#include "common/logging.h"
#include "common/resource.h"

namespace ker {

namespace {

using json = nlohmann::json;

int64_t wholeSeconds(std::chrono::milliseconds d) {
  return std::chrono::ceil<std::chrono::seconds>(d).count();
}

std::string stringField(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t intField(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

}  // namespace

std::string defaultIdentity() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof host, "unknown");
  }
  std::random_device rd;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", static_cast<unsigned>(rd()));
  return std::string(host) + "_" + suffix;
}

void LeaderElector::validate(const LeaderElectionConfig& c) {
  if (c.identity.empty()) {
    throw std::invalid_argument("leader election: identity must not be empty");
  }
  if (c.retryPeriod.count() <= 0 || c.retryPeriod >= c.renewDeadline ||
      c.renewDeadline >= c.leaseDuration) {
    throw std::invalid_argument(
        "leader election: need 0 < retry period < renew deadline < lease duration");
  }
}

LeaderElector::LeaderElector(ApiClient& api, LeaderElectionConfig config, LeaderCallbacks callbacks)
    : api_(api), config_(std::move(config)), callbacks_(std::move(callbacks)) {
  validate(config_);
}

LeaderElector::~LeaderElector() {
  stop();
}

bool LeaderElector::tryAcquireOrRenew() {
  const SteadyTime now = config_.monotonic();
  const std::string nowText = formatMicroTime(config_.clock());
  json lease;
  try {
    lease = api_.get(resources::kLeases, config_.ns, config_.name);
  } catch (const ApiError& e) {
    if (!e.isNotFound()) {
      log::warn("reading the lease failed", {{"lease", config_.name}, {"error", e.what()}});
      return false;
    }
    json fresh = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", config_.name}, {"namespace", config_.ns}}},
                  {"spec",
                   {{"holderIdentity", config_.identity},
                    {"leaseDurationSeconds", wholeSeconds(config_.leaseDuration)},
                    {"acquireTime", nowText},
                    {"renewTime", nowText},
                    {"leaseTransitions", 0}}}};
    try {
      api_.create(resources::kLeases, config_.ns, fresh);
    } catch (const std::exception& ce) {
      // Most likely another candidate created it first; the next round reads it.
      log::info("creating the lease failed", {{"lease", config_.name}, {"error", ce.what()}});
      return false;
    }
    std::lock_guard lock(mu_);
    observed_ = config_.identity;
    observedSpec_ = fresh["spec"].dump();
    observedAt_ = now;
    return true;
  } catch (const std::exception& e) {
    log::warn("reading the lease failed", {{"lease", config_.name}, {"error", e.what()}});
    return false;
  }

  if (!lease["spec"].is_object()) {
    lease["spec"] = json::object();
  }
  json& spec = lease["spec"];
  const std::string holder = stringField(spec, "holderIdentity");
  const int64_t durationSeconds = intField(spec, "leaseDurationSeconds");
  // A lease without a usable duration is held as long as ours would be.
  const auto duration = durationSeconds > 0
                            ? std::chrono::milliseconds(std::chrono::seconds(durationSeconds))
                            : config_.leaseDuration;
  std::string newLeader;
  bool expired;
  {
    std::lock_guard lock(mu_);
    if (holder != observed_) {
      observed_ = holder;
      newLeader = holder;
    }
    std::string seen = spec.dump();
    if (seen != observedSpec_) {
      observedSpec_ = std::move(seen);
      // Seen when the read returned, not when it was sent: a slow read may carry a renewal
      // made long after it started. (Expiry below still compares with the earlier `now`.)
      observedAt_ = config_.monotonic();
    }
    expired = holder.empty() || observedAt_ + duration < now;
  }
  if (!newLeader.empty() && newLeader != config_.identity && callbacks_.onNewLeader) {
    callbacks_.onNewLeader(newLeader);
  }
  if (holder != config_.identity && !expired) {
    return false;
  }
  if (holder != config_.identity) {
    spec["acquireTime"] = nowText;
    spec["leaseTransitions"] = intField(spec, "leaseTransitions") + 1;
  }
  spec["holderIdentity"] = config_.identity;
  spec["leaseDurationSeconds"] = wholeSeconds(config_.leaseDuration);
  spec["renewTime"] = nowText;
  try {
    api_.update(resources::kLeases, config_.ns, lease);
  } catch (const std::exception& e) {
    log::info("updating the lease failed", {{"lease", config_.name}, {"error", e.what()}});
    return false;
  }
  std::lock_guard lock(mu_);
  observed_ = config_.identity;
  observedSpec_ = spec.dump();
  observedAt_ = now;
  return true;
}

bool LeaderElector::step() {
  const SteadyTime started = config_.monotonic();
  const bool held = tryAcquireOrRenew();
  bool started_leading = false;
  bool lost = false;
  {
    std::lock_guard lock(mu_);
    if (held) {
      // The renewal is as old as the clock reading before the call: the lease says so too.
      lastRenew_ = started;
      started_leading = !leading_;
      leading_ = true;
    } else if (leading_ && config_.monotonic() - lastRenew_ >= config_.renewDeadline) {
      leading_ = false;
      lost = true;
    }
  }
  if (started_leading) {
    log::info("became leader",
              {{"lease", config_.ns + "/" + config_.name}, {"identity", config_.identity}});
    if (callbacks_.onStartedLeading) {
      callbacks_.onStartedLeading();
    }
  }
  if (lost) {
    loseLeadership();
    return false;
  }
  return true;
}

void LeaderElector::loseLeadership() {
  log::warn("leadership lost: the lease was not renewed within the renew deadline",
            {{"lease", config_.ns + "/" + config_.name}});
  if (callbacks_.onStoppedLeading) {
    callbacks_.onStoppedLeading();
  }
}

bool LeaderElector::isLeader() const {
  std::lock_guard lock(mu_);
  return leading_ && config_.monotonic() - lastRenew_ < config_.renewDeadline;
}

std::string LeaderElector::observedLeader() const {
  std::lock_guard lock(mu_);
  return observed_;
}

void LeaderElector::start() {
  std::lock_guard lock(mu_);
  if (!thread_.joinable() && !stopping_) {
    thread_ = std::thread([this] { run(); });
  }
}

void LeaderElector::run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    const bool alive = step();
    lock.lock();
    if (!alive) {
      return;
    }
    wake_.wait_for(lock, config_.retryPeriod, [this] { return stopping_; });
  }
}

void LeaderElector::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
  bool wasLeading;
  {
    std::lock_guard lock(mu_);
    wasLeading = leading_;
    leading_ = false;
  }
  if (wasLeading) {
    release();
    if (callbacks_.onStoppedLeading) {
      callbacks_.onStoppedLeading();
    }
  }
}

void LeaderElector::release() {
  try {
    json lease = api_.get(resources::kLeases, config_.ns, config_.name);
    if (!lease["spec"].is_object() ||
        stringField(lease["spec"], "holderIdentity") != config_.identity) {
      return;
    }
    const std::string nowText = formatMicroTime(config_.clock());
    lease["spec"]["holderIdentity"] = "";
    lease["spec"]["leaseDurationSeconds"] = 1;
    lease["spec"]["renewTime"] = nowText;
    lease["spec"]["acquireTime"] = nowText;
    api_.update(resources::kLeases, config_.ns, lease);
    log::info("released the lease", {{"lease", config_.ns + "/" + config_.name}});
  } catch (const std::exception& e) {
    log::warn("releasing the lease failed; it expires by itself",
              {{"lease", config_.name}, {"error", e.what()}});
  }
}

}  // namespace ker

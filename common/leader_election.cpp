#include "common/leader_election.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <ctime>
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

// Reads `digits` decimal digits at text[pos], advancing pos; -1 when they are not there.
int readNumber(const std::string& text, size_t& pos, int digits) {
  int value = 0;
  for (int i = 0; i < digits; ++i, ++pos) {
    if (pos >= text.size() || !std::isdigit(static_cast<unsigned char>(text[pos]))) {
      return -1;
    }
    value = value * 10 + (text[pos] - '0');
  }
  return value;
}

bool expect(const std::string& text, size_t& pos, char c) {
  if (pos < text.size() && (text[pos] == c || std::tolower(text[pos]) == c)) {
    ++pos;
    return true;
  }
  return false;
}

}  // namespace

std::string formatMicroTime(SystemTime t) {
  const auto secs = std::chrono::floor<std::chrono::seconds>(t);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t - secs).count();
  const std::time_t tt = std::chrono::system_clock::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(micros));
  return buf;
}

std::optional<SystemTime> parseMicroTime(const std::string& text) {
  size_t pos = 0;
  std::tm tm{};
  const int year = readNumber(text, pos, 4);
  const bool dateOk = year >= 0 && expect(text, pos, '-');
  const int month = dateOk ? readNumber(text, pos, 2) : -1;
  const int day = month >= 0 && expect(text, pos, '-') ? readNumber(text, pos, 2) : -1;
  const int hour = day >= 0 && expect(text, pos, 't') ? readNumber(text, pos, 2) : -1;
  const int minute = hour >= 0 && expect(text, pos, ':') ? readNumber(text, pos, 2) : -1;
  const int second = minute >= 0 && expect(text, pos, ':') ? readNumber(text, pos, 2) : -1;
  if (second < 0 || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 ||
      second > 60) {
    return std::nullopt;
  }
  int64_t nanos = 0;
  if (expect(text, pos, '.')) {
    int64_t scale = 100000000;
    const size_t start = pos;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      nanos += (text[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) {
      return std::nullopt;
    }
  }
  int64_t offsetSeconds = 0;
  if (!expect(text, pos, 'z')) {
    if (pos >= text.size() || (text[pos] != '+' && text[pos] != '-')) {
      return std::nullopt;
    }
    const int sign = text[pos++] == '-' ? -1 : 1;
    const int oh = readNumber(text, pos, 2);
    const int om = oh >= 0 && expect(text, pos, ':') ? readNumber(text, pos, 2) : -1;
    if (om < 0) {
      return std::nullopt;
    }
    offsetSeconds = sign * (oh * 3600 + om * 60);
  }
  if (pos != text.size()) {
    return std::nullopt;
  }
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const int64_t secs = static_cast<int64_t>(timegm(&tm)) - offsetSeconds;
  return SystemTime(std::chrono::duration_cast<SystemTime::duration>(
      std::chrono::seconds(secs) + std::chrono::nanoseconds(nanos)));
}

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
  const SystemTime now = config_.clock();
  const std::string nowText = formatMicroTime(now);
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
  std::string newLeader;
  {
    std::lock_guard lock(mu_);
    if (holder != observed_) {
      observed_ = holder;
      newLeader = holder;
    }
  }
  if (!newLeader.empty() && newLeader != config_.identity && callbacks_.onNewLeader) {
    callbacks_.onNewLeader(newLeader);
  }
  const auto renewed = parseMicroTime(stringField(spec, "renewTime"));
  const bool expired =
      holder.empty() || !renewed ||
      *renewed + std::chrono::seconds(intField(spec, "leaseDurationSeconds")) < now;
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
  return true;
}

bool LeaderElector::step() {
  const SystemTime started = config_.clock();
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
    } else if (leading_ && config_.clock() - lastRenew_ >= config_.renewDeadline) {
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
  return leading_ && config_.clock() - lastRenew_ < config_.renewDeadline;
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

#include "controller/controller_memory.h"

namespace ker {

namespace {

// How long a nudge is remembered: far longer than any nudge run that could still consult it.
constexpr auto kNudgeMemory = std::chrono::minutes(5);

std::optional<SteadyTime> since(const auto& m, const std::string& key,
                                const std::string& fingerprint) {
  auto it = m.find(key);
  if (it == m.end() || it->second.fingerprint != fingerprint) {
    return std::nullopt;
  }
  return it->second.since;
}

void set(auto& m, const std::string& key, std::optional<SteadyTime> since,
         const std::string& fingerprint) {
  if (since) {
    m[key] = {*since, fingerprint};
  } else {
    m.erase(key);
  }
}

}  // namespace

std::optional<SteadyTime> ControllerMemory::claimSuspectSince(
    const std::string& key, const std::string& fingerprint) const {
  std::lock_guard lock(mu_);
  return since(claimSuspects_, key, fingerprint);
}

std::optional<SteadyTime> ControllerMemory::deviceSuspectSince(
    const std::string& name, const std::string& fingerprint) const {
  std::lock_guard lock(mu_);
  return since(deviceSuspects_, name, fingerprint);
}

void ControllerMemory::setClaimSuspect(const std::string& key, std::optional<SteadyTime> when,
                                       const std::string& fingerprint) {
  std::lock_guard lock(mu_);
  set(claimSuspects_, key, when, fingerprint);
}

void ControllerMemory::setDeviceSuspect(const std::string& name, std::optional<SteadyTime> when,
                                        const std::string& fingerprint) {
  std::lock_guard lock(mu_);
  set(deviceSuspects_, name, when, fingerprint);
}

std::optional<std::string> ControllerMemory::releasedVersion(const std::string& device) const {
  std::lock_guard lock(mu_);
  auto it = releasedDevices_.find(device);
  if (it == releasedDevices_.end()) {
    return std::nullopt;
  }
  return it->second;
}

void ControllerMemory::rememberReleased(const std::string& device, std::string resourceVersion) {
  std::lock_guard lock(mu_);
  releasedDevices_[device] = std::move(resourceVersion);
}

void ControllerMemory::forgetReleased(const std::string& device) {
  std::lock_guard lock(mu_);
  releasedDevices_.erase(device);
}

void ControllerMemory::triggerNudge(const NudgeTarget& target, SteadyTime now) {
  std::lock_guard lock(mu_);
  // Claims come and go, resources stay: a claim's trigger is forgotten once it decides
  // nothing any more, as pods nudged long ago are.
  std::erase_if(nudgeTriggered_, [&](const auto& e) {
    return e.first.kind == NudgeTarget::Kind::kClaim && now - e.second > kNudgeMemory;
  });
  nudgeTriggered_[target] = now;
}

std::optional<SteadyTime> ControllerMemory::nudgeTriggeredAt(const NudgeTarget& target) const {
  std::lock_guard lock(mu_);
  auto it = nudgeTriggered_.find(target);
  if (it == nudgeTriggered_.end()) {
    return std::nullopt;
  }
  return it->second;
}

std::map<std::string, SteadyTime> ControllerMemory::recentNudges(SteadyTime now) {
  std::lock_guard lock(mu_);
  // Older entries no longer defer anything; the latest trigger decides the rest.
  std::erase_if(lastNudged_, [&](const auto& e) { return now - e.second > kNudgeMemory; });
  return lastNudged_;
}

void ControllerMemory::setNudged(const std::string& podUid, SteadyTime when) {
  std::lock_guard lock(mu_);
  lastNudged_[podUid] = when;
}

std::string ControllerMemory::warnedPodProblem(const std::string& podKey,
                                               const std::string& podUid) const {
  std::lock_guard lock(mu_);
  auto it = warnedPods_.find(podKey);
  return it != warnedPods_.end() && it->second.uid == podUid ? it->second.problem : "";
}

void ControllerMemory::setWarnedPodProblem(const std::string& podKey, const std::string& podUid,
                                           const std::string& problem) {
  std::lock_guard lock(mu_);
  if (problem.empty()) {
    warnedPods_.erase(podKey);
  } else {
    warnedPods_[podKey] = {podUid, problem};
  }
}

std::string ControllerMemory::warnedTemplateProblem(const std::string& podKey,
                                                    const std::string& podUid) const {
  std::lock_guard lock(mu_);
  auto it = warnedTemplates_.find(podKey);
  return it != warnedTemplates_.end() && it->second.uid == podUid ? it->second.problem : "";
}

void ControllerMemory::setWarnedTemplateProblem(const std::string& podKey,
                                                const std::string& podUid,
                                                const std::string& problem) {
  std::lock_guard lock(mu_);
  if (problem.empty()) {
    warnedTemplates_.erase(podKey);
  } else {
    warnedTemplates_[podKey] = {podUid, problem};
  }
}

void ControllerMemory::forgetClaim(const std::string& key) {
  std::lock_guard lock(mu_);
  claimSuspects_.erase(key);
}

void ControllerMemory::forgetDevice(const std::string& name) {
  std::lock_guard lock(mu_);
  deviceSuspects_.erase(name);
  releasedDevices_.erase(name);
}

void ControllerMemory::forgetPod(const std::string& podKey) {
  std::lock_guard lock(mu_);
  warnedPods_.erase(podKey);
  warnedTemplates_.erase(podKey);
}

size_t ControllerMemory::size() const {
  std::lock_guard lock(mu_);
  return claimSuspects_.size() + deviceSuspects_.size() + releasedDevices_.size();
}

}  // namespace ker

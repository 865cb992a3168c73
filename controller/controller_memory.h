#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "common/clocks.h"
#include "controller/claim_plan.h"
#include "controller/work_keys.h"
#include "model/objects.h"

namespace ker {

// Everything the controller remembers beyond what the API holds, in one place under one lock:
// the grace clocks of half-written objects, devices a release failed to free, nudges and
// warnings already given. (Its writes the watch has not delivered yet are the caches' own:
// ControllerCaches::assume.) All of it can be lost: a restarted controller rebuilds it from the
// API, at worst waiting one grace period again. Thread-safe.
class ControllerMemory {
 public:
  // Since when `key` has looked suspicious with this same status fingerprint; nullopt when it
  // did not, or its status changed since (a sign of life).
  std::optional<SteadyTime> claimSuspectSince(const std::string& key,
                                              const std::string& fingerprint) const;
  std::optional<SteadyTime> deviceSuspectSince(const std::string& name,
                                               const std::string& fingerprint) const;
  // nullopt forgets.
  void setClaimSuspect(const std::string& key, std::optional<SteadyTime> since,
                       const std::string& fingerprint);
  void setDeviceSuspect(const std::string& name, std::optional<SteadyTime> since,
                        const std::string& fingerprint);

  // Devices a release left Bound to its claim, with the resourceVersion of the failed free.
  std::optional<std::string> releasedVersion(const std::string& device) const;
  void rememberReleased(const std::string& device, std::string resourceVersion);
  void forgetReleased(const std::string& device);

  // Nudges: when each target was last triggered, and when each pod (by UID) was last nudged.
  void triggerNudge(const NudgeTarget& target, SteadyTime now);
  std::optional<SteadyTime> nudgeTriggeredAt(const NudgeTarget& target) const;
  // The pods nudged within the memory window; older entries are dropped.
  std::map<std::string, SteadyTime> recentNudges(SteadyTime now);
  void setNudged(const std::string& podUid, SteadyTime when);

  // The problem last warned of on the pod's claims annotation ("" when none).
  std::string warnedPodProblem(const std::string& podKey, const std::string& podUid) const;
  void setWarnedPodProblem(const std::string& podKey, const std::string& podUid,
                           const std::string& problem);

  // The same for the pod's template entries that wait for a missing or invalid template.
  std::string warnedTemplateProblem(const std::string& podKey, const std::string& podUid) const;
  void setWarnedTemplateProblem(const std::string& podKey, const std::string& podUid,
                                const std::string& problem);

  // Drop what is remembered about an object that was deleted.
  void forgetClaim(const std::string& key);
  void forgetDevice(const std::string& name);
  void forgetPod(const std::string& podKey);
  // Entries held about claims and devices (grace clocks, failed frees): 0 once all is settled.
  size_t size() const;

 private:
  struct Suspicion {
    SteadyTime since;
    std::string fingerprint;
  };
  struct Warned {
    std::string uid;
    std::string problem;
  };

  mutable std::mutex mu_;
  std::map<std::string, Suspicion> claimSuspects_;
  std::map<std::string, Suspicion> deviceSuspects_;
  std::map<std::string, std::string> releasedDevices_;  // device -> resourceVersion
  std::map<NudgeTarget, SteadyTime> nudgeTriggered_;
  std::map<std::string, SteadyTime> lastNudged_;   // pod UID -> when
  std::map<std::string, Warned> warnedPods_;       // pod key -> warning given
  std::map<std::string, Warned> warnedTemplates_;  // pod key -> warning given
};

}  // namespace ker

#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "common/admission_policy_check.h"
#include "common/api_client.h"
#include "common/leader_election.h"
#include "controller/controller.h"

namespace ker {

struct ControllerAppConfig {
  ControllerOptions controller;
  // Every period each cached claim and device is reconciled again.
  Millis resyncPeriod{std::chrono::minutes(5)};
  bool leaderElect = true;
  LeaderElectionConfig leaderElection;  // an empty identity gets defaultIdentity()
  // "host:port" or ":port" for /healthz, /readyz and /metrics; "" or "0" serves nothing.
  std::string metricsBindAddress = ":8080";
  // The admission policies whose absence /readyz reports; nullopt: not checked.
  std::optional<AdmissionPolicyCheck::Options> admissionPolicy;
};

// The running controller: informers on pods, claims and devices; leader election; the
// reconcile loop, started once this process leads and the caches have synced; events; and the
// health and metrics endpoints. When leadership, once held, is lost, writes stop at once and
// onLeadershipLost runs (the binary then exits, as controller-runtime does).
class ControllerApp {
 public:
  ControllerApp(ApiClient& api, ControllerAppConfig config,
                std::function<void()> onLeadershipLost = {});
  ~ControllerApp();  // stop()
  ControllerApp(const ControllerApp&) = delete;
  ControllerApp& operator=(const ControllerApp&) = delete;

  // Throws std::runtime_error when the metrics address cannot be bound.
  void start();
  // Stops the loop first, then gives the lease up, then the watches. Idempotent.
  void stop();

  bool ready() const;  // what /readyz says: the caches have synced and the policy is in force
  bool leading() const;
  bool leadershipLost() const;
  int metricsPort() const;  // 0 when not serving

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ker

#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/api_client.h"

namespace ker {

using SystemTime = std::chrono::system_clock::time_point;

struct LeaderElectionConfig {
  std::string ns = "kube-system";
  std::string name = "extended-resource-controller";
  std::string identity;  // unique per process, see defaultIdentity()
  // Others may take the lease this long after its last renewal.
  std::chrono::milliseconds leaseDuration{std::chrono::seconds(15)};
  // The leader gives up (and must stop writing) when it could not renew for this long; must
  // be shorter than leaseDuration so it stops before anyone else can take over.
  std::chrono::milliseconds renewDeadline{std::chrono::seconds(10)};
  std::chrono::milliseconds retryPeriod{std::chrono::seconds(2)};  // between attempts
  std::function<SystemTime()> clock = std::chrono::system_clock::now;
};

struct LeaderCallbacks {
  std::function<void()> onStartedLeading;
  // Leadership ended: the renew deadline passed, or stop() gave the lease up. Fired once per
  // term, from the election thread (or from stop()'s caller).
  std::function<void()> onStoppedLeading;
  std::function<void(const std::string& identity)> onNewLeader;  // a different holder was seen
};

// Leader election over a coordination.k8s.io/v1 Lease, as client-go's leaderelection: the
// lease is taken when absent (create) or expired (renewTime + leaseDurationSeconds < now;
// update with a resourceVersion precondition, leaseTransitions bumped), renewed every retry
// period, and lost when no renewal succeeded within the renew deadline.
class LeaderElector {
 public:
  LeaderElector(ApiClient& api, LeaderElectionConfig config, LeaderCallbacks callbacks);
  ~LeaderElector();  // stop()
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Throws std::invalid_argument unless 0 < retryPeriod < renewDeadline < leaseDuration and
  // the identity is set.
  static void validate(const LeaderElectionConfig& config);

  // Runs the election on its own thread: step() every retry period until stop(), or until
  // leadership, once held, is lost.
  void start();
  // Ends the loop; a leader gives the lease up (empty holder) so a successor need not wait
  // for it to expire, and onStoppedLeading fires. Idempotent.
  void stop();

  // One round at clock(): acquire or renew, then fire the callbacks a change of state calls
  // for. Returns false once leadership held by this elector was lost (the loop ends there).
  bool step();

  // One acquire-or-renew attempt on the Lease: true when this process holds it afterwards.
  bool tryAcquireOrRenew();

  // Holding the lease and renewed within the renew deadline. Checked before every write: it
  // turns false as soon as the deadline passes, even while a renewal call hangs.
  bool isLeader() const;
  // The holder last seen on the lease ("" when none).
  std::string observedLeader() const;
  const LeaderElectionConfig& config() const { return config_; }

 private:
  void run();
  void release();
  void loseLeadership();

  ApiClient& api_;
  const LeaderElectionConfig config_;
  const LeaderCallbacks callbacks_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool leading_ = false;
  SystemTime lastRenew_{};
  std::string observed_;
  std::thread thread_;
};

// hostname + "_" + a random suffix, unique per process.
std::string defaultIdentity();

// metav1.MicroTime: "2006-01-02T15:04:05.000000Z".
std::string formatMicroTime(SystemTime t);
// Parses RFC 3339 with any fraction (or none) and a Z or ±hh:mm offset; nullopt otherwise.
std::optional<SystemTime> parseMicroTime(const std::string& text);

}  // namespace ker

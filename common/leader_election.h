#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "common/api_client.h"
#include "common/api_time.h"
#include "common/clocks.h"

namespace ker {

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
  // Every duration above is timed on this clock. Wall clocks of different nodes disagree and
  // jump, so expiry never compares another process's timestamp with ours.
  SteadyClock monotonic = std::chrono::steady_clock::now;
  // Only for the acquireTime and renewTime written to the lease, which people read.
  SystemClock clock = std::chrono::system_clock::now;
};

struct LeaderCallbacks {
  std::function<void()> onStartedLeading;
  // Leadership ended: the renew deadline passed, or stop() gave the lease up. Fired once per
  // term, from the election thread (or from stop()'s caller).
  std::function<void()> onStoppedLeading;
  std::function<void(const std::string& identity)> onNewLeader;  // a different holder was seen
};

// Leader election over a coordination.k8s.io/v1 Lease, as client-go's leaderelection: the
// lease is taken when absent (create), released (empty holder) or expired (update with a
// resourceVersion precondition, leaseTransitions bumped), renewed every retry period, and
// lost when no renewal succeeded within the renew deadline. Expired means this process has
// seen the same lease spec for longer than its leaseDurationSeconds: the holder's renewTime
// is never compared with the local clock, so clock skew between nodes cannot let two leaders
// overlap. A newly started candidate therefore waits one lease duration before it takes a
// lease its holder left behind without releasing it.
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

  // One round at monotonic(): acquire or renew, then fire the callbacks a change of state calls
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
  SteadyTime lastRenew_{};
  std::string observed_;  // holder
  // The lease spec last read or written, and when it was first seen in that form.
  std::string observedSpec_;
  SteadyTime observedAt_{};
  std::thread thread_;
};

// hostname + "_" + a random suffix, unique per process.
std::string defaultIdentity();

}  // namespace ker

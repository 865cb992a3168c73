#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>

#include "common/rate_limiter.h"

namespace ker {

// A rate-limited delaying work queue of keys with client-go's workqueue semantics:
//  - a key waiting in the queue is held once however often it is added;
//  - a key handed out by get() and added again is queued only after done(key), so no two
//    workers ever process the same key at once;
//  - every get() must be paired with done() for the same key.
// Thread-safe. After shutDown(), adds are ignored and get() returns std::nullopt at once, even
// if keys are still queued (workers stop promptly; the informers will resync them anyway).
class WorkQueue {
 public:
  explicit WorkQueue(std::unique_ptr<RateLimiter> limiter = makeControllerRateLimiter());
  ~WorkQueue();  // shuts down and joins the delay thread
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void add(const std::string& key);
  // Adds key once delay has passed. If the key is already waiting, the earlier time wins.
  void addAfter(const std::string& key, Duration delay);
  // addAfter with the delay the rate limiter asks for (one more failure for key).
  void addRateLimited(const std::string& key);
  // Resets key's failure history in the rate limiter; does not remove it from the queue.
  void forget(const std::string& key);
  int numRequeues(const std::string& key);

  // Blocks until a key is available (marking it as being processed) or the queue is shut down.
  std::optional<std::string> get();
  void done(const std::string& key);

  size_t len() const;  // keys ready to be handed out (not those delayed or being processed)
  void shutDown();
  bool shuttingDown() const;

 private:
  using TimePoint = std::chrono::steady_clock::time_point;

  void addLocked(const std::string& key);
  void delayLoop();

  mutable std::mutex mu_;
  std::condition_variable itemReady_;
  std::condition_variable delayWake_;
  std::deque<std::string> queue_;
  std::unordered_set<std::string> dirty_;       // queued, or re-added while processing
  std::unordered_set<std::string> processing_;  // handed out by get(), not yet done()
  std::map<std::string, TimePoint> delayedAt_;
  std::set<std::pair<TimePoint, std::string>> delayed_;  // ordered by ready time
  bool shuttingDown_ = false;
  std::unique_ptr<RateLimiter> limiter_;
  std::thread delayThread_;  // last: started once everything it uses exists
};

}  // namespace ker

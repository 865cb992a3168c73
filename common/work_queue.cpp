#include "common/work_queue.h"

namespace ker {

WorkQueue::WorkQueue(std::unique_ptr<RateLimiter> limiter)
    : limiter_(std::move(limiter)), delayThread_([this] { delayLoop(); }) {}

WorkQueue::~WorkQueue() {
  shutDown();
  delayThread_.join();
}

void WorkQueue::addLocked(const std::string& key) {
  if (shuttingDown_ || !dirty_.insert(key).second) {
    return;
  }
  // A key being processed goes back to the queue in done(), not now.
  if (processing_.count(key) == 0) {
    queue_.push_back(key);
    itemReady_.notify_one();
  }
}

void WorkQueue::add(const std::string& key) {
  std::lock_guard lock(mu_);
  addLocked(key);
}

void WorkQueue::addAfter(const std::string& key, Duration delay) {
  std::lock_guard lock(mu_);
  if (shuttingDown_) {
    return;
  }
  if (delay <= Duration::zero()) {
    addLocked(key);
    return;
  }
  const TimePoint at = std::chrono::steady_clock::now() + delay;
  if (auto it = delayedAt_.find(key); it != delayedAt_.end()) {
    if (it->second <= at) {
      return;
    }
    delayed_.erase({it->second, key});
    it->second = at;
  } else {
    delayedAt_.emplace(key, at);
  }
  delayed_.emplace(at, key);
  delayWake_.notify_one();
}

void WorkQueue::addRateLimited(const std::string& key) {
  addAfter(key, limiter_->when(key));
}

void WorkQueue::forget(const std::string& key) {
  limiter_->forget(key);
}

int WorkQueue::numRequeues(const std::string& key) {
  return limiter_->numRequeues(key);
}

std::optional<std::string> WorkQueue::get() {
  std::unique_lock lock(mu_);
  itemReady_.wait(lock, [this] { return !queue_.empty() || shuttingDown_; });
  if (shuttingDown_) {
    return std::nullopt;
  }
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(key);
  dirty_.erase(key);
  return key;
}

void WorkQueue::done(const std::string& key) {
  std::lock_guard lock(mu_);
  processing_.erase(key);
  if (dirty_.count(key) != 0) {
    queue_.push_back(key);
    itemReady_.notify_one();
  }
}

size_t WorkQueue::len() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

void WorkQueue::shutDown() {
  std::lock_guard lock(mu_);
  shuttingDown_ = true;
  itemReady_.notify_all();
  delayWake_.notify_all();
}

bool WorkQueue::shuttingDown() const {
  std::lock_guard lock(mu_);
  return shuttingDown_;
}

void WorkQueue::delayLoop() {
  std::unique_lock lock(mu_);
  while (!shuttingDown_) {
    const TimePoint now = std::chrono::steady_clock::now();
    while (!delayed_.empty() && delayed_.begin()->first <= now) {
      std::string key = delayed_.begin()->second;
      delayed_.erase(delayed_.begin());
      delayedAt_.erase(key);
      addLocked(key);
    }
    // Woken early by addAfter (a new earliest deadline) or shutDown; spurious wake-ups just
    // go round the loop again.
    if (delayed_.empty()) {
      delayWake_.wait(lock);
    } else {
      delayWake_.wait_until(lock, delayed_.begin()->first);
    }
  }
}

}  // namespace ker

#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "common/api_client.h"
#include "common/clocks.h"
#include "common/event_recorder.h"
#include "scheduler/preemption.h"

namespace ker {

// What became of one victim.
enum class EvictionResult {
  kDeleted,      // marked DisruptionTarget and deleted
  kTerminating,  // already being deleted: left to finish
  kGone,         // deleted or replaced (another UID) before we came
  kFailed,       // the API refused or could not be reached; logged
};

// The DisruptionTarget condition kube-scheduler's preemption sets on a victim before deleting
// it, as a strategic-merge patch of the pod's status. Pure.
nlohmann::json disruptionTargetPatch(const std::string& schedulerName, SystemTime now);
// The events' messages, as kube-scheduler words them where it has one. Pure.
std::string preemptedMessage(const PreemptionOrder& order);
std::string preemptingMessage(const PreemptionOrder& order);

// Carries out preemption orders off the request path, one at a time on its own thread: for
// each victim not already terminating, the DisruptionTarget condition, then a delete with the
// victim's UID as precondition (so a pod recreated under the name is never touched); an event
// on each victim (Preempted) and one on the preemptor (Preempting). A full queue drops the
// order (its nomination expires, and the preemptor's next filter plans again).
class PreemptionWorker {
 public:
  struct Options {
    std::string schedulerName = "extended-resource-scheduler";
    size_t queueSize = 256;
    SystemClock clock = std::chrono::system_clock::now;
  };
  PreemptionWorker(ApiClient& api, EventRecorder& events, Options options);
  ~PreemptionWorker();  // stop()
  PreemptionWorker(const PreemptionWorker&) = delete;
  PreemptionWorker& operator=(const PreemptionWorker&) = delete;

  void start();
  void stop();
  // False when the queue is full or the worker stopped.
  bool submit(PreemptionOrder order);
  // Runs one victim's eviction now, on the caller's thread.
  EvictionResult evict(const PreemptionOrder& order, const PreemptionVictim& victim);
  // Waits until the queue is empty and nothing is in flight; false on timeout.
  bool drain(std::chrono::milliseconds timeout);

 private:
  void run();
  void execute(const PreemptionOrder& order);

  ApiClient& api_;
  EventRecorder& events_;
  Options options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<PreemptionOrder> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ker

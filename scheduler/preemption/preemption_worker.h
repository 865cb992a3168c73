#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "common/api_client.h"
#include "common/clocks.h"
#include "common/event_recorder.h"
#include "common/status.h"
#include "model/objects.h"
#include "scheduler/preemption/preemption.h"

namespace ker {

// What became of one victim.
enum class EvictionResult {
  kDeleted,      // marked DisruptionTarget and deleted
  kTerminating,  // already being deleted: left to finish
  kGone,         // deleted or replaced (another UID) before we came
  kFailed,       // the API refused, or could not be reached in any attempt; logged
};

// The DisruptionTarget condition kube-scheduler's preemption sets on a victim before deleting
// it, as a strategic-merge patch of the pod's status. Pure.
nlohmann::json disruptionTargetPatch(const std::string& schedulerName, SystemTime now);
// The preemptor's status.nominatedNodeName as kube-scheduler sets it after preempting (an
// empty node clears it), as a merge patch of pods/status; metadata.uid makes the API server
// refuse it for a pod recreated under the name. Pure.
nlohmann::json nominatedNodePatch(const std::string& preemptorUid, const std::string& node);
// The events' messages, as kube-scheduler words them where it has one. Pure.
std::string preemptedMessage(const PreemptionOrder& order);
std::string preemptingMessage(const PreemptionOrder& order);
std::string preemptionFailedMessage(const PreemptionOrder& order, const PreemptionVictim& victim);

// Carries out preemption orders off the request path, one at a time on its own thread: for
// each victim not already terminating, the DisruptionTarget condition, then a delete with the
// victim's UID as precondition (so a pod recreated under the name is never touched); an event
// on each victim (Preempted) and one on the preemptor (Preempting). Before the victims, the
// preemptor's status.nominatedNodeName is set to the node, as kube-scheduler's (asynchronous)
// preemption does. A transient API error is retried a few times with a doubling
// delay; a victim found gone counts as evicted. A victim that cannot be evicted ends the order:
// the remaining victims are spared, the nomination is dropped (onFailed), the preemptor's
// nominatedNodeName is cleared and it gets a Warning event (PreemptionFailed). A full queue
// drops the order (its nomination expires, and the preemptor's next filter plans again).
class PreemptionWorker {
 public:
  struct Options {
    // The preemptors it acts for ("" : any), and the name on its victims' DisruptionTarget.
    std::string schedulerName = kDefaultSchedulerName;
    size_t queueSize = 256;
    SystemClock clock = std::chrono::system_clock::now;
    int attempts = 4;                           // per write, the first included
    std::chrono::milliseconds retryDelay{200};  // before the second attempt, doubled after
    // Waits between attempts; unset: on the worker's own condition, so stop() cuts it short.
    std::function<void(std::chrono::milliseconds)> sleep = {};
    // The order's nomination is to end (a victim could not be evicted): its preemptor's UID.
    std::function<void(const std::string& preemptorUid)> onFailed = {};
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
  // Calls `write` until it succeeds, fails other than transiently, or the attempts run out;
  // rethrows the last failure.
  void withRetries(const std::function<void()>& write);
  void pause(std::chrono::milliseconds delay);
  void setNominatedNode(const PreemptionOrder& order, const std::string& node);
  // The preemptor read live and checked against the order (checkPreemptorTrust); a read that
  // fails is a refusal too.
  Status checkPreemptor(const PreemptionOrder& order);

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

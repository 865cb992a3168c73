#include "scheduler/preemption/preemption_worker.h"

#include "common/api_time.h"
#include "common/backoff.h"
#include "common/logging.h"
#include "common/resource.h"
#include "common/status.h"
#include "model/event_reasons.h"
#include "model/typed_client.h"
#include "scheduler/preemption/preemptor_trust.h"

namespace ker {

nlohmann::json disruptionTargetPatch(const std::string& schedulerName, SystemTime now) {
  return {{"status",
           {{"conditions",
             nlohmann::json::array(
                 {{{"type", "DisruptionTarget"},
                   {"status", "True"},
                   {"reason", "PreemptionByScheduler"},
                   {"message", schedulerName + ": preempting to accommodate a higher priority pod"},
                   {"lastTransitionTime", formatTime(now)}}})}}}};
}

nlohmann::json nominatedNodePatch(const std::string& preemptorUid, const std::string& node) {
  return {{"metadata", {{"uid", preemptorUid}}},
          {"status",
           {{"nominatedNodeName", node.empty() ? nlohmann::json(nullptr) : nlohmann::json(node)}}}};
}

std::string preemptionFailedMessage(const PreemptionOrder& order, const PreemptionVictim& victim) {
  return "Could not preempt " + objectKey(victim.ns, victim.name) + " on node " + order.node +
         "; the devices kept for this pod are released and its next scheduling attempt plans "
         "again";
}

std::string preemptedMessage(const PreemptionOrder& order) {
  return "Preempted by pod " + order.preemptorUid + " on node " + order.node;
}

std::string preemptingMessage(const PreemptionOrder& order) {
  std::string names;
  for (const auto& v : order.victims) {
    names += (names.empty() ? "" : ", ") + objectKey(v.ns, v.name);
  }
  return "Preempting " + std::to_string(order.victims.size()) + " lower-priority pod" +
         (order.victims.size() == 1 ? "" : "s") + " on node " + order.node +
         " to free devices: " + names;
}

PreemptionWorker::PreemptionWorker(ApiClient& api, EventRecorder& events, Options options)
    : api_(api), events_(events), options_(std::move(options)) {}

PreemptionWorker::~PreemptionWorker() {
  stop();
}

void PreemptionWorker::start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) {
    return;
  }
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
}

void PreemptionWorker::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

bool PreemptionWorker::submit(PreemptionOrder order) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() >= options_.queueSize) {
      return false;
    }
    queue_.push_back(std::move(order));
  }
  cv_.notify_all();
  return true;
}

bool PreemptionWorker::drain(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return queue_.empty() && !busy_; });
}

void PreemptionWorker::run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) {
      return;
    }
    PreemptionOrder order = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    execute(order);
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

void PreemptionWorker::execute(const PreemptionOrder& order) {
  if (Status trusted = checkPreemptor(order); !trusted.ok()) {
    log::warn("preemption refused: the preemptor is not the pod it was decided for",
              {{"preemptor", objectKey(order.preemptorNs, order.preemptorName)},
               {"node", order.node},
               {"error", trusted.message()}});
    if (options_.onFailed) {
      options_.onFailed(order.preemptorUid);
    }
    return;
  }
  const ObjectReference preemptor{"v1", "Pod", order.preemptorNs, order.preemptorName,
                                  order.preemptorUid};
  events_.record(preemptor, EventType::kNormal, event_reason::kPreempting,
                 preemptingMessage(order));
  // First, while the victims still hold the devices: once they are gone the preemptor may be
  // bound at any moment, and a bound pod's nominatedNodeName may not be set.
  setNominatedNode(order, order.node);
  for (const auto& victim : order.victims) {
    const EvictionResult result = evict(order, victim);
    if (result == EvictionResult::kFailed) {
      if (options_.onFailed) {
        options_.onFailed(order.preemptorUid);
      }
      setNominatedNode(order, "");
      events_.record(preemptor, EventType::kWarning, event_reason::kPreemptionFailed,
                     preemptionFailedMessage(order, victim));
      return;
    }
    if (result == EvictionResult::kDeleted || result == EvictionResult::kTerminating) {
      events_.record(ObjectReference{"v1", "Pod", victim.ns, victim.name, victim.uid},
                     EventType::kNormal, event_reason::kPreempted, preemptedMessage(order));
    }
  }
}

// The order was decided on the pod a filter request described, which is only the caller's
// word: the pod the API server has decides whether anyone is deleted for it.
Status PreemptionWorker::checkPreemptor(const PreemptionOrder& order) {
  std::optional<Pod> live;
  try {
    withRetries([&] {
      live.reset();  // a 404 leaves it empty: no such pod
      unlessNotFound([&] { live = readObject<Pod>(api_, order.preemptorNs, order.preemptorName); });
    });
  } catch (const std::exception& e) {
    return statusFrom(e).within("reading the preemptor");
  }
  return checkPreemptorTrust(live, order, options_.schedulerName);
}

void PreemptionWorker::setNominatedNode(const PreemptionOrder& order, const std::string& node) {
  const std::string pod = objectKey(order.preemptorNs, order.preemptorName);
  try {
    withRetries([&] {
      api_.patch(resources::kPods, order.preemptorNs, order.preemptorName, PatchType::kMerge,
                 nominatedNodePatch(order.preemptorUid, node), "status");
    });
  } catch (const std::exception& e) {
    // Gone or replaced: nothing to show it on. Otherwise only the display and a restarted
    // extender's hint are missing; the nomination itself lives in the device index.
    log::warn("could not set the preemptor's nominated node",
              {{"pod", pod}, {"node", node}, {"error", e.what()}});
  }
}

void PreemptionWorker::pause(std::chrono::milliseconds delay) {
  if (options_.sleep) {
    options_.sleep(delay);
    return;
  }
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, delay, [&] { return stopping_; });
}

void PreemptionWorker::withRetries(const std::function<void()>& write) {
  // Exact doubling: a handful of attempts per write, far below any cap.
  const Backoff retries{options_.retryDelay, 2.0, std::chrono::minutes(1), 0};
  for (int attempt = 1;; ++attempt) {
    const auto delay =
        std::chrono::duration_cast<std::chrono::milliseconds>(retries.base(attempt - 1));
    try {
      write();
      return;
    } catch (const std::exception& e) {
      bool stopping = false;
      {
        std::lock_guard lock(mu_);
        stopping = stopping_;
      }
      if (stopping || attempt >= options_.attempts ||
          classify(statusFrom(e)) != Failure::kTransient) {
        throw;
      }
      log::warn("preemption write failed, retrying",
                {{"attempt", attempt}, {"delayMs", delay.count()}, {"error", e.what()}});
    }
    pause(delay);
  }
}

EvictionResult PreemptionWorker::evict(const PreemptionOrder& order,
                                       const PreemptionVictim& victim) {
  const std::string pod = objectKey(victim.ns, victim.name);
  const std::string preemptor = objectKey(order.preemptorNs, order.preemptorName);
  if (victim.terminating) {
    log::info("preemption victim already terminating",
              {{"victim", pod}, {"preemptor", preemptor}, {"node", order.node}});
    return EvictionResult::kTerminating;
  }
  // Each attempt starts over from the GET, so one whose delete went through unanswered finds
  // the pod gone or terminating.
  EvictionResult result = EvictionResult::kDeleted;
  try {
    withRetries([&] {
      // A status patch carries no UID precondition: the UID is checked first, and the
      // delete's precondition covers a pod recreated under the name in between.
      const Pod current = readObject<Pod>(api_, victim.ns, victim.name);
      if (current.meta.uid != victim.uid) {
        result = EvictionResult::kGone;
        return;
      }
      if (current.meta.deleting) {
        result = EvictionResult::kTerminating;
        return;
      }
      // --scheduler-name="" serves every profile, yet the condition needs a name to speak as.
      const std::string by =
          options_.schedulerName.empty() ? kDefaultSchedulerName : options_.schedulerName;
      api_.patch(resources::kPods, victim.ns, victim.name, PatchType::kStrategicMerge,
                 disruptionTargetPatch(by, options_.clock()), "status");
      api_.remove(resources::kPods, victim.ns, victim.name,
                  DeleteOptions{.preconditionUid = victim.uid});
      result = EvictionResult::kDeleted;
    });
  } catch (const std::exception& e) {
    if (const Failure f = classify(statusFrom(e)); f == Failure::kGone || f == Failure::kConflict) {
      // Gone, or (a failed UID precondition is a 409) replaced under the name.
      log::info("preemption victim gone before its deletion",
                {{"victim", pod}, {"preemptor", preemptor}, {"error", e.what()}});
      return EvictionResult::kGone;
    }
    log::error("could not preempt victim",
               {{"victim", pod}, {"preemptor", preemptor}, {"error", e.what()}});
    return EvictionResult::kFailed;
  }
  if (result != EvictionResult::kDeleted) {
    return result;
  }
  log::info("preempted victim", {{"victim", pod},
                                 {"victimPriority", victim.priority},
                                 {"preemptor", preemptor},
                                 {"node", order.node}});
  return EvictionResult::kDeleted;
}

}  // namespace ker

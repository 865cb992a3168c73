#include "common/event_recorder.h"

#include <algorithm>
#include <cstdio>

#include "common/api_error.h"
#include "common/api_time.h"
#include "common/kube_objects.h"
#include "common/logging.h"
#include "common/resource.h"

namespace ker {

EventRecorder::EventRecorder(ApiClient& api, EventRecorderOptions opts)
    : api_(api), opts_(std::move(opts)) {}

EventRecorder::~EventRecorder() {
  stop();
}

void EventRecorder::start() {
  std::lock_guard lock(mu_);
  if (threads_.empty() && !stopping_) {
    for (size_t i = 0; i < std::max<size_t>(opts_.posters, 1); ++i) {
      threads_.emplace_back([this] { run(); });
    }
  }
}

void EventRecorder::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    stats_.dropped += queue_.size();
    queue_.clear();
  }
  wake_.notify_all();
  idle_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) {
      t.join();
    }
  }
}

bool EventRecorder::flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return idle_.wait_for(lock, timeout, [this] { return queue_.empty() && posting_ == 0; });
}

void EventRecorder::record(const ObjectReference& object, EventType type, const std::string& reason,
                           const std::string& message) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() >= opts_.queueSize) {
      stats_.dropped++;
      return;
    }
    queue_.push_back({object, type, reason, message, opts_.clock()});
  }
  wake_.notify_one();
}

std::string EventRecorder::uniqueName(const std::string& objectName,
                                      std::chrono::system_clock::time_point at) {
  int64_t nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
  {
    std::lock_guard lock(mu_);
    nanos = std::max(nanos, lastNanos_ + 1);
    lastNanos_ = nanos;
  }
  char hex[24];
  std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(nanos));
  return objectName + "." + hex;
}

nlohmann::json EventRecorder::buildEvent(const ObjectReference& object, EventType type,
                                         const std::string& reason, const std::string& message,
                                         std::chrono::system_clock::time_point at,
                                         const std::string& name) const {
  const std::string ts = formatTime(at);
  nlohmann::json involved = {{"apiVersion", object.apiVersion},
                             {"kind", object.kind},
                             {"name", object.name},
                             {"uid", object.uid}};
  if (!object.ns.empty()) {
    involved["namespace"] = object.ns;
  }
  nlohmann::json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      // The legacy API puts an event about a cluster-scoped object in "default".
      {"metadata", {{"name", name}, {"namespace", object.ns.empty() ? "default" : object.ns}}},
      {"involvedObject", std::move(involved)},
      {"reason", reason},
      {"message", message},
      {"type", type == EventType::kWarning ? "Warning" : "Normal"},
      {"source", {{"component", opts_.component}}},
      {"firstTimestamp", ts},
      {"lastTimestamp", ts},
      {"count", 1},
      {"reportingComponent", opts_.component},
  };
  if (!opts_.instance.empty()) {
    event["reportingInstance"] = opts_.instance;
  }
  return event;
}

void EventRecorder::run() {
  for (;;) {
    Pending next;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) {
        return;
      }
      next = std::move(queue_.front());
      queue_.pop_front();
      posting_++;
    }
    const std::string name = uniqueName(next.object.name, next.at);
    const auto event = buildEvent(next.object, next.type, next.reason, next.message, next.at, name);
    try {
      api_.create(resources::kEvents, event["metadata"]["namespace"].get<std::string>(), event);
      stats_.sent++;
    } catch (const std::exception& e) {
      stats_.failed++;
      // As client-go's recorder: an event that exists already, or whose namespace is being
      // deleted (its object goes with it), is refused for good and worth no warning.
      const auto* api = dynamic_cast<const ApiError*>(&e);
      const bool forGood =
          api != nullptr && (api->isAlreadyExists() || api->hasCause(kNamespaceTerminatingCause));
      if (!forGood) {
        log::warn("event not recorded", {{"object", objectKey(next.object.ns, next.object.name)},
                                         {"reason", next.reason},
                                         {"error", e.what()}});
      } else if (log::v(4)) {
        log::info("event refused for good",
                  {{"object", objectKey(next.object.ns, next.object.name)},
                   {"reason", next.reason},
                   {"error", e.what()}});
      }
    }
    {
      std::lock_guard lock(mu_);
      posting_--;
    }
    idle_.notify_all();
  }
}

}  // namespace ker

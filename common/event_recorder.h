#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/api_client.h"
#include "common/clocks.h"
#include "common/object_reference.h"

namespace ker {

enum class EventType { kNormal, kWarning };

struct EventRecorderOptions {
  std::string component = "extended-resource-controller";  // source.component
  std::string instance;                                    // reportingInstance, e.g. host name
  size_t queueSize = 1000;
  // Threads posting at once. One keeps each object's events in the order recorded; more keep
  // up with bursts (a post is one round trip to the API server), and the events' timestamps
  // still give their order.
  size_t posters = 1;
  SystemClock clock = std::chrono::system_clock::now;
};

struct EventRecorderStats {
  std::atomic<uint64_t> sent{0};
  std::atomic<uint64_t> dropped{0};  // the queue was full, or the recorder stopped first
  std::atomic<uint64_t> failed{0};   // the API refused or could not be reached
};

// Posts core/v1 Events from background threads, so recording never blocks a reconcile: a full
// queue drops the event (counted) and a failed post is logged, never fatal.
class EventRecorder {
 public:
  EventRecorder(ApiClient& api, EventRecorderOptions opts = {});
  ~EventRecorder();  // stop()
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  void start();
  // Stops at once: the post in flight completes, events still queued are dropped. Idempotent.
  void stop();
  // Waits until every queued event was posted (or failed); false on timeout.
  bool flush(std::chrono::milliseconds timeout);

  void record(const ObjectReference& object, EventType type, const std::string& reason,
              const std::string& message);

  const EventRecorderStats& stats() const { return stats_; }

  // The Event object as posted; `name` must be unique in the namespace.
  nlohmann::json buildEvent(const ObjectReference& object, EventType type,
                            const std::string& reason, const std::string& message,
                            std::chrono::system_clock::time_point at,
                            const std::string& name) const;

 private:
  struct Pending {
    ObjectReference object;
    EventType type;
    std::string reason;
    std::string message;
    std::chrono::system_clock::time_point at;
  };
  void run();
  std::string uniqueName(const std::string& objectName, std::chrono::system_clock::time_point at);

  ApiClient& api_;
  const EventRecorderOptions opts_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  size_t posting_ = 0;     // posts in flight
  int64_t lastNanos_ = 0;  // keeps generated names unique within the process
  EventRecorderStats stats_;
  std::vector<std::thread> threads_;
};

}  // namespace ker

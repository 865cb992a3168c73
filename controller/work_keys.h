#pragma once

#include <compare>
#include <optional>
#include <string>
#include <variant>

#include "common/work_queue.h"

namespace ker {

// What a nudge wakes: the pods parked for want of devices of a resource, or only those that
// name one claim (which became usable).
struct NudgeTarget {
  enum class Kind { kResource, kClaim };
  Kind kind = Kind::kResource;
  std::string name;  // a rawResourceName, or a claim's "namespace/name"

  static NudgeTarget resource(std::string name) { return {Kind::kResource, std::move(name)}; }
  static NudgeTarget claim(std::string key) { return {Kind::kClaim, std::move(key)}; }
  auto operator<=>(const NudgeTarget&) const = default;
};

// The work queues' keys, one type per kind of work, as controller-runtime's reconcile.Request
// names one object.
struct ClaimKey {
  std::string key;  // "namespace/name"
  auto operator<=>(const ClaimKey&) const = default;
};
struct DeviceKey {
  std::string name;
  auto operator<=>(const DeviceKey&) const = default;
};
// A pod whose claims annotation may need a warning.
struct PodKey {
  std::string key;  // "namespace/name"
  auto operator<=>(const PodKey&) const = default;
};
struct NudgeKey {
  NudgeTarget target;
  // The second nudge of a trigger, a little after the first: it counts as a trigger of its own.
  bool followUp = false;
  auto operator<=>(const NudgeKey&) const = default;
};
// The Namespace of the class admission policies' params (one per controller).
struct ClassParamsKey {
  auto operator<=>(const ClassParamsKey&) const = default;
};
using WorkKey = std::variant<ClaimKey, DeviceKey, PodKey, NudgeKey, ClassParamsKey>;

// The kind label of metrics and logs: claim, device, pod, nudge, renudge or classparams.
const char* kindOf(const WorkKey& key);

// A work queue of typed keys. The shared queue stores strings; the encoding is private to this
// class and round-trips every key exactly (a name may hold any character).
class KeyQueue {
 public:
  void add(const WorkKey& key) { queue_.add(encode(key)); }
  void addAfter(const WorkKey& key, Duration delay) { queue_.addAfter(encode(key), delay); }
  void addRateLimited(const WorkKey& key) { queue_.addRateLimited(encode(key)); }
  void forget(const WorkKey& key) { queue_.forget(encode(key)); }
  // Blocks until a key is ready or the queue shuts down; pair each key with done().
  std::optional<WorkKey> get();
  void done(const WorkKey& key) { queue_.done(encode(key)); }
  size_t len() const { return queue_.len(); }
  void shutDown() { queue_.shutDown(); }

  static std::string encode(const WorkKey& key);
  static std::optional<WorkKey> decode(const std::string& text);

 private:
  WorkQueue queue_;
};

}  // namespace ker

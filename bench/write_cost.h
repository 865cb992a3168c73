#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clocks.h"

// The pure part of the whole-pipeline benchmark's write-cost stage (pipeline_bench --mode
// write-cost): the objects it makes and the two statuses each is written with in turn, shaped
// like what a bind writes, and the figures per write. The stage's loop is in pipeline_bench.
//
// The stage (once per cluster size, before the runs; --writes N, default 1,000) makes, in a
// namespace of its own, a device pinned to a node that does not exist, a claim and a pod of a
// scheduler nobody serves; then, kind after kind, N sequential status PUTs, each carrying the
// previous reply's resourceVersion and alternating between two bind-shaped statuses. Around each
// kind's loop it reads kube-apiserver's and etcd's CPU time (/proc/PID/stat) and the wall time.
// The controller would undo these writes, so pipeline.sh runs the stage while neither it nor the
// extender is up: the figures are the writes alone, without the watch fan-out to this project's
// informers that a run's writes also cost.
namespace ker::bench::pipeline::writecost {

enum class Kind { kDevice, kClaim, kPod };
inline constexpr Kind kKinds[] = {Kind::kDevice, Kind::kClaim, Kind::kPod};

// "ExtendedResource", "ExtendedResourceClaim", "Pod".
const char* kindName(Kind k);
// The kinds a comma-separated list of kindName()s names, in kKinds order; throws
// std::invalid_argument naming an unknown one, or for an empty list.
std::vector<Kind> parseKinds(const std::string& list);

// What the stage makes in its namespace `ns` (the device is cluster-scoped, named after ns).
struct Targets {
  std::string ns;
  std::string device;  // pinned to `node`, which does not exist: no scheduler can allocate it
  std::string node;
  std::string claim;
  std::string pod;  // of a scheduler nobody serves
  // Known once created: the bound forms name them.
  std::string claimUid;
  std::string podUid;
};
Targets targets(const std::string& ns);

nlohmann::json deviceObject(const Targets& t);
nlohmann::json claimObject(const Targets& t);
nlohmann::json podObject(const Targets& t);

// The name of the status write number i (0-based) puts: even writes the held form (device
// "Bound", claim "Bound", pod condition "True"), odd ones the free form ("Available",
// "Pending", "False"), so every write changes the object.
std::string stateOf(Kind k, size_t i);

// The body of status write number i: `current` (the previous reply, whose resourceVersion it
// carries as precondition) with its status set to stateOf(k, i). Device: Bound to the claim or
// Available, as the bind and its undo write it; claim: Bound to the pod on `node` with the
// device allocated, or Pending as the controller's release leaves it; pod: the condition
// kConditionType toggled. Conditions are stamped at `now`.
nlohmann::json nextStatus(Kind k, const Targets& t, const nlohmann::json& current, size_t i,
                          SystemTime now);

// The pod condition the stage toggles: a type of its own, so nothing reads it.
inline constexpr const char* kConditionType = "extendedresource.io/write-cost";

// One kind's loop as measured: CPU seconds of kube-apiserver and etcd and wall seconds around
// it, the writes made, the conflicts met (each retried from a fresh read), and the bytes of
// the reply (the object as the API server returns it, compact JSON) by state.
struct Measured {
  Kind kind = Kind::kDevice;
  size_t writes = 0;
  size_t conflicts = 0;
  double apiserverSeconds = 0;
  double etcdSeconds = 0;
  double wallSeconds = 0;
  std::map<std::string, size_t> bytes;
};

// {"kind", "writes", "conflicts", "apiserver_ms_per_write", "etcd_ms_per_write",
//  "wall_ms_per_write", "object_bytes": {state: bytes}}; per-write figures 0 without writes.
nlohmann::ordered_json toJson(const Measured& m);

}  // namespace ker::bench::pipeline::writecost

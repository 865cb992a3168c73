#include "bench/write_cost.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "bench/cluster.h"
#include "bench/pipeline_objects.h"
#include "common/api_time.h"
#include "common/comma_list.h"
#include "model/claim_transitions.h"
#include "model/device_transitions.h"
#include "model/objects.h"

namespace ker::bench::pipeline::writecost {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

bool held(size_t i) {
  return i % 2 == 0;
}

json podWithCondition(json pod, bool on, SystemTime now) {
  json& status = pod["status"];
  if (!status.is_object()) {
    status = json::object();
  }
  json conditions = json::array();
  if (status.contains("conditions") && status["conditions"].is_array()) {
    for (const auto& c : status["conditions"]) {
      if (c.value("type", "") != kConditionType) {
        conditions.push_back(c);
      }
    }
  }
  conditions.push_back({{"type", kConditionType},
                        {"status", on ? "True" : "False"},
                        {"reason", on ? "Held" : "Free"},
                        {"message", "toggled by pipeline_bench --mode write-cost"},
                        {"lastTransitionTime", formatTime(now)}});
  status["conditions"] = std::move(conditions);
  return pod;
}

}  // namespace

const char* kindName(Kind k) {
  switch (k) {
    case Kind::kDevice:
      return "ExtendedResource";
    case Kind::kClaim:
      return "ExtendedResourceClaim";
    case Kind::kPod:
      return "Pod";
  }
  return "?";
}

std::vector<Kind> parseKinds(const std::string& list) {
  const std::vector<std::string> names = splitCommaList(list);
  std::vector<Kind> out;
  for (const auto& name : names) {
    if (std::none_of(std::begin(kKinds), std::end(kKinds),
                     [&](Kind k) { return name == kindName(k); })) {
      throw std::invalid_argument("unknown kind '" + name +
                                  "' (ExtendedResource, ExtendedResourceClaim, Pod)");
    }
  }
  for (Kind k : kKinds) {
    if (std::find(names.begin(), names.end(), kindName(k)) != names.end()) {
      out.push_back(k);
    }
  }
  if (out.empty()) {
    throw std::invalid_argument("no kind named");
  }
  return out;
}

Targets targets(const std::string& ns) {
  Targets t;
  t.ns = ns;
  t.device = ns + "-device";
  t.node = ns + "-no-such-node";
  t.claim = "write-cost";
  t.pod = "write-cost";
  return t;
}

json deviceObject(const Targets& t) {
  json er = extendedResource(0, 0);
  er["metadata"] = {{"name", t.device}};
  er["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] = {
      t.node};
  return er;
}

json claimObject(const Targets& t) {
  return claim(t.ns, t.claim, 1, "k80");
}

json podObject(const Targets& t) {
  json p = pod(Variant::kNoClaims, t.ns, t.pod, "");
  p["spec"]["schedulerName"] = "write-cost-nobody";
  return p;
}

std::string stateOf(Kind k, size_t i) {
  switch (k) {
    case Kind::kDevice:
      return held(i) ? toString(DevicePhase::kBound) : toString(DevicePhase::kAvailable);
    case Kind::kClaim:
      return held(i) ? toString(ClaimPhase::kBound) : toString(ClaimPhase::kPending);
    case Kind::kPod:
      return held(i) ? "True" : "False";
  }
  return "?";
}

json nextStatus(Kind k, const Targets& t, const json& current, size_t i, SystemTime now) {
  switch (k) {
    case Kind::kDevice: {
      auto d = ExtendedResource::fromJson(current);
      if (!d.invalid.empty()) {
        throw std::runtime_error("device " + t.device + " reads as invalid: " + d.invalid);
      }
      // As a bind and its undo write it.
      Status changed;
      if (held(i)) {
        changed = bindDevice(d, ClaimRef{t.ns, t.claim, t.claimUid}, static_cast<int64_t>(i) + 1,
                             {PodRef{t.pod, t.podUid}});
      } else {
        changed = undoDeviceBind(d);
      }
      if (!changed.ok()) {
        throw std::runtime_error(changed.message());
      }
      return d.toJson(now);
    }
    case Kind::kClaim: {
      auto c = ExtendedResourceClaim::fromJson(current);
      if (!c.invalid.empty()) {
        throw std::runtime_error("claim " + t.claim + " reads as invalid: " + c.invalid);
      }
      // As a bind and the controller's release write it.
      Status changed;
      if (held(i)) {
        changed = bindClaim(c, PodRef{t.pod, t.podUid}, t.node, {t.device});
      } else {
        changed = releaseClaim(c, "pod " + t.ns + "/" + t.pod + " is gone");
      }
      if (!changed.ok()) {
        throw std::runtime_error(changed.message());
      }
      return c.toJson(now);
    }
    case Kind::kPod:
      return podWithCondition(current, held(i), now);
  }
  throw std::invalid_argument("unknown kind");
}

ojson toJson(const Measured& m) {
  const double n = static_cast<double>(m.writes);
  auto perWrite = [&](double seconds) { return m.writes > 0 ? seconds * 1000 / n : 0.0; };
  ojson bytes = ojson::object();
  for (const auto& [state, b] : m.bytes) {
    bytes[state] = b;
  }
  return {{"kind", kindName(m.kind)},
          {"writes", m.writes},
          {"conflicts", m.conflicts},
          {"apiserver_ms_per_write", perWrite(m.apiserverSeconds)},
          {"etcd_ms_per_write", perWrite(m.etcdSeconds)},
          {"wall_ms_per_write", perWrite(m.wallSeconds)},
          {"object_bytes", bytes}};
}

}  // namespace ker::bench::pipeline::writecost

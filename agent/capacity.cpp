#include "agent/capacity.h"

#include "common/label_selector.h"
#include "common/quantity.h"

namespace ker::agent {

using json = nlohmann::json;

Capacity planCapacity(const ClassTable& classes, const NodeFile& inventory,
                      const std::map<std::string, bool>& healthy) {
  Capacity out;
  for (const auto& cls : classes.all()) {
    if (classes.serving(cls->extendedResourceName) != cls) {
      continue;
    }
    int64_t count = 0;
    for (const auto& d : inventory.devices) {
      auto seen = healthy.find(d.name);
      if (seen != healthy.end() && seen->second && d.rawResourceName == cls->rawResourceName &&
          matches(cls->metadataRequirements, d.properties)) {
        ++count;
      }
    }
    out[cls->extendedResourceName] = count;
  }
  return out;
}

namespace {

std::map<std::string, std::string> quantities(const json& status, const char* key) {
  std::map<std::string, std::string> out;
  auto m = status.find(key);
  if (m == status.end() || !m->is_object()) {
    return out;
  }
  for (const auto& [name, value] : m->items()) {
    if (value.is_string()) {
      out[name] = value.get<std::string>();
    }
  }
  return out;
}

// Adds to `patch` what makes `current` show `desired` and lack `dropped`.
void diff(const Capacity& desired, const std::set<std::string>& dropped,
          const std::map<std::string, std::string>& current, json& patch) {
  for (const auto& [name, count] : desired) {
    const std::string want = std::to_string(count);
    auto have = current.find(name);
    if (have == current.end() || Quantity::parse(have->second) != Quantity::parse(want)) {
      patch[name] = want;
    }
  }
  for (const auto& name : dropped) {
    if (current.count(name) != 0) {
      patch[name] = nullptr;
    }
  }
}

}  // namespace

NodeResources NodeResources::fromJson(const json& obj) {
  NodeResources out;
  if (!obj.is_object()) {
    return out;
  }
  if (auto meta = obj.find("metadata"); meta != obj.end()) {
    try {
      out.meta = parseObjectMeta(*meta);
    } catch (const std::invalid_argument&) {
      // The name and UID are not what the capacity sync reads; the quantities are.
    }
  }
  if (auto status = obj.find("status"); status != obj.end() && status->is_object()) {
    out.capacity = quantities(*status, "capacity");
    out.allocatable = quantities(*status, "allocatable");
  }
  return out;
}

json capacityPatch(const Capacity& desired, const std::set<std::string>& advertised,
                   const NodeResources& current) {
  std::set<std::string> dropped;
  for (const auto& name : advertised) {
    if (desired.count(name) == 0) {
      dropped.insert(name);
    }
  }
  json capacity = json::object();
  json allocatable = json::object();
  diff(desired, dropped, current.capacity, capacity);
  diff(desired, dropped, current.allocatable, allocatable);
  json status = json::object();
  if (!capacity.empty()) {
    status["capacity"] = std::move(capacity);
  }
  if (!allocatable.empty()) {
    status["allocatable"] = std::move(allocatable);
  }
  return status.empty() ? json::object() : json{{"status", std::move(status)}};
}

std::set<std::string> advertisedDuringWrite(const Capacity& desired,
                                            const std::set<std::string>& advertised) {
  std::set<std::string> out = advertised;
  for (const auto& [name, count] : desired) {
    out.insert(name);
  }
  return out;
}

}  // namespace ker::agent

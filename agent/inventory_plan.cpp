#include "agent/inventory_plan.h"

#include <map>

#include "agent/device_identity.h"
#include "model/device_transitions.h"

namespace ker::agent {

namespace {

using json = nlohmann::json;

json desiredSpec(const DeviceSpec& device, const std::string& node) {
  json properties = json::object();
  for (const auto& [k, v] : device.properties) {
    properties[k] = v;
  }
  return {
      {"rawResourceName", device.rawResourceName},
      {"deviceID", device.deviceID},
      {"properties", properties},
      {"nodeAffinity",
       {{"required",
         {{"nodeSelectorTerms",
           json::array({{{"matchFields", json::array({{{"key", "metadata.name"},
                                                       {"operator", "In"},
                                                       {"values", json::array({node})}}})}}})}}}}},
  };
}

// Fields the API server defaults or the agent does not own (none today) are not compared:
// the spec is compared as the agent writes it.
bool specDiffers(const ExtendedResource& published, const json& spec) {
  const json raw = published.raw.parse();
  auto it = raw.find("spec");
  return it == raw.end() || *it != spec;
}

}  // namespace

std::string managedSelector(const std::string& node) {
  return std::string(kNodeLabel) + "=" + node + "," + kManagedByLabel + "=" + kManagedByValue;
}

bool publishedBy(const ExtendedResource& device, const std::string& node) {
  auto at = device.meta.labels.find(kNodeLabel);
  auto by = device.meta.labels.find(kManagedByLabel);
  return at != device.meta.labels.end() && at->second == node && by != device.meta.labels.end() &&
         by->second == kManagedByValue;
}

json desiredObject(const DeviceSpec& device, const std::string& node) {
  return {
      {"apiVersion", kApiVersion},
      {"kind", "ExtendedResource"},
      {"metadata",
       {{"name", device.name},
        {"labels", {{kNodeLabel, node}, {kManagedByLabel, kManagedByValue}}},
        {"finalizers", json::array({kDeviceProtectionFinalizer})}}},
      {"spec", desiredSpec(device, node)},
  };
}

InventoryPlan planInventory(const NodeFile& file, const std::string& node,
                            const std::vector<const ExtendedResource*>& published) {
  InventoryPlan plan;
  std::map<std::string, const ExtendedResource*> byName;
  for (const auto* er : published) {
    byName[er->meta.name] = er;
  }
  std::map<std::string, std::string> unlistedByKey;  // deviceIdKey -> published name
  for (const auto* er : published) {
    if (file.find(er->meta.name) == nullptr) {
      unlistedByKey.emplace(deviceIdKey(er->rawResourceName, er->deviceID), er->meta.name);
    }
  }
  for (const auto& device : file.devices) {
    auto it = byName.find(device.name);
    if (it == byName.end()) {
      auto old = unlistedByKey.find(deviceIdKey(device.rawResourceName, device.deviceID));
      if (old != unlistedByKey.end()) {
        plan.waiting.emplace(device.name, old->second);
      } else {
        plan.creates.push_back({desiredObject(device, node)});
      }
      continue;
    }
    const ExtendedResource& er = *it->second;
    json spec = desiredSpec(device, node);
    if (!er.meta.deleting && specDiffers(er, spec)) {
      json obj = er.raw.parse();
      obj["spec"] = std::move(spec);
      plan.updates.push_back({std::move(obj)});
    }
    byName.erase(it);
  }
  for (const auto& [name, er] : byName) {
    if (er->meta.deleting) {
      continue;
    }
    if (heldForClaim(*er)) {
      plan.unlistedHeld.push_back(name);
    } else {
      plan.deletes.push_back({name, er->meta.uid, er->meta.resourceVersion});
    }
  }
  return plan;
}

}  // namespace ker::agent

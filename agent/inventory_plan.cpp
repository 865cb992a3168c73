#include "agent/inventory_plan.h"

#include <map>

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

json nodeOwner(const NodeIdentity& node) {
  return {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node.name}, {"uid", node.uid}};
}

bool isNodeOwner(const json& ref) {
  return ref.is_object() && ref.value("kind", "") == "Node" && ref.value("apiVersion", "") == "v1";
}

// The object's ownerReferences with every Node replaced by `node`: owners someone else added
// stay.
json withNodeOwner(const json& object, const NodeIdentity& node) {
  json owners = json::array();
  if (auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
    if (auto refs = meta->find("ownerReferences"); refs != meta->end() && refs->is_array()) {
      for (const auto& ref : *refs) {
        if (!isNodeOwner(ref)) {
          owners.push_back(ref);
        }
      }
    }
  }
  owners.push_back(nodeOwner(node));
  return owners;
}

// Owned by the node's current Node object, and by no other Node.
bool ownedByNode(const ExtendedResource& published, const NodeIdentity& node) {
  size_t nodes = 0;
  bool current = false;
  for (const auto& ref : published.meta.ownerReferences) {
    if (ref.kind == "Node" && ref.apiVersion == "v1") {
      ++nodes;
      current = current || (ref.name == node.name && ref.uid == node.uid);
    }
  }
  return current && nodes == 1;
}

// Fields the API server defaults or the agent does not own (none today) are not compared:
// the spec is compared as the agent writes it.
bool specDiffers(const json& raw, const json& spec) {
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

json desiredObject(const DeviceSpec& device, const NodeIdentity& node) {
  return {
      {"apiVersion", kApiVersion},
      {"kind", "ExtendedResource"},
      {"metadata",
       {{"name", device.name},
        {"labels", {{kNodeLabel, node.name}, {kManagedByLabel, kManagedByValue}}},
        {"finalizers", json::array({kDeviceProtectionFinalizer})},
        {"ownerReferences", json::array({nodeOwner(node)})}}},
      {"spec", desiredSpec(device, node.name)},
  };
}

InventoryPlan planInventory(const NodeFile& file, const NodeIdentity& node,
                            const std::vector<const ExtendedResource*>& published) {
  InventoryPlan plan;
  std::map<std::string, const ExtendedResource*> byName;
  for (const auto* er : published) {
    byName[er->meta.name] = er;
  }
  for (const auto& device : file.devices) {
    auto it = byName.find(device.name);
    if (it == byName.end()) {
      if (!node.uid.empty()) {
        plan.creates.push_back({desiredObject(device, node)});
      }
      continue;
    }
    const ExtendedResource& er = *it->second;
    byName.erase(it);
    if (er.meta.deleting || node.uid.empty()) {
      continue;
    }
    json obj = er.raw.parse();
    json spec = desiredSpec(device, node.name);
    if (specDiffers(obj, spec) || !ownedByNode(er, node)) {
      obj["spec"] = std::move(spec);
      obj["metadata"]["ownerReferences"] = withNodeOwner(obj, node);
      plan.updates.push_back({std::move(obj)});
    }
  }
  for (const auto& [name, er] : byName) {
    if (!er->meta.deleting) {
      plan.deletes.push_back({name, er->meta.uid});
    }
  }
  return plan;
}

}  // namespace ker::agent

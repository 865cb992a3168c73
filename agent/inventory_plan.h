#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/node_file.h"
#include "model/objects.h"

// Which ExtendedResources the node's file asks for, against those the agent published before:
// the pure decision behind the inventory sync.
namespace ker::agent {

// Labels on every ExtendedResource the agent publishes (with kNodeLabel): they are how it finds its
// own (and only its own) devices again, and how it tells them from devices created by hand.
inline constexpr const char* kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr const char* kManagedByValue = "extended-resource-node-agent";

// The node the agent publishes for: its name, and the UID of its Node object as the agent last
// saw it ("" while it has seen none: not read yet, or deleted).
struct NodeIdentity {
  std::string name;
  std::string uid;
};

// "extendedresource.io/node=<node>,app.kubernetes.io/managed-by=extended-resource-node-agent".
std::string managedSelector(const std::string& node);
// Whether the object carries those labels: the agent of `node` published it.
bool publishedBy(const ExtendedResource& device, const std::string& node);

// The ExtendedResource the agent publishes for device on node: metadata (name, labels, the
// controller's protection finalizer, the Node as owner) and spec, with nodeAffinity pinned to the
// node by name. No status: the controller initialises it. The finalizer is the one the
// controller puts on every device at once (and takes off a deleting one it does not protect):
// created with it, a device is protected from its first moment, and the controller writes it
// once, not twice. The Node owns its devices as it owns its Lease and CSINode: deleting the Node
// deletes them (a device in use once its pod lets it go), so a node that is gone leaves no
// device to offer, and one that registers again (a new UID) gets its devices published anew.
nlohmann::json desiredObject(const DeviceSpec& device, const NodeIdentity& node);

namespace inventory_op {
struct Create {
  nlohmann::json object;
};
// The published spec differs from the file, or the Node it names as owner is not the node's
// current one: replace the spec and that owner (metadata.resourceVersion of the object as seen
// is the precondition).
struct Update {
  nlohmann::json object;
};
// Published before, no longer in the file.
struct Delete {
  std::string name;
  std::string uid;  // precondition: never delete a same-named object created since
};
}  // namespace inventory_op

struct InventoryPlan {
  std::vector<inventory_op::Create> creates;
  std::vector<inventory_op::Update> updates;
  std::vector<inventory_op::Delete> deletes;
  bool empty() const { return creates.empty() && updates.empty() && deletes.empty(); }
};

// published: the ExtendedResources carrying this node's managed labels. Devices the file lists
// that are not published are created, those that differ in spec or owner are updated (their
// status is left alone), and published ones the file no longer lists are deleted. Objects being
// deleted are waited for, never written. Without the Node's UID nothing is created or updated:
// a device owned by no Node would be the garbage collector's at once.
InventoryPlan planInventory(const NodeFile& file, const NodeIdentity& node,
                            const std::vector<const ExtendedResource*>& published);

}  // namespace ker::agent

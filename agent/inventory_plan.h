#pragma once

#include <map>
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

// "extendedresource.io/node=<node>,app.kubernetes.io/managed-by=extended-resource-node-agent".
std::string managedSelector(const std::string& node);
// Whether the object carries those labels: the agent of `node` published it.
bool publishedBy(const ExtendedResource& device, const std::string& node);

// The ExtendedResource the agent publishes for device on node: metadata (name, labels and the
// controller's protection finalizer) and spec, with nodeAffinity pinned to the node by name. No
// status: the controller initialises it. The finalizer is the one the controller puts on every
// device at once (and takes off a deleting one it does not protect): created with it, a device
// is protected from its first moment, and the controller writes it once, not twice.
nlohmann::json desiredObject(const DeviceSpec& device, const std::string& node);

namespace inventory_op {
struct Create {
  nlohmann::json object;
};
// The published spec differs from the file: replace the spec (metadata.resourceVersion of
// the object as seen is the precondition).
struct UpdateSpec {
  nlohmann::json object;
};
// Published before, no longer in the file, and free.
struct Delete {
  std::string name;
  std::string uid;  // precondition: never delete a same-named object created since
  // precondition: never delete a device bound (or otherwise written) since it was seen free
  std::string resourceVersion;
};
}  // namespace inventory_op

struct InventoryPlan {
  std::vector<inventory_op::Create> creates;
  std::vector<inventory_op::UpdateSpec> updates;
  std::vector<inventory_op::Delete> deletes;
  // Published before and no longer in the file, but held for a claim: not deleted, since a pod
  // may be running with it or about to start with it (and the entry may come back). The health
  // check reports them unhealthy; once their claim frees them they are deleted.
  std::vector<std::string> unlistedHeld;
  // In the file, not published, and the same device (deviceID of its resource) as a published
  // object the file no longer lists: created once that object is gone, so that no scheduler
  // sees one device twice (name -> the old object's name).
  std::map<std::string, std::string> waiting;
  // Nothing to write.
  bool empty() const { return creates.empty() && updates.empty() && deletes.empty(); }
};

// published: the ExtendedResources carrying this node's managed labels. Devices the file lists
// that are not published are created, those that differ in spec are updated (their status is
// left alone), and published ones the file no longer lists are deleted once free: one held for
// a claim is kept (unlistedHeld) until its claim lets it go, so that an entry removed between
// a pod's bind and its start, or while it runs, never turns the claim Lost. A device the file
// lists under a new name waits for its old object to go (waiting). Objects being deleted are
// waited for, never written.
InventoryPlan planInventory(const NodeFile& file, const std::string& node,
                            const std::vector<const ExtendedResource*>& published);

}  // namespace ker::agent

#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "agent/node_file.h"
#include "common/kube_objects.h"
#include "model/resource_class.h"

// What the node advertises for the ExtendedResourceClasses: the pure decisions behind the
// agent's writes to its Node's status, so that the kubelet's admission and kube-scheduler's
// fit count a class's devices as they count a device plugin's.
namespace ker::agent {

// Extended resource name -> how many devices the node has for it.
using Capacity = std::map<std::string, int64_t>;

// For each class that serves its name (ClassTable::serving; a superseded or invalid class
// advertises nothing), the devices of this node it selects (its rawResourceName, its
// metadataRequirements over their properties) that were last seen healthy. `healthy`: device
// name -> the last health observation; a device without one (not published, not checked yet)
// is not counted. A class selecting none is advertised with 0: the node has none to offer.
Capacity planCapacity(const ClassTable& classes, const NodeFile& inventory,
                      const std::map<std::string, bool>& healthy);

// A Node's status.capacity and status.allocatable, as the agent reads them back.
struct NodeResources {
  ObjectMeta meta;
  std::map<std::string, std::string> capacity;     // name -> quantity, as stored
  std::map<std::string, std::string> allocatable;  // name -> quantity, as stored
  // Lenient: an entry that is not a string is left out (then it differs from any plan).
  static NodeResources fromJson(const nlohmann::json& obj);
};

// The JSON merge patch of the Node's status that makes both status.capacity and
// status.allocatable show `desired`, and drops the names of `advertised` (what the agent wrote
// before) that `desired` no longer has: only the keys that differ (quantities compared as
// quantities, "1k" being 1000), a dropped name set to null. An empty object when the node
// already shows the plan.
nlohmann::json capacityPatch(const Capacity& desired, const std::set<std::string>& advertised,
                             const NodeResources& current);

// The names the agent records as advertised before it sends a write of `desired`: those the
// node may show already (`advertised`) and those the write adds. A name leaves the record only
// once a write that dropped it succeeded (then the record is `desired`'s names), so an agent
// that stops at any point still knows every name of its own the node may show.
std::set<std::string> advertisedDuringWrite(const Capacity& desired,
                                            const std::set<std::string>& advertised);

}  // namespace ker::agent

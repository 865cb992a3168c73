#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "agent/node_file.h"
#include "model/container_shares.h"
#include "model/objects.h"
#include "model/resource_class.h"

// What a container gets: the pure decision behind the agent's answer to the runtime's
// CreateContainer. No I/O: the caller looks the claims and device nodes up first.
namespace ker::agent {

// The pod a container belongs to, as the runtime reports it (NRI's PodSandbox): its identity
// and the annotations it was created with.
struct PodIdentity {
  std::string uid;
  std::string ns;
  std::string name;
  std::map<std::string, std::string> annotations;
};

// The claims a pod uses, as every component reads them (podClaimNames): those its claims
// annotation names and those the controller made for its template entries and for the
// extended resources its containers ask for.
struct NamedClaims {
  std::vector<std::string> names;  // empty: the pod names none
  std::string invalid;             // an annotation does not parse
  // Template entries without a claim recorded yet (a pod bound regardless is refused).
  std::vector<std::string> awaiting;
  // Extended resource name -> the claim the record names for it (PodClaimNames::resourceClaims).
  std::map<std::string, std::string> resourceClaims;
};
NamedClaims namedClaims(const PodIdentity& pod);

// Whether the kubelet got the pod from the API server (its config source annotation), not from
// a static file or URL, where it can carry any UID and has no API object of that UID.
bool fromApiServer(const PodIdentity& pod);

// What the kernel opens through a device node, whatever path names it: two nodes with one
// number are one device.
struct DeviceNumber {
  char type = 'c';  // 'c' or 'b'
  int64_t major = 0;
  int64_t minor = 0;
  auto operator<=>(const DeviceNumber&) const = default;
  std::string str() const;  // "c 195:0"
};

// A device node as the host has it (stat of the path).
struct DeviceNodeInfo {
  char type = 'c';  // 'c' or 'b'
  int64_t major = 0;
  int64_t minor = 0;
  uint32_t fileMode = 0;  // permission bits
  uint32_t uid = 0;
  uint32_t gid = 0;
  DeviceNumber number() const { return {type, major, minor}; }
};

struct ContainerDevice {
  std::string path;
  DeviceNodeInfo info;
  std::string permissions;  // the device cgroup access, some of "rwm"
};

struct ContainerMount {
  std::string source;
  std::string destination;
  bool readOnly = true;
};

// The changes the runtime applies to the container.
struct Adjustment {
  std::vector<std::pair<std::string, std::string>> env;  // sorted by name
  std::vector<ContainerDevice> devices;
  std::vector<ContainerMount> mounts;
  std::vector<std::string> cdiDevices;   // fully qualified; the runtime applies their specs
  std::vector<std::string> deviceNames;  // the ExtendedResources injected, for logs
  std::vector<std::string> deviceKeys;   // what identifies them (deviceKeys), each once
};

enum class RefusalReason {
  kInvalidAnnotation,  // the claims annotation does not parse
  kClaimNotFound,
  kClaimUnreadable,    // neither the cache nor the API could say
  kClaimNotBound,      // Pending or Lost, or its status cannot be read
  kClaimOfOtherPod,    // Bound to another pod (another UID), or on another node
  kDeviceNotOnNode,    // an allocated device this node's file does not list
  kDeviceNodeMissing,  // a device node of an allocated device is not on the host
  kDeviceInUse,        // a container of another pod on this node still has the device
  kNotFromApiServer,   // a pod naming claims that the kubelet did not get from the API server
  kUnclaimedDevice,    // the container asks for a managed device (variable, node) on its own
  kCdiDeviceUnknown,   // an allocated device's CDI name is in none of the runtime's specs
  kClassClaimMissing,  // the pod asks for a resource a class serves, and no claim was made for it
  kPodUnreadable,      // the pod's spec (its requests) or the classes could not be read
  kAgentFault,         // the agent failed to decide (a fault of its own); the kubelet retries
};
const char* toString(RefusalReason reason);

struct Refusal {
  RefusalReason reason;
  std::string message;
};

// The pod names no claims, and the container carries no device variable to empty: it is left as
// it is.
struct Untouched {};

using Injection = std::variant<Untouched, Refusal, Adjustment>;

// What the container's own spec asks of the runtime, before any adjustment.
struct ContainerRequest {
  // The variables of its process as the runtime built it: its image's and its spec's.
  std::vector<std::string> envNames;
  // The host paths it mounts, with symlinks resolved where the agent sees the host
  // (DeviceProbe::resolve): /dev/char/195:0 is /dev/nvidia0.
  std::vector<std::string> mountSources;
  // The device nodes it is given (a privileged one: all), by their path in the container: a
  // device plugin or a CDI spec may give a device under a path of its own.
  std::map<std::string, DeviceNumber> devices;
  std::string name;  // the container's name in the pod spec
  // Whether a mount's source is the kubelet's bind mount of a subPath (kSubPathMountFolder), whose
  // host path only the pod's spec tells: then subPathSources, resolved as mountSources are.
  bool mountsSubPath = false;
  std::vector<std::string> subPathSources;  // NodePod::hostSubPaths of this container
  // The mount and subPath sources that are device nodes on the host, with their numbers, as far
  // as the agent sees the host (DeviceProbe::deviceNode; its host root may show only /dev).
  std::map<std::string, DeviceNumber> mountedNodes;
  // The variables its pod spec's env sets (NodePod::specEnvNames), when the pod was read (for a
  // container that carries a device variable): what tells one the user set from one its image
  // set.
  std::optional<std::vector<std::string>> specEnvNames;
};

// Whether `name` is a resource's device variable, which the agent alone sets: the variable
// (NodeFile::envNameFor) of a resource of the devices in force, or of a resource this node's
// agent has published devices of (`published`: one the file no longer lists may still be held,
// and a runtime still hands it out by the variable). A variable the file names for a resource
// this node has no device of is left to whoever serves it here (a vendor's device plugin). While
// no devices are in force (`inventory` nullptr), any variable named as the agent names a
// resource's by default.
bool deviceVariable(const NodeFile* inventory, const std::set<std::string>& published,
                    const std::string& name);
// Whether `name` has the form of a device variable (the default prefix, or a name the file gives
// a resource), before asking which resources have devices here: what deviceVariable checks
// first, and what tells the caller whether the published devices are worth reading.
bool namedAsDeviceVariable(const NodeFile& inventory, const std::string& name);

// Whether the adjustment gives no device and only empties device variables its image set (a
// container of a pod without claims, or without a share of its pod's): what it is counted and
// logged as.
bool onlyEmptiesVariables(const Adjustment& adj);

// The folder of a pod's kubelet directory holding its subPath bind mounts.
inline constexpr const char* kSubPathMountFolder = "/volume-subpaths/";

// Whether the agent refuses containers that reach this node's managed devices without a claim:
// by setting a resource's device variable in their pod spec (which a runtime such as NVIDIA's may
// honour; one their image sets is emptied instead), by
// mounting a device node or a folder holding one (/dev), or by being given one (privileged). Pods
// of the exempt namespaces (system daemons, e.g. a vendor's monitoring) are not checked. While
// the agent knows no managed device (no node file in force), every device node may be one.
struct DeviceGuard {
  bool enabled = true;
  std::vector<std::string> exemptNamespaces;

  // Whether containers of a pod in namespace `ns` are checked.
  bool checks(const std::string& ns) const;
};

// A container on this node that was given a device: the pod it belongs to.
struct DeviceUse {
  std::string containerId;
  std::string container;  // its name
  std::string podUid;
  std::string ns;
  std::string pod;  // its name
  std::string podKey() const { return objectKey(ns, pod); }
  bool operator==(const DeviceUse&) const = default;
};

// Allocated device names the file in force no longer lists, each with the file's entry that
// lists the same device (deviceIdKey) under a new name: the old object is kept for its claim
// (InventoryPlan::unlistedHeld), and the new name waits for it (InventoryPlan::waiting).
using RenamedDevices = std::map<std::string, std::string>;

// For each of `names` the file does not list: the entry of the device its published object
// (of this node) is, when the file lists that device under another name.
RenamedDevices renamedEntries(const NodeFile& file, const std::vector<std::string>& names,
                              const std::vector<ExtendedResource>& published);

// The file's entry for an allocated device: the one of its name, else the one it was renamed
// to; nullptr when neither is listed.
const DeviceSpec* entryFor(const NodeFile& file, const RenamedDevices& renamed,
                           const std::string& name);

struct InjectionInput {
  const PodIdentity* pod = nullptr;
  std::string node;
  NamedClaims named;
  // Each named claim as the API has it, nullptr when it does not exist.
  std::map<std::string, const ExtendedResourceClaim*> claims;
  // Named claims that could not be read, with the error.
  std::map<std::string, std::string> unreadable;
  // The devices in force; nullptr while none are (no node file has parsed since the agent
  // started and none was kept): then no device is given, and the guard takes every device
  // node under /dev as managed.
  const NodeFile* inventory = nullptr;
  // Allocated devices the file lists under a new name: a holder's container is given what the
  // new entry says (the device is the same), under the name its claim lists.
  RenamedDevices renamed;
  // The resources of the devices this node's agent has published (deviceVariable).
  std::set<std::string> publishedResources;
  // Each device node path of the allocated devices, nullopt when it is missing on the host.
  std::map<std::string, std::optional<DeviceNodeInfo>> deviceNodes;
  // The device nodes of the devices in force, by number (those present on the host): the guard
  // knows a managed device by its number under any path. Read only when the container is given
  // device nodes or mounts one (managedNumbersNeeded).
  std::map<DeviceNumber, std::string> managedNumbers;
  // The containers on this node, not yet stopped, that were given a device of each key of the
  // allocated devices (DeviceUsers::of), by key; absent keys have none.
  std::map<std::string, std::vector<DeviceUse>> users;
  ContainerRequest container;
  DeviceGuard guard;
  // The CDI devices the runtime's spec directories define, read when an allocated device has
  // a CDI name, and those directories (for the refusal's message).
  std::set<std::string> cdiDevices;
  std::vector<std::string> cdiSpecDirs;
  // The pod as the API has it, for what the runtime does not pass on: the extended resources its
  // containers ask for (Pod::extendedRequests) and its scheduler. Read only when some class
  // exists (or the classes are not known yet), or the guard needs the spec (a subPath mount, a
  // device variable); podUnreadable says why it could not be.
  ExtendedRequests requests;
  std::string schedulerName;
  std::string podUnreadable;
  // The ExtendedResourceClasses; nullptr while they have not been read.
  const ClassTable* classes = nullptr;
};

// A container gets the devices of the claims its pod names only when every one of them is
// Bound to this pod (its UID) on this node and lists devices this node has, and no container of
// another pod (one that is not a holder of the same shared claim) still has one of them on this
// node, as the runtime reports it: a pod whose claim was released while its containers still run
// (deleted with --force, say) keeps the device until the runtime says they stopped. A device is
// known by what it is (deviceKeys), not by its name alone: one listed under a new name while a
// container still has it stays that container's. Otherwise its
// creation is refused (the kubelet retries it), so it never starts without its devices or with
// another pod's. A pod naming claims must come from the API server (not a static pod, which can
// carry any UID), and no container reaches a managed device it was not given (DeviceGuard): each
// device variable it carries is the agent's, set to its devices' IDs or emptied. The
// claims' status is the only source of the allocation: the pod's own annotations say which
// claims it wants, never which devices it has. A device with a CDI name is passed to the runtime
// by that name (its spec's edits are the vendor's), and only when a spec defines it: a runtime
// that cannot resolve it would fail the creation with a less telling error.
//
// A claim made from a class (its spec.containers lists the pod's containers that asked for the
// devices) gives each container only its share (shareDevices); a container without one gets
// none of that claim's devices, and the checks and the DeviceGuard see only what it gets. A
// pod whose containers ask for an extended resource a class serves must have a claim for it in
// its record: without one (a scheduler that does not call the extender bound it) its containers
// are refused, rather than started without the devices they asked for.
Injection decideInjection(const InjectionInput& in);

// Container annotation the agent sets on every container it gave devices (their names,
// comma-separated): how it recognises, on reconnecting, a container that started without it.
inline constexpr const char* kInjectedAnnotation = "extendedresource.io/injected-devices";
// Container annotation beside it: the devices' keys (Adjustment::deviceKeys) as a JSON list, so
// that on reconnecting the agent knows them by what they are even if renamed since.
inline constexpr const char* kInjectedKeysAnnotation = "extendedresource.io/injected-device-keys";

// A container the runtime created without asking the agent although its pod required it: the
// pod names claims and lists `plugin` in its required-plugins annotation (the bind put it
// there), yet the container lacks kInjectedAnnotation. NRI lets such a container through when
// the agent dies or stalls in the middle of answering for it (the runtime counts the plugin as
// consulted); the agent stops it once it is back, and the kubelet creates it again through the
// agent.
bool startedWithoutDevices(const PodIdentity& pod,
                           const std::map<std::string, std::string>& containerAnnotations,
                           const std::string& plugin);

// A container as the runtime reports it (NRI's Container), with what the stop rule reads.
struct RuntimeContainer {
  std::string id;
  std::string name;
  std::string podSandboxId;
  bool running = false;  // started and not yet stopped
  bool stopped = false;  // stopped (a container created and not started is neither)
  uint32_t pid = 0;      // its first process on the host; 0 before it starts
  std::map<std::string, std::string> annotations;
  // What its spec asked of the runtime, as the guard reads it (mount sources resolved by the
  // caller), and the variables it carries with a value.
  ContainerRequest request;
  std::vector<std::string> valuedEnvNames;
};

// A container to stop now, and the process that stopping it kills.
struct Eviction {
  std::string containerId;
  std::string container;  // its name, for logs
  std::string pod;        // namespace/name
  uint32_t pid = 0;
  std::string reason;
};

// The running containers that started without their devices (startedWithoutDevices), keyed
// to their pods by sandbox ID. One that is created but not started has no process yet: it is
// found again when it starts (the runtime's PostStartContainer).
std::vector<Eviction> planEvictions(const std::map<std::string, PodIdentity>& podsBySandbox,
                                    const std::vector<RuntimeContainer>& containers,
                                    const std::string& plugin);

// The running containers that started without the agent's answer (no kInjectedAnnotation:
// created while it was stopped, stalled or dropped) in pods that name no claims and whose
// namespace the guard checks, and that the guard would have refused or changed: they reach a
// managed device without a claim (a mount or a device node), or carry a device variable with a
// value, which a runtime that honours it may have turned into every device. Stopped, they are
// created again through the agent. Only with devices in force (`inventory`): without, every
// device node may be managed, and a container of a system daemon would be stopped for the
// agent's own lack of a file. A subPath mount's host path is not known without the pod's spec,
// so such a mount is not checked here. Pods that name claims follow planEvictions. The agent's
// own container (its first process `self`, the agent, which mounts /dev) is never stopped:
// installed outside the exempt namespaces, the agent would otherwise stop itself at each start.
std::vector<Eviction> planGuardEvictions(const std::map<std::string, PodIdentity>& podsBySandbox,
                                         const std::vector<RuntimeContainer>& containers,
                                         const NodeFile* inventory,
                                         const std::map<DeviceNumber, std::string>& managedNumbers,
                                         const std::set<std::string>& publishedResources,
                                         const DeviceGuard& guard, const std::string& plugin,
                                         uint32_t self);

// The device node paths decideInjection will ask about for these claims (those of the
// allocated devices this node lists), so the caller can stat exactly those.
std::vector<std::string> deviceNodePaths(const std::vector<const ExtendedResourceClaim*>& claims,
                                         const NodeFile& inventory,
                                         const RenamedDevices& renamed = {});

// Whether the guard compares numbers for the container (InjectionInput::managedNumbers): it is
// given device nodes or mounts one. The usual container costs no stat of the managed nodes.
bool managedNumbersNeeded(const ContainerRequest& container);

}  // namespace ker::agent

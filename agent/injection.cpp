#include "agent/injection.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "agent/device_identity.h"
#include "common/comma_list.h"

namespace ker::agent {

namespace {

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) {
    out += (out.empty() ? "" : ",") + p;
  }
  return out;
}

Refusal refuse(RefusalReason reason, std::string message) {
  return Refusal{reason, std::move(message)};
}

// Empty when the claim is Bound to this pod on this node, else why not.
std::optional<Refusal> notHeldByPod(const std::string& name, const ExtendedResourceClaim* c,
                                    const PodIdentity& pod, const std::string& node) {
  const std::string key = objectKey(pod.ns, name);
  if (!c) {
    return refuse(RefusalReason::kClaimNotFound, "claim " + key + " does not exist");
  }
  if (!c->statusReadable || c->phase != ClaimPhase::kBound) {
    return refuse(RefusalReason::kClaimNotBound,
                  "claim " + key + " is " + toString(c->phase) +
                      (c->statusReadable ? "" : " with an unreadable status") + ", not Bound");
  }
  if (pod.uid.empty() || !c->heldBy(pod.uid)) {
    const auto refs = c->holders();
    std::string who = refs.empty() ? std::string("no pod") : "";
    for (const auto& ref : refs) {
      who += (who.empty() ? "pod " : ", pod ") + ref.name + " (uid " + ref.uid + ")";
    }
    return refuse(RefusalReason::kClaimOfOtherPod, "claim " + key + " is bound to " + who +
                                                       ", not to this pod (uid " + pod.uid + ")");
  }
  if (c->nodeName != node) {
    return refuse(RefusalReason::kClaimOfOtherPod,
                  "claim " + key + " is bound on node " + c->nodeName + ", not on " + node);
  }
  return std::nullopt;
}

}  // namespace

bool DeviceGuard::checks(const std::string& ns) const {
  return enabled &&
         std::find(exemptNamespaces.begin(), exemptNamespaces.end(), ns) == exemptNamespaces.end();
}

namespace {

// Where a mount of `source` (no trailing '/') reaches device node `node`.
bool reaches(const std::string& source, const std::string& node) {
  return source == "/" || node == source || node.rfind(source + "/", 0) == 0;
}

// The path with "." and ".." resolved as written and no trailing '/', as compared.
std::string normalPath(const std::string& raw) {
  std::string path = std::filesystem::path(raw).lexically_normal().string();
  while (path.size() > 1 && path.back() == '/') {
    path.pop_back();
  }
  return path;
}

// Why a refusal made while no node file is in force is made.
constexpr const char* kNoFileInForce =
    "the node agent has no node file in force (its file is missing or cannot be used, and no "
    "usable copy of one that parsed was kept)";

// The device nodes every container has (the runtime's defaults), which no node file lists, with
// the numbers Linux gives them.
const std::map<std::string, DeviceNumber>& defaultDevices() {
  static const std::map<std::string, DeviceNumber> kDefaults{
      {"/dev/null", {'c', 1, 3}},    {"/dev/zero", {'c', 1, 5}},    {"/dev/full", {'c', 1, 7}},
      {"/dev/random", {'c', 1, 8}},  {"/dev/urandom", {'c', 1, 9}}, {"/dev/tty", {'c', 5, 0}},
      {"/dev/console", {'c', 5, 1}}, {"/dev/ptmx", {'c', 5, 2}}};
  return kDefaults;
}

bool everyContainersDevice(const std::string& path) {
  return defaultDevices().count(path) != 0;
}

// A default device node, at its own path and with its own number: what the runtime gives every
// container, not a device under a default's name.
bool defaultDevice(const std::string& path, const DeviceNumber& number) {
  auto it = defaultDevices().find(path);
  return it != defaultDevices().end() && it->second == number;
}

// Paths under /dev that hold no device node and that daemons commonly mount (the syslog socket,
// shared memory).
bool holdsNoDeviceNode(const std::string& path) {
  return path == "/dev/log" || reaches("/dev/shm", path);
}

// The first device variable (deviceVariable) the container's pod spec sets itself. One its image
// sets is no one's choice to refuse: clearedVariables empties it instead.
std::optional<std::string> variableSetInSpec(const InjectionInput& in) {
  if (!in.container.specEnvNames) {
    return std::nullopt;
  }
  for (const auto& name : *in.container.specEnvNames) {
    if (deviceVariable(in.inventory, in.publishedResources, name)) {
      return name;
    }
  }
  return std::nullopt;
}

// The device variables the container carries (from its image: its spec's are refused) that the
// agent does not set from its devices (`set`), each emptied: a runtime that hands devices by such
// a variable (NVIDIA's, with NVIDIA_VISIBLE_DEVICES=all in every CUDA image) then gives none.
// Nothing for a container the guard does not check.
std::map<std::string, std::string> clearedVariables(const InjectionInput& in,
                                                    const std::map<std::string, std::string>& set) {
  std::map<std::string, std::string> out;
  if (!in.guard.checks(in.pod->ns)) {
    return out;
  }
  for (const auto& name : in.container.envNames) {
    if (set.count(name) == 0 && deviceVariable(in.inventory, in.publishedResources, name)) {
      out.emplace(name, "");
    }
  }
  return out;
}

// Why the container may reach a device while the agent knows none of the node's devices, or
// nothing: it fails closed, since any of them may be managed. A mount of /dev, of a folder
// holding it, or of anything in it but the runtime's default devices, the syslog socket and
// shared memory is refused, as is any device node given beyond the defaults, each at its own
// path with its own number (a privileged container's, or one another device plugin serves), and
// a variable the pod spec sets named as the agent names a resource's by default (a node file's
// own envName cannot be known without it).
std::optional<Refusal> deviceUseWithoutInventory(const InjectionInput& in,
                                                 const std::vector<std::string>& sources) {
  const std::string why =
      std::string("; ") + kNoFileInForce + ", so any device may be one it manages";
  if (auto name = variableSetInSpec(in)) {
    return refuse(RefusalReason::kUnclaimedDevice, "the container sets " + *name + " itself" + why);
  }
  for (const auto& raw : sources) {
    const std::string source = normalPath(raw);
    const bool intoDev =
        reaches(source, "/dev") ||
        (reaches("/dev", source) && !everyContainersDevice(source) && !holdsNoDeviceNode(source));
    if (intoDev) {
      return refuse(RefusalReason::kUnclaimedDevice, "the container mounts " + source + why);
    }
  }
  for (const auto& [path, number] : in.container.devices) {
    if (!defaultDevice(normalPath(path), number)) {
      return refuse(RefusalReason::kUnclaimedDevice,
                    "the container is given device node " + path + why);
    }
  }
  return std::nullopt;
}

// Why the container reaches a managed device under a path of another's (`allocated` as for
// unclaimedDeviceUse), or nothing: a device node it is given, or a device node it mounts, whose
// number is a managed device node's and none of its allocation's. A default device at its own
// path with its own number is the runtime's, whatever a node file lists.
std::optional<Refusal> unclaimedDeviceNumber(const InjectionInput& in,
                                             const std::set<std::string>& allocated) {
  if (in.managedNumbers.empty()) {
    return std::nullopt;
  }
  std::set<DeviceNumber> given;
  for (const auto& path : allocated) {
    if (auto it = in.deviceNodes.find(path); it != in.deviceNodes.end() && it->second) {
      given.insert(it->second->number());
    }
  }
  auto managedElsewhere = [&](const std::string& path,
                              const DeviceNumber& number) -> const std::string* {
    if (defaultDevice(normalPath(path), number) || given.count(number) != 0) {
      return nullptr;
    }
    auto managed = in.managedNumbers.find(number);
    return managed == in.managedNumbers.end() ? nullptr : &managed->second;
  };
  for (const auto& [path, number] : in.container.devices) {
    if (const std::string* node = managedElsewhere(path, number)) {
      return refuse(RefusalReason::kUnclaimedDevice,
                    "the container is given device node " + path + " (" + number.str() +
                        "), which is device node " + *node + " of a device it was not allocated");
    }
  }
  for (const auto& [source, number] : in.container.mountedNodes) {
    if (const std::string* node = managedElsewhere(source, number)) {
      return refuse(RefusalReason::kUnclaimedDevice,
                    "the container mounts " + source + " (" + number.str() +
                        "), which is device node " + *node + " of a device it was not allocated");
    }
  }
  return std::nullopt;
}

// Why the container reaches a managed device of this node it was not given (`allocated`: the
// device node paths of its allocation), or nothing. Every path is compared normalised, as a
// file may write /dev//x for /dev/x.
std::optional<Refusal> unclaimedDeviceUse(const InjectionInput& in,
                                          const std::set<std::string>& allocated) {
  if (!in.guard.checks(in.pod->ns)) {
    return std::nullopt;
  }
  std::vector<std::string> sources = in.container.mountSources;
  sources.insert(sources.end(), in.container.subPathSources.begin(),
                 in.container.subPathSources.end());
  if (!in.inventory) {
    return deviceUseWithoutInventory(in, sources);
  }
  std::set<std::string> nodes;
  for (const auto& d : in.inventory->devices) {
    for (const auto& n : d.deviceNodes) {
      nodes.insert(normalPath(n.path));
    }
  }
  std::set<std::string> given;
  for (const auto& path : allocated) {
    given.insert(normalPath(path));
  }
  if (auto name = variableSetInSpec(in)) {
    return refuse(
        RefusalReason::kUnclaimedDevice,
        "the container sets " + *name + " itself; the node agent sets it from the pod's claims");
  }
  for (const auto& raw : sources) {
    const std::string source = normalPath(raw);
    for (const auto& node : nodes) {
      if (reaches(source, node) && given.count(node) == 0) {
        return refuse(RefusalReason::kUnclaimedDevice, "the container mounts " + source +
                                                           ", which holds device node " + node +
                                                           " of a device it was not allocated");
      }
    }
  }
  for (const auto& [raw, number] : in.container.devices) {
    const std::string path = normalPath(raw);
    if (nodes.count(path) != 0 && given.count(path) == 0) {
      return refuse(RefusalReason::kUnclaimedDevice,
                    "the container is given device node " + path +
                        " (privileged?) of a device it was not allocated");
    }
  }
  return unclaimedDeviceNumber(in, allocated);
}

// The kubelet's record of where it got the pod ("api", "file", "http"); NRI passes the pod's
// annotations on.
constexpr const char* kConfigSourceAnnotation = "kubernetes.io/config.source";

// The devices of claim c the container gets: its share of a claim made from a class (none when
// it has no share), all of any other claim's.
std::vector<std::string> devicesOf(const ExtendedResourceClaim& c, const std::string& container) {
  if (c.containers.empty()) {
    return c.allocated;
  }
  auto shares = shareDevices(c.containers, c.allocated);
  auto it = shares.find(container);
  return it == shares.end() ? std::vector<std::string>{} : std::move(it->second);
}

// Why the pod may not run for what it asks in its resources: a class serves a resource its
// containers ask for and its record names no claim for it, or its spec or the classes are not
// known. Nothing when it may.
std::optional<Refusal> classRequestUnserved(const InjectionInput& in) {
  const std::string podKey = objectKey(in.pod->ns, in.pod->name);
  if (!in.podUnreadable.empty()) {
    return refuse(RefusalReason::kPodUnreadable,
                  "pod " + podKey + " cannot be read to tell what it asks for (the extended " +
                      "resources of its containers, the host paths of their subPath mounts, " +
                      "the variables their spec sets): " + in.podUnreadable);
  }
  if (in.requests.empty()) {
    return std::nullopt;
  }
  if (!in.classes) {
    return refuse(RefusalReason::kPodUnreadable,
                  "pod " + podKey + " asks for extended resources and the node agent has not " +
                      "read the ExtendedResourceClasses yet");
  }
  const ClassRequests requests = classRequests(in.requests, *in.classes);
  if (const auto* unrecorded = unrecordedRequest(requests, in.named.resourceClaims)) {
    return refuse(RefusalReason::kClassClaimMissing,
                  "pod " + podKey + " asks for " + unrecorded->first +
                      ", which ExtendedResourceClass " + unrecorded->second.cls->meta.name +
                      " serves, but no claim was made for it (was it scheduled by " +
                      (in.schedulerName.empty() ? "a scheduler" : in.schedulerName) +
                      ", other than the profile the extended-resource scheduler serves?)");
  }
  return std::nullopt;
}

}  // namespace

const char* toString(RefusalReason reason) {
  switch (reason) {
    case RefusalReason::kInvalidAnnotation:
      return "InvalidAnnotation";
    case RefusalReason::kClaimNotFound:
      return "ClaimNotFound";
    case RefusalReason::kClaimUnreadable:
      return "ClaimUnreadable";
    case RefusalReason::kClaimNotBound:
      return "ClaimNotBound";
    case RefusalReason::kClaimOfOtherPod:
      return "ClaimOfOtherPod";
    case RefusalReason::kDeviceNotOnNode:
      return "DeviceNotOnNode";
    case RefusalReason::kDeviceNodeMissing:
      return "DeviceNodeMissing";
    case RefusalReason::kDeviceInUse:
      return "DeviceInUse";
    case RefusalReason::kNotFromApiServer:
      return "NotFromApiServer";
    case RefusalReason::kUnclaimedDevice:
      return "UnclaimedDevice";
    case RefusalReason::kCdiDeviceUnknown:
      return "CdiDeviceUnknown";
    case RefusalReason::kClassClaimMissing:
      return "ClassClaimMissing";
    case RefusalReason::kPodUnreadable:
      return "PodUnreadable";
    case RefusalReason::kAgentFault:
      return "AgentFault";
  }
  return "Unknown";
}

NamedClaims namedClaims(const PodIdentity& pod) {
  PodClaimNames names = podClaimNames(pod.annotations);
  NamedClaims out;
  if (!names.invalid.empty()) {
    out.invalid = std::move(names.invalid);
    return out;
  }
  out.names = std::move(names.claims);
  out.awaiting = std::move(names.awaiting);
  out.resourceClaims = std::move(names.resourceClaims);
  return out;
}

bool deviceVariable(const NodeFile* inventory, const std::set<std::string>& published,
                    const std::string& name) {
  if (!inventory) {
    return name.starts_with(kDefaultEnvPrefix);
  }
  // Asked of every variable a container carries (hundreds with service links): one of neither
  // form is answered without building each device's variable name.
  if (!namedAsDeviceVariable(*inventory, name)) {
    return false;
  }
  return std::any_of(
             inventory->devices.begin(), inventory->devices.end(),
             [&](const auto& d) { return inventory->envNameFor(d.rawResourceName) == name; }) ||
         std::any_of(published.begin(), published.end(),
                     [&](const auto& resource) { return inventory->envNameFor(resource) == name; });
}

bool namedAsDeviceVariable(const NodeFile& inventory, const std::string& name) {
  return name.starts_with(kDefaultEnvPrefix) ||
         std::any_of(inventory.envNames.begin(), inventory.envNames.end(),
                     [&](const auto& kv) { return kv.second == name; });
}

bool onlyEmptiesVariables(const Adjustment& adj) {
  return adj.deviceNames.empty() && !adj.env.empty();
}

std::string DeviceNumber::str() const {
  return std::string(1, type) + " " + std::to_string(major) + ":" + std::to_string(minor);
}

bool managedNumbersNeeded(const ContainerRequest& container) {
  return !container.devices.empty() || !container.mountedNodes.empty();
}

bool fromApiServer(const PodIdentity& pod) {
  auto source = pod.annotations.find(kConfigSourceAnnotation);
  return source == pod.annotations.end() || source->second == "api";
}

RenamedDevices renamedEntries(const NodeFile& file, const std::vector<std::string>& names,
                              const std::vector<ExtendedResource>& published) {
  RenamedDevices out;
  for (const auto& name : names) {
    if (file.find(name) != nullptr) {
      continue;
    }
    auto object = std::find_if(published.begin(), published.end(),
                               [&](const ExtendedResource& d) { return d.meta.name == name; });
    if (object == published.end()) {
      continue;
    }
    const std::string key = deviceIdKey(object->rawResourceName, object->deviceID);
    auto entry = std::find_if(file.devices.begin(), file.devices.end(), [&](const DeviceSpec& d) {
      return deviceIdKey(d.rawResourceName, d.deviceID) == key;
    });
    if (entry != file.devices.end()) {
      out.emplace(name, entry->name);
    }
  }
  return out;
}

const DeviceSpec* entryFor(const NodeFile& file, const RenamedDevices& renamed,
                           const std::string& name) {
  if (const DeviceSpec* d = file.find(name)) {
    return d;
  }
  auto it = renamed.find(name);
  return it == renamed.end() ? nullptr : file.find(it->second);
}

std::vector<std::string> deviceNodePaths(const std::vector<const ExtendedResourceClaim*>& claims,
                                         const NodeFile& inventory, const RenamedDevices& renamed) {
  std::set<std::string> paths;
  for (const auto* c : claims) {
    for (const auto& name : c->allocated) {
      if (const DeviceSpec* d = entryFor(inventory, renamed, name)) {
        for (const auto& n : d->deviceNodes) {
          paths.insert(n.path);
        }
      }
    }
  }
  return {paths.begin(), paths.end()};
}

bool startedWithoutDevices(const PodIdentity& pod,
                           const std::map<std::string, std::string>& containerAnnotations,
                           const std::string& plugin) {
  NamedClaims named = namedClaims(pod);
  if (named.names.empty() && named.invalid.empty() && named.awaiting.empty()) {
    return false;
  }
  if (containerAnnotations.count(kInjectedAnnotation)) {
    return false;
  }
  // Pods bound before the agent was required (no annotation naming it) are left as they are.
  const std::vector<std::string> required = requiredPlugins(pod.annotations);
  return std::find(required.begin(), required.end(), plugin) != required.end();
}

std::vector<Eviction> planEvictions(const std::map<std::string, PodIdentity>& podsBySandbox,
                                    const std::vector<RuntimeContainer>& containers,
                                    const std::string& plugin) {
  std::vector<Eviction> out;
  for (const auto& c : containers) {
    auto pod = podsBySandbox.find(c.podSandboxId);
    if (pod == podsBySandbox.end() || !c.running || c.pid == 0 ||
        !startedWithoutDevices(pod->second, c.annotations, plugin)) {
      continue;
    }
    const std::string podKey = objectKey(pod->second.ns, pod->second.name);
    out.push_back({c.id, c.name, podKey, c.pid,
                   "container " + c.name + " of pod " + podKey + " started without " + plugin});
  }
  return out;
}

std::vector<Eviction> planGuardEvictions(const std::map<std::string, PodIdentity>& podsBySandbox,
                                         const std::vector<RuntimeContainer>& containers,
                                         const NodeFile* inventory,
                                         const std::map<DeviceNumber, std::string>& managedNumbers,
                                         const std::set<std::string>& publishedResources,
                                         const DeviceGuard& guard, const std::string& plugin,
                                         uint32_t self) {
  std::vector<Eviction> out;
  if (!inventory || !guard.enabled) {
    return out;
  }
  for (const auto& c : containers) {
    auto pod = podsBySandbox.find(c.podSandboxId);
    if (pod == podsBySandbox.end() || !c.running || c.pid == 0 || c.pid == self ||
        c.annotations.count(kInjectedAnnotation) != 0 || !guard.checks(pod->second.ns)) {
      continue;
    }
    const NamedClaims named = namedClaims(pod->second);
    if (!named.names.empty() || !named.invalid.empty() || !named.awaiting.empty()) {
      continue;
    }
    std::string why;
    for (const auto& name : c.valuedEnvNames) {
      if (deviceVariable(inventory, publishedResources, name)) {
        why = "it carries " + name + " with a value, which the agent would have emptied";
        break;
      }
    }
    if (why.empty()) {
      InjectionInput in;
      in.pod = &pod->second;
      in.inventory = inventory;
      in.managedNumbers = managedNumbers;
      in.publishedResources = publishedResources;
      in.guard = guard;
      in.container = c.request;
      if (auto refusal = unclaimedDeviceUse(in, {})) {
        why = refusal->message;
      }
    }
    if (!why.empty()) {
      const std::string podKey = objectKey(pod->second.ns, pod->second.name);
      out.push_back({c.id, c.name, podKey, c.pid,
                     "container " + c.name + " of pod " + podKey + " started without " + plugin +
                         ": " + why});
    }
  }
  return out;
}

Injection decideInjection(const InjectionInput& in) {
  const PodIdentity& pod = *in.pod;
  if (!in.named.invalid.empty()) {
    return refuse(RefusalReason::kInvalidAnnotation, in.named.invalid);
  }
  if (!in.named.awaiting.empty()) {
    return refuse(RefusalReason::kClaimNotFound, "no claim was made yet for template entry " +
                                                     in.named.awaiting.front() + " of pod " +
                                                     objectKey(pod.ns, pod.name));
  }
  // A static pod has no API object of its UID to read its requests from; it holds no claim.
  const bool apiPod = fromApiServer(pod);
  if (apiPod) {
    if (auto why = classRequestUnserved(in)) {
      return *why;
    }
  }
  if (in.named.names.empty()) {
    if (auto why = unclaimedDeviceUse(in, {})) {
      return *why;
    }
    const auto cleared = clearedVariables(in, {});
    if (cleared.empty()) {
      return Untouched{};
    }
    Adjustment adj;
    adj.env.assign(cleared.begin(), cleared.end());
    return adj;
  }
  if (!apiPod) {
    return refuse(RefusalReason::kNotFromApiServer,
                  "pod " + objectKey(pod.ns, pod.name) + " comes from the kubelet's " +
                      pod.annotations.at(kConfigSourceAnnotation) +
                      " source, not the API server: only pods of the API " +
                      "server can hold claims");
  }
  Adjustment adj;
  // rawResourceName -> device IDs, in claim then allocation order.
  std::map<std::string, std::vector<std::string>> idsByResource;
  std::map<std::string, std::vector<std::string>> deviceEnv;
  std::set<std::string> mountTargets;
  std::set<std::string> devicePaths;
  for (const auto& name : in.named.names) {
    if (auto err = in.unreadable.find(name); err != in.unreadable.end()) {
      return refuse(RefusalReason::kClaimUnreadable,
                    "claim " + objectKey(pod.ns, name) + " cannot be read: " + err->second);
    }
    auto it = in.claims.find(name);
    const ExtendedResourceClaim* c = it == in.claims.end() ? nullptr : it->second;
    if (auto why = notHeldByPod(name, c, pod, in.node)) {
      return *why;
    }
    for (const auto& deviceName : devicesOf(*c, in.container.name)) {
      if (!in.inventory) {
        return refuse(RefusalReason::kDeviceNotOnNode,
                      "device " + deviceName + " of claim " + objectKey(pod.ns, name) +
                          " cannot be given on node " + in.node + ": " + kNoFileInForce);
      }
      const DeviceSpec* d = entryFor(*in.inventory, in.renamed, deviceName);
      const std::string resource = c->resourceOf(deviceName);
      if (!d || resource.empty() || d->rawResourceName != resource) {
        return refuse(RefusalReason::kDeviceNotOnNode,
                      "device " + deviceName + " of claim " + objectKey(pod.ns, name) +
                          " is not a " + (resource.empty() ? "requested" : resource) +
                          " device of node " + in.node);
      }
      const std::vector<std::string> keys = deviceKeys(*d);
      for (const auto& key : keys) {
        auto users = in.users.find(key);
        if (users == in.users.end()) {
          continue;
        }
        for (const DeviceUse& use : users->second) {
          if (use.podUid != pod.uid && !c->heldBy(use.podUid)) {
            return refuse(
                RefusalReason::kDeviceInUse,
                "device " + deviceName + " of claim " + objectKey(pod.ns, name) +
                    " is still in use by container " + use.container + " of pod " + use.podKey() +
                    " (uid " + use.podUid + ") on node " + in.node + ", which has not stopped yet" +
                    (key == deviceNameKey(deviceName) ? std::string()
                                                      : " (it has the same device, " + key + ")"));
          }
        }
      }
      for (const auto& key : keys) {
        if (std::find(adj.deviceKeys.begin(), adj.deviceKeys.end(), key) == adj.deviceKeys.end()) {
          adj.deviceKeys.push_back(key);
        }
      }
      idsByResource[d->rawResourceName].push_back(d->deviceID);
      for (const auto& [k, v] : d->env) {
        auto& values = deviceEnv[k];
        if (std::find(values.begin(), values.end(), v) == values.end()) {
          values.push_back(v);
        }
      }
      for (const auto& n : d->deviceNodes) {
        auto info = in.deviceNodes.find(n.path);
        if (info == in.deviceNodes.end() || !info->second) {
          return refuse(RefusalReason::kDeviceNodeMissing, "device node " + n.path + " of device " +
                                                               deviceName + " is missing on node " +
                                                               in.node);
        }
        // A node shared by several devices (a control device) is created once.
        if (devicePaths.insert(n.path).second) {
          adj.devices.push_back({n.path, *info->second, n.permissions});
        }
      }
      if (!d->cdiDevice.empty()) {
        if (in.cdiDevices.count(d->cdiDevice) == 0) {
          return refuse(RefusalReason::kCdiDeviceUnknown,
                        "CDI device " + d->cdiDevice + " of device " + deviceName +
                            " is in no spec under " + joinCommaList(in.cdiSpecDirs) + " on node " +
                            in.node + ", so the runtime cannot inject it");
        }
        if (std::find(adj.cdiDevices.begin(), adj.cdiDevices.end(), d->cdiDevice) ==
            adj.cdiDevices.end()) {
          adj.cdiDevices.push_back(d->cdiDevice);
        }
      }
      for (const auto& m : d->mounts) {
        // Two devices sharing a library folder mount it once.
        if (mountTargets.insert(m.containerPath).second) {
          adj.mounts.push_back({m.hostPath, m.containerPath, m.readOnly});
        }
      }
      adj.deviceNames.push_back(deviceName);
    }
  }
  if (auto why = unclaimedDeviceUse(in, devicePaths)) {
    return *why;
  }
  std::map<std::string, std::string> env;
  for (const auto& [resource, ids] : idsByResource) {
    env[in.inventory->envNameFor(resource)] = join(ids);
  }
  for (const auto& [k, values] : deviceEnv) {
    env.emplace(k, join(values));
  }
  env.merge(clearedVariables(in, env));
  adj.env.assign(env.begin(), env.end());
  return adj;
}

}  // namespace ker::agent

#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clocks.h"
#include "common/kube_objects.h"
#include "common/object_reference.h"
#include "common/raw_object.h"
#include "common/resource.h"
#include "model/condition.h"
#include "model/container_shares.h"

// The typed spec and status of this project's kinds, and its view of a pod (the claims its
// annotations name). Parsed leniently: a field of the wrong shape makes the object invalid, with
// the reason, instead of throwing, so one bad object never blocks the others.
namespace ker {

inline constexpr const char* kGroup = "extendedresource.io";
inline constexpr const char* kVersion = "v1alpha1";
inline constexpr const char* kApiVersion = "extendedresource.io/v1alpha1";
inline constexpr const char* kClaimsAnnotation = "extendedresource.io/claims";
inline constexpr const char* kAllocationAnnotation = "extendedresource.io/allocation";
// A pod's claims made from templates (docs/templates.md): the user names the templates, one
// entry each ("gpu=gpu-template, fpga=fpga-template"); the controller makes one claim per
// entry and records its name ({"gpu": "web-0-gpu-x7k2p"}). Generated claims carry the two
// labels, so the controller finds one it made before it could record it.
inline constexpr const char* kClaimTemplatesAnnotation = "extendedresource.io/claim-templates";
inline constexpr const char* kGeneratedClaimsAnnotation = "extendedresource.io/generated-claims";
// The scheduling gate deploy/class-routing-policy.yaml gives a pod that asks for a class's
// resource: kube-scheduler leaves it alone until the controller has recorded its claims and
// lifted the gate (planTemplateClaims), instead of trying it, and parking it, before then.
inline constexpr const char* kClassClaimsGate = "extendedresource.io/class-claims";
inline constexpr const char* kTemplateEntryLabel = "extendedresource.io/template-entry";
inline constexpr const char* kPodUidLabel = "extendedresource.io/pod-uid";
// The node whose agent published a device (the agent's own ones carry it; the admission policy
// lets a node's agent write only those of its node).
inline constexpr const char* kNodeLabel = "extendedresource.io/node";
// NRI's pod-scoped list of plugins that must have processed each of the pod's containers
// (checked by the runtime's default validator when it is enabled): the bind names the node
// agent in it, so a container of a pod given devices never starts while the agent is away.
inline constexpr const char* kRequiredPluginsAnnotation = "required-plugins.noderesource.dev/pod";
// NRI's container-scoped form of that list ("<prefix><container name>"), which takes precedence
// over the pod's for that container.
inline constexpr const char* kRequiredPluginsContainerPrefix =
    "required-plugins.noderesource.dev/container.";
// The node agent's NRI plugin name: what it registers with, and what the bind puts in that
// annotation.
inline constexpr const char* kNodeAgentPluginName = "extended-resource-node-agent";
// The kube-scheduler profile (spec.schedulerName) whose pods the extender and the controller
// serve unless told another.
inline constexpr const char* kDefaultSchedulerName = "extended-resource-scheduler";
// The controller keeps a claim, and a device, from being deleted while a pod holds it (as
// PersistentVolumeClaim protection does): it puts these finalizers on every claim and device,
// and takes them off a deleting one once nothing holds it.
inline constexpr const char* kClaimProtectionFinalizer = "extendedresource.io/claim-protection";
inline constexpr const char* kDeviceProtectionFinalizer = "extendedresource.io/device-protection";
// The most pods a shareable claim has at once (status.holders' maxItems in the CRD): the
// extender keeps the next pod waiting.
inline constexpr size_t kMaxClaimHolders = 32;
// The most devices a claim asks for (spec.extendedResourceNum's maximum in the CRD).
inline constexpr int64_t kMaxClaimDevices = 1024;
// The most alternatives a claim's (or a request's) firstAvailable may list.
inline constexpr size_t kMaxClaimAlternatives = 8;
// The most named requests a claim's spec.requests may list.
inline constexpr size_t kMaxClaimRequests = 8;

struct ClaimRef {
  std::string ns;
  std::string name;
  std::string uid;
  bool operator==(const ClaimRef&) const = default;
};

struct PodRef {
  std::string name;
  std::string uid;
  bool operator==(const PodRef&) const = default;
};

enum class DevicePhase { kAvailable, kBound, kPending };
enum class ClaimPhase { kPending, kBound, kLost };

const char* toString(DevicePhase phase);
const char* toString(ClaimPhase phase);

// One ExtendedResource (device). Parsing is lenient: a field of the wrong shape sets
// `invalid` (a human-readable reason) instead of throwing, so one bad object never blocks
// the others. `raw` keeps the object so updates never drop fields this code does not know
// about.
struct ExtendedResource {
  ObjectMeta meta;
  std::string rawResourceName;
  std::string deviceID;
  std::map<std::string, std::string> properties;
  NodeSelector nodeAffinity;                    // spec.nodeAffinity.required
  DevicePhase phase = DevicePhase::kAvailable;  // an absent status counts as Available
  // Whether status.phase is written at all (present, not null, not empty), whatever its value:
  // a device without one is yet to be initialised, though its phase reads as Available.
  bool phaseWritten = false;
  std::optional<ClaimRef> claimRef;
  // status.releasedFrom: the claim whose release freed the device, until a bind or another
  // status write of the controller replaces it. What tells a freed device from one coming back.
  std::optional<ClaimRef> releasedFrom;
  // status.holders: the pods (in claimRef's namespace) given the device through claimRef, as
  // the bind and each join of a shared claim wrote them. The device itself names them so that
  // it stays Bound while one of them may still use it, whatever happens to the claim object.
  std::vector<PodRef> holders;
  // status.allocation: the claim's status.allocation as the bind that gave the device to it
  // wrote it (ExtendedResourceClaim::allocation), so that the claim's release alone frees the
  // device (freedByClaim); 0 while it names no claim, and for a device bound before binds were
  // counted, which only a write of its own frees.
  int64_t allocation = 0;
  std::string reason;
  std::string message;
  // status.conditions as read: the previous ones when the next status is written.
  std::vector<Condition> conditions;
  std::string invalid;
  RawObject raw;

  static ExtendedResource fromJson(const nlohmann::json& obj);
  // raw with the status fields overlaid (spec and metadata are never rewritten from the
  // typed fields, only status is), and the conditions deviceConditions derives from them at
  // `now`; suitable for updateStatus.
  nlohmann::json toJson(SystemTime now) const;
  // The node its kNodeLabel names; empty when it has none.
  std::string labelledNode() const;
};

// One of a claim's spec.constraints: a rule over the set of devices it gets, beyond each one
// suiting it on its own. Exactly one of the two properties is set; a claim has at most one
// distinctProperty.
struct DeviceConstraint {
  // Every device has this property, all with one value (the same NUMA node, PCIe root).
  std::string matchProperty;
  // Every device has this property, each with a value of its own (GPUs on different PCIe
  // roots, devices in different failure domains).
  std::string distinctProperty;
  // The property it names, whichever field holds it.
  const std::string& property() const {
    return matchProperty.empty() ? distinctProperty : matchProperty;
  }
  // For a claim with spec.requests: the requests whose devices it spans (empty in the spec: all
  // of them). Empty for a claim without requests, and in a request's unit for a constraint
  // within that request alone (ExtendedResourceClaim::units).
  std::vector<std::string> requests;
  bool operator==(const DeviceConstraint&) const = default;
};

// One of a claim's spec.firstAvailable: how many devices the claim takes, and which, when this
// is the first of its alternatives that fits on a node.
struct ClaimAlternative {
  std::string name;  // a DNS-1123 label, unique in the claim
  int64_t extendedResourceNum = 1;
  LabelSelector metadataRequirements{{}, {}, SelectorDialect::kProperties};
};

// The alternative of this name in a firstAvailable list (a claim's or a request's); nullptr
// for none.
const ClaimAlternative* alternativeIn(const std::vector<ClaimAlternative>& list,
                                      const std::string& name);

// One of a claim's spec.requests: devices of one resource, named so that the claim's status and
// its pod's allocation annotation tell which device serves what (a GPU and a NIC in one claim).
struct ClaimRequest {
  std::string name;  // a DNS-1123 label, unique in the claim
  std::string rawResourceName;
  int64_t extendedResourceNum = 1;
  LabelSelector metadataRequirements{{}, {}, SelectorDialect::kProperties};
  std::vector<ClaimAlternative> firstAvailable;  // as the claim's own, for this request
};

// One of a Bound claim's status.allocations: the devices one of its spec.requests got.
struct RequestAllocation {
  std::string request;  // "" for a claim without spec.requests
  std::vector<std::string> devices;
  std::string alternative;  // the request's firstAvailable alternative, "" without any
  bool operator==(const RequestAllocation&) const = default;
};

// One ExtendedResourceClaim.
struct ExtendedResourceClaim {
  ObjectMeta meta;
  std::string rawResourceName;
  int64_t extendedResourceNum = 1;
  LabelSelector metadataRequirements{{}, {}, SelectorDialect::kProperties};
  std::optional<std::vector<std::string>> extendedResourceNames;  // spec: allowed devices
  std::vector<DeviceConstraint> constraints;                      // spec.constraints
  // spec.firstAvailable: alternatives in order of preference, each with its own count and
  // selector in place of the claim's; empty for a claim of one shape.
  std::vector<ClaimAlternative> firstAvailable;
  // spec.requests: named requests, each with its own resource, count, selector and
  // alternatives in place of the claim's (which are then unset); empty for a claim of one
  // request. Read through units().
  std::vector<ClaimRequest> requests;
  // For a unit (units()): the name of the request it stands for; "" for a claim as written.
  std::string request;
  // spec.shareable: several pods may hold the claim at once, all on its node (docs/shared.md).
  bool shareable = false;
  // spec.containers: for a claim made from a class, the containers of its pod that asked for the
  // devices and how many each (shareDevices splits the allocation among them); empty for a claim
  // whose devices every container of its pods gets.
  std::vector<ContainerShare> containers;
  ClaimPhase phase = ClaimPhase::kPending;  // an absent status counts as Pending
  bool phaseWritten = false;                // as ExtendedResource::phaseWritten
  std::vector<std::string> allocated;       // status.extendedResourceNames
  // status.lostExtendedResourceNames: devices a Lost claim lost while its pod ran. They are
  // held for it until it is released, so a device recreated under the same name (the same
  // physical device) goes back to that pod instead of to a second one.
  std::vector<std::string> lost;
  std::string nodeName;  // status.nodeName
  // status.alternative: the name of the firstAvailable alternative the bind chose ("" for a
  // claim without alternatives, and while Pending).
  std::string alternative;
  // status.allocations: for a claim with spec.requests, which of `allocated` each request got
  // (and as which alternative); empty otherwise.
  std::vector<RequestAllocation> allocations;
  // status.podRef: the one holder of a claim that is not shareable. A shareable claim lists
  // its holders in status.holders instead, and has no podRef. Read both through holders().
  std::optional<PodRef> podRef;
  std::vector<PodRef> sharedHolders;  // status.holders
  // status.bindRewrites: how often a bind rewrote the claim, already bound to the pod, to reuse
  // it. Each rewrite counts up, so the write moves the resourceVersion and the status never
  // returns to an earlier form. Written only when above 0.
  int64_t bindRewrites = 0;
  // status.allocation: how many binds the claim has had, counted up by each (bindClaim) and
  // never down. A device names the count of the bind that gave it, which tells the devices of
  // the claim's current allocation from those of an earlier one (freedByClaim). Written only
  // when above 0.
  int64_t allocation = 0;
  std::string reason;
  std::string message;
  std::vector<Condition> conditions;  // as ExtendedResource::conditions
  std::string invalid;
  // False when the metadata or status (not only the spec) is among what `invalid` names:
  // then the status cannot be trusted to say what the claim holds.
  bool statusReadable = true;
  RawObject raw;

  static ExtendedResourceClaim fromJson(const nlohmann::json& obj);
  nlohmann::json toJson(SystemTime now) const;  // as ExtendedResource::toJson (claimConditions)
  // allocated, then lost: every device name the claim's status holds on to.
  std::vector<std::string> listedDevices() const;
  // The names no other pod may be given (the extender holds them, the controller binds a
  // device back under them): listedDevices() while Bound or Lost with a status that can be
  // trusted, none while Pending.
  std::vector<std::string> heldDevices() const;
  // heldDevices() by the resource each is of: the claim's, or for a claim with spec.requests
  // the resource of the request its status.allocations lists it under. A name no request
  // accounts for (a spec that no longer parses) is under "", any resource: a device is never
  // left free for not knowing which request held it.
  std::map<std::string, std::vector<std::string>> heldByResource() const;
  // Which request's devices status.allocations lists the device among; "" for none, and for a
  // claim without spec.requests.
  std::string requestOf(const std::string& device) const;
  // The resource the claim holds the device as: its rawResourceName, or, for a claim with
  // spec.requests or a status of allocations, that of the request requestOf names; "" when no
  // request of the spec does.
  std::string resourceOf(const std::string& device) const;
  // Every resource the claim asks for: its rawResourceName, or each request's, once each.
  std::vector<std::string> resourceNames() const;
  // Who holds the claim: podRef, then the holders list; the one way every component asks.
  std::vector<PodRef> holders() const;
  // Whom its devices are held for once `pod` has them too: holders(), then `pod` when it is not
  // among them (by UID).
  std::vector<PodRef> holdersWith(const PodRef& pod) const;
  // The pod with this UID is among holders() (by name when uid is empty, as for a pod that
  // has none yet).
  bool heldBy(const std::string& podUid, const std::string& podName = "") const;
  // Every holder's name, comma-separated, for messages; "" when none.
  std::string holderNames() const;
  // The firstAvailable alternative of this name; nullptr for none.
  const ClaimAlternative* alternativeNamed(const std::string& name) const;
  // The spec.requests entry of this name; nullptr for none.
  const ClaimRequest* requestNamed(const std::string& name) const;
  // The alternative status.alternative names; nullptr when it names none.
  const ClaimAlternative* chosen() const { return alternativeNamed(alternative); }
  // How many devices the claim holds when Bound: over its units, the chosen alternative's
  // count, or extendedResourceNum without alternatives; nullopt when a unit with alternatives
  // has none chosen.
  std::optional<int64_t> wantedCount() const;
  // The claim as one of its alternatives makes it: that count and selector in place of its
  // own, no alternatives, no raw object. What the planner fits.
  ExtendedResourceClaim as(const ClaimAlternative& alternative) const;
  // What is allocated, request by request: status.allocations for a claim with requests, else
  // one entry (request "") of `allocated` and `alternative`.
  std::vector<RequestAllocation> requestAllocations() const;
  // The claim one request at a time, each unit a claim of one request as the planner fits and
  // suitability judges it: that request's resource, count, selector and alternatives, the
  // constraints over its devices (those spanning several requests keep `requests`, which
  // sharedConstraintsMet checks), its part of the status, `request` naming it, no raw object.
  // A claim without spec.requests is its own one unit.
  std::vector<ExtendedResourceClaim> units() const;
  // The unit of the request of this name; nullopt for none.
  std::optional<ExtendedResourceClaim> unitNamed(const std::string& request) const;

 private:
  // A claim of one shape made from this one (as(), units()): its identity, named devices,
  // sharing, phase and validity, with this request, resource, count, selector and rules.
  ExtendedResourceClaim derived(const std::string& requestName, const std::string& resource,
                                int64_t count, const LabelSelector& selector,
                                std::vector<DeviceConstraint> rules) const;
};

// The key a unit goes by where a pod's units are fitted and bound side by side: the claim's
// "namespace/name", then "/request" for a request's unit.
std::string unitKey(const ExtendedResourceClaim& unit);

// One entry of the claim-templates annotation: the pod wants a claim of its own made from
// the template.
struct TemplateEntry {
  std::string name;          // a DNS-1123 label, unique in the pod
  std::string templateName;  // an ExtendedResourceClaimTemplate in the pod's namespace
  bool operator==(const TemplateEntry&) const = default;
};

// The claims a pod uses, read from its annotations: the one place every component (extender,
// controller, node agent) learns them.
struct PodClaimNames {
  // The claims the pod uses: those the claims annotation names, then the generated claims
  // recorded for its template entries and for the extended resources its containers ask for
  // (docs/classes.md); de-duplicated, in order.
  std::vector<std::string> claims;
  std::vector<TemplateEntry> templates;  // the claim-templates annotation
  // entry -> generated claim, for the entries of `templates` the record names.
  std::map<std::string, std::string> generated;
  // extended resource name -> the claim made from its class, as the record names them (keyed by
  // the resource name, which no template entry name can be).
  std::map<std::string, std::string> resourceClaims;
  // The entries of `templates` without a recorded claim yet, in order.
  std::vector<std::string> awaiting;
  std::string invalid;  // a garbled annotation: then nothing else can be relied on
};
PodClaimNames podClaimNames(const std::map<std::string, std::string>& annotations);

struct Pod {
  ObjectMeta meta;
  std::string nodeName;             // spec.nodeName
  std::string schedulerName;        // spec.schedulerName
  std::string phase;                // status.phase
  int32_t priority = 0;             // spec.priority, 0 when absent (as kube-scheduler reads it)
  bool preemptNever = false;        // spec.preemptionPolicy is Never
  int64_t gracePeriodSeconds = 30;  // spec.terminationGracePeriodSeconds, 30 when absent
  // The claims the pod uses (PodClaimNames::claims): named ones, then generated ones.
  std::vector<std::string> claims;
  std::vector<TemplateEntry> claimTemplates;           // PodClaimNames::templates
  std::map<std::string, std::string> generatedClaims;  // PodClaimNames::generated
  std::vector<std::string> awaitingTemplates;          // PodClaimNames::awaiting
  std::map<std::string, std::string> resourceClaims;   // PodClaimNames::resourceClaims
  // The extended resources its containers ask for in their resources (readExtendedRequests).
  ExtendedRequests extendedRequests;
  std::vector<std::string> schedulingGates;  // spec.schedulingGates[].name, in order
  std::string invalid;                       // e.g. a garbled claims annotation

  static Pod fromJson(const nlohmann::json& obj);
  bool finished() const { return phase == "Succeeded" || phase == "Failed"; }
  // Where spec.schedulingGates holds kClassClaimsGate; nullopt when the pod does not carry it.
  std::optional<size_t> classClaimsGate() const;
};

// One ExtendedResourceClaimTemplate: the labels, annotations and spec of the claims made from
// it. Parsed leniently, as the others.
struct ExtendedResourceClaimTemplate {
  ObjectMeta meta;
  std::map<std::string, std::string> claimLabels;       // spec.metadata.labels
  std::map<std::string, std::string> claimAnnotations;  // spec.metadata.annotations
  nlohmann::json claimSpec;                             // spec.spec, as stored
  // The resources its claims ask for (ExtendedResourceClaim::resourceNames of spec.spec).
  std::vector<std::string> claimResources;
  std::string invalid;  // including what makes spec.spec an invalid claim spec
  RawObject raw;

  static ExtendedResourceClaimTemplate fromJson(const nlohmann::json& obj);
};

// The plugins a pod requires, as NRI's default validator reads them: kRequiredPluginsAnnotation,
// else NRI's unscoped key, a JSON array of strings; empty when absent or unparsable.
std::vector<std::string> requiredPlugins(const std::map<std::string, std::string>& podAnnotations);

// The required-plugins annotation value for a pod that must be processed by `plugin`: the
// pod's own list (requiredPlugins) with plugin added when absent; a list that does not parse
// as a JSON array of strings is replaced.
std::string requiredPluginsValue(const std::map<std::string, std::string>& podAnnotations,
                                 const std::string& plugin);

// Every required-plugins annotation the bind writes so that each of the pod's containers needs
// `plugin`: the pod-scoped list (requiredPluginsValue), and each container-scoped list the pod
// carries with plugin added (NRI reads a container's own list before the pod's, so one set by
// the pod's author would otherwise let that container start without the plugin).
std::map<std::string, std::string> requiredPluginsAnnotations(
    const std::map<std::string, std::string>& podAnnotations, const std::string& plugin);

// Parses the claims annotation value ("a, b,c"); throws std::invalid_argument on a name that
// is not a valid DNS-1123 subdomain.
std::vector<std::string> parseClaimsAnnotation(const std::string& value);

// Parses the claim-templates annotation value ("gpu=gpu-template, fpga = fpga-template"):
// comma-separated entries, each an entry name (a DNS-1123 label) '=' a template name (a
// DNS-1123 subdomain). Throws std::invalid_argument on a malformed entry or a repeated entry
// name; an entry repeated identically counts once.
std::vector<TemplateEntry> parseClaimTemplatesAnnotation(const std::string& value);

// Parses the generated-claims record: a JSON object of entry name -> claim name. Throws
// std::invalid_argument when it is not one, or a claim name is not a DNS-1123 subdomain.
std::map<std::string, std::string> parseGeneratedClaimsAnnotation(const std::string& value);
// The record's text for these entries (a JSON object, keys sorted).
std::string generatedClaimsValue(const std::map<std::string, std::string>& generated);

namespace resources {
extern const Resource kExtendedResources;               // cluster-scoped
extern const Resource kExtendedResourceClaims;          // namespaced
extern const Resource kExtendedResourceClaimTemplates;  // namespaced
}  // namespace resources

// The object an event about each kind names.
ObjectReference referenceTo(const ExtendedResourceClaim& claim);
ObjectReference referenceTo(const ExtendedResource& device);
ObjectReference referenceTo(const Pod& pod);

}  // namespace ker

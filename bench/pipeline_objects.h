#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "common/resource.h"

// The objects of the whole-pipeline benchmark (bench/pipeline_bench): the same devices as this
// project's ExtendedResources and as DRA ResourceSlices, and the pods of its variants.
namespace ker::bench::pipeline {

// The DRA driver, also the DeviceClass's name and the attribute domain.
inline constexpr const char* kDriver = "gpu.example.com";
// Devices 0-3 of every node are k80s, 4-7 p100s.
inline constexpr int kK80PerNode = 4;

// The ExtendedResourceClass of the kClasses variant and the name its pods ask for; every
// node advertises that name (as its node agent would), and nothing else uses it.
inline constexpr const char* kClassName = "gpu";
inline constexpr const char* kClassResourceName = "example.com/gpu-class";
// The DeviceClass of the kDraClasses variant and the name its pods ask for; no node
// advertises it, which is how kube-scheduler knows DRA serves it.
inline constexpr const char* kMappedDeviceClass = "mapped.gpu.example.com";
inline constexpr const char* kDraClassResourceName = "example.com/gpu-dra";

// kTemplates: this project's profile, pods made by a ReplicaSet, each claim made from a
// template by the controller. kClasses: this project's profile, pods asking for
// kClassResourceName in their limits, each claim made from the class by the controller.
// kClassesRouted: the same pods naming no scheduler, routed to this project's profile by
// deploy/'s MutatingAdmissionPolicy as a Deployment's would be.
// kDraClasses: the default profile, pods asking for kDraClassResourceName in their limits,
// each claim made by kube-scheduler from the mapped DeviceClass.
enum class Variant {
  kExtender,
  kDra,
  kNoClaims,
  kTemplates,
  kClasses,
  kClassesRouted,
  kDraClasses
};
inline constexpr Variant kVariants[] = {
    Variant::kExtender, Variant::kDra,           Variant::kNoClaims,  Variant::kTemplates,
    Variant::kClasses,  Variant::kClassesRouted, Variant::kDraClasses};
// "extender", "dra", "no-claims", "templates", "classes", "classes-routed", "dra-classes"
const char* variantName(Variant v);
// Throws std::invalid_argument for an unknown name.
Variant parseVariant(const std::string& name);
// The variants whose claims are DRA ResourceClaims (the others': ExtendedResourceClaims).
bool usesDraClaims(Variant v);
// The variants whose pods ask in their limits, their claims made per pod while timed.
bool claimsMadePerPod(Variant v);

namespace resources {
extern const Resource kResourceSlices;  // resource.k8s.io/v1, cluster-scoped
extern const Resource kDeviceClasses;   // resource.k8s.io/v1, cluster-scoped
extern const Resource kResourceClaims;  // resource.k8s.io/v1, namespaced
extern const Resource kReplicaSets;     // apps/v1, namespaced
}  // namespace resources

// Device d of node i as an ExtendedResource, pinned to the node (bench::device's shape, but
// every node alike: four k80s and four p100s), with the protection finalizer the node agent
// publishes its devices with.
nlohmann::json extendedResource(size_t node, int d);
// All eight devices of node i as one ResourceSlice of kDriver (pool = the node, one slice):
// attribute `type` (string) and capacity `memory`, as the ExtendedResources' properties.
nlohmann::json resourceSlice(size_t node);
// The DeviceClass every DRA claim names: the devices of kDriver.
nlohmann::json deviceClass();
// kMappedDeviceClass: deviceClass()'s devices, serving kDraClassResourceName
// (spec.extendedResourceName).
nlohmann::json mappedDeviceClass();
// kClassName: every device of the bench's raw resource (no selector, as the mapped DeviceClass
// selects all of kDriver's), serving kClassResourceName.
nlohmann::json extendedResourceClass();
// kubeletNode(i) advertising kClassResourceName as its node agent would: one per device in
// status.capacity and status.allocatable.
nlohmann::json nodeObject(size_t i);
// The status merge patch that makes a node created without it advertise kClassResourceName
// as nodeObject() does.
nlohmann::json classCapacityPatch();
// The CEL selector of a claim for one k80.
std::string k80Selector();
// One DRA claim: exactly one device of the class, selected by k80Selector().
nlohmann::json resourceClaim(const std::string& ns, const std::string& name);
// An ExtendedResourceClaimTemplate for one k80, the template of the kTemplates variant.
nlohmann::json claimTemplate(const std::string& ns, const std::string& name);
// The pod of a variant: the same container and requests in all of them; kExtender names
// `claim` in the extendedresource.io/claims annotation and uses the second scheduler's
// profile, kDra references the pre-created ResourceClaim `claim`, kNoClaims asks for no device,
// kTemplates names the template `claim` (entry "gpu") in extendedresource.io/claim-templates
// and uses the second scheduler's profile, kClasses asks for one kClassResourceName in the
// container's limits and uses the second scheduler's profile, kDraClasses asks for one
// kDraClassResourceName in them (`claim` unused for these two).
nlohmann::json pod(Variant v, const std::string& ns, const std::string& name,
                   const std::string& claim);
// A ReplicaSet of `replicas` kTemplates pods naming the template `templateName`.
nlohmann::json replicaSet(const std::string& ns, const std::string& name, size_t replicas,
                          const std::string& templateName);

}  // namespace ker::bench::pipeline

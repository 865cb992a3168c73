#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/kube_objects.h"
#include "common/raw_object.h"
#include "common/resource.h"
#include "model/container_shares.h"
#include "model/objects.h"

// ExtendedResourceClass: how pods that ask the usual way (`resources.limits: {nvidia.com/gpu:
// 1}`) are served by claims. An administrator writes one per extended resource name; a pod whose
// containers ask for it gets one claim (per resource) made from the class by the controller.
namespace ker {

// The label a claim made from a class carries: the class's name.
inline constexpr const char* kClassLabel = "extendedresource.io/class";

struct ExtendedResourceClass {
  ObjectMeta meta;
  std::string extendedResourceName;  // spec.extendedResourceName: what containers ask for
  std::string rawResourceName;       // spec.rawResourceName: the devices it draws from
  // spec.metadataRequirements, as parsed and as stored (copied to each claim made from it).
  LabelSelector metadataRequirements{{}, {}, SelectorDialect::kProperties};
  nlohmann::json rawRequirements;
  std::string invalid;
  RawObject raw;

  static ExtendedResourceClass fromJson(const nlohmann::json& obj);
};

using ClassPtr = std::shared_ptr<const ExtendedResourceClass>;

// The classes that serve each extended resource name. Two classes may name one (the API server
// cannot compare objects): the oldest valid one serves it (then the smaller name), the others
// are superseded and serve nothing, so every component picks the same one.
class ClassTable {
 public:
  ClassTable() = default;
  explicit ClassTable(std::vector<ClassPtr> classes);

  // The class serving this extended resource name; nullptr when none does.
  ClassPtr serving(const std::string& extendedResourceName) const;
  // The class that serves `cls`'s name in its place; nullptr when `cls` serves it (or is invalid).
  ClassPtr supersededBy(const ExtendedResourceClass& cls) const;
  bool empty() const { return classes_.empty(); }
  const std::vector<ClassPtr>& all() const { return classes_; }

 private:
  std::vector<ClassPtr> classes_;  // the servers first, by name; then the rest
};

// A class labelled so gives the devices of its rawResourceName only to pods that ask for its
// extendedResourceName in their resources, which ResourceQuota counts: claims and templates of
// that resource are refused unless the controller makes them (deploy/admission-policy.yaml).
inline constexpr const char* kPodsOnlyLabel = "extendedresource.io/claims-through-pods-only";

// The params of the class admission policies: annotations of a Namespace the controller keeps.
// kube-apiserver watches Namespaces for its whole life, where a custom resource paramKind is
// resolved through discovery (a policy fails for a while after a restart or the CRD's creation)
// and a ConfigMap's informer stops once no policy uses it (a policy applied again reads stale
// params).
// "<extended resource name>=<serving class>" for each name a class serves (routing, one class
// per name).
inline constexpr const char* kClassParamsAnnotation = "extendedresource.io/classes";
// "<rawResourceName>=<class>=<extended resource name>" for each resource a class labelled
// kPodsOnlyLabel draws from, the rawResourceName with '%', ' ' and '=' as %25, %20 and %3D.
inline constexpr const char* kPodsOnlyParamsAnnotation = "extendedresource.io/pods-only";
// Each annotation's value, entries by name and separated by spaces; an annotation with no
// entries is absent.
std::map<std::string, std::string> classParams(const ClassTable& classes);

// The class labelled kPodsOnlyLabel that gives the devices of rawResourceName (the oldest, among
// those serving their name), nullptr when none: only the controller, from pods' requests, makes
// claims of them. The policy refuses anyone else's (classParams); planTemplateClaims makes none
// from a template.
ClassPtr podsOnlyClass(const ClassTable& classes, const std::string& rawResourceName);

// The pod's requests a class serves: extended resource name -> the class and the shares.
struct ClassRequest {
  ClassPtr cls;
  std::vector<ContainerShare> shares;
};
// A pod's requests a class serves, by extended resource name.
using ClassRequests = std::map<std::string, ClassRequest>;
ClassRequests classRequests(const ExtendedRequests& requests, const ClassTable& classes);

// The first request (name and request) the pod's record (`resourceClaims`, PodClaimNames) names
// no claim for; nullptr when each has one: what the node agent refuses a container for (the
// extender makes such a request's claim at bind, and the Binding records it).
const ClassRequests::value_type* unrecordedRequest(
    const ClassRequests& requests, const std::map<std::string, std::string>& resourceClaims);

// The spec of the claim a pod's request of a class's resource gets: the class's devices and
// selector, as many devices as the containers need together (devicesNeeded), and the split among
// them (spec.containers).
nlohmann::json claimSpecFor(const ClassRequest& request);

// Why the claim the pod's record names for a class's resource cannot serve that request, "" when
// it can: it must be controlled by the pod and ask exactly what claimSpecFor asks. Anything else
// (a claim of another pod, or one whose owner edited it to more devices or other ones) would let
// the pod take devices its resources, and so its quota and its node's capacity, do not count.
std::string classClaimProblem(const Pod& pod, const ClassRequest& request,
                              const ExtendedResourceClaim& claim);

namespace resources {
extern const Resource kExtendedResourceClasses;  // cluster-scoped
}  // namespace resources

}  // namespace ker

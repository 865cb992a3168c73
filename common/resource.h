#pragma once

#include <string>
#include <string_view>

namespace ker {

// Identifies an API resource collection and builds its REST paths.
struct Resource {
  std::string group;  // empty for the core group
  std::string version;
  std::string plural;
  bool namespaced = true;

  // Path of the collection, or of one object when name is non-empty, with an optional
  // subresource ("status", "binding"). ns is ignored for cluster-scoped resources; an empty
  // ns on a namespaced resource means all namespaces (lists and watches only).
  std::string path(std::string_view ns = {}, std::string_view name = {},
                   std::string_view subresource = {}) const;
};

namespace resources {
extern const Resource kPods;
extern const Resource kNodes;
extern const Resource kEvents;
extern const Resource kLeases;
extern const Resource kNamespaces;
extern const Resource kPodDisruptionBudgets;               // policy/v1, namespaced
extern const Resource kValidatingAdmissionPolicies;        // admissionregistration.k8s.io/v1
extern const Resource kValidatingAdmissionPolicyBindings;  // admissionregistration.k8s.io/v1
}  // namespace resources

// Percent-encodes every byte except RFC 3986 unreserved characters, so a value can be used as
// one path segment or one query parameter value.
std::string urlEscape(std::string_view value);

}  // namespace ker

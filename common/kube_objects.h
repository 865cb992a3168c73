#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_fields.h"

// Typed views of the parts of Kubernetes' own kinds this project reads: object metadata,
// label and node selectors, nodes. Parsed leniently (common/json_fields.h).
namespace ker {

struct OwnerReference {
  std::string apiVersion;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
  bool operator==(const OwnerReference&) const = default;
};

struct ObjectMeta {
  std::string name;
  std::string ns;  // empty for cluster-scoped objects
  std::string uid;
  std::string resourceVersion;
  std::string creationTimestamp;  // RFC 3339, as sent
  int64_t generation = 0;         // metadata.generation; 0 when absent
  bool deleting = false;          // metadata.deletionTimestamp is set
  std::vector<std::string> finalizers;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<OwnerReference> ownerReferences;
  // The uid of the ownerReference with controller: true, "" when there is none.
  std::string controllerUid() const;
  // Whether this is an older version of the object `known` is: the same UID, and both
  // resourceVersions parse as integers (etcd's revisions, as kube-apiserver serves them) with
  // this one smaller. Clients are told not to compare them; kube-scheduler's assume cache does,
  // to keep a write of its own over a watch event that predates it, and so does this, with the
  // same fallback: a version that does not parse is never older.
  bool olderThan(const ObjectMeta& known) const;
};

// "namespace/name", or "name" for cluster-scoped objects: the work-queue and cache key.
std::string objectKey(const std::string& ns, const std::string& name);

// The operator of a selector requirement. The readers refuse a name that is not one of their
// dialect's operators (the API server refuses them too, so only an object written around its
// validation can carry one).
enum class SelectorOperator { kIn, kNotIn, kExists, kDoesNotExist, kGt, kGe, kLt, kLe };
const char* toString(SelectorOperator op);
std::optional<SelectorOperator> parseSelectorOperator(std::string_view text);

// Which operators a selector may use.
enum class SelectorDialect {
  kLabels,      // metav1.LabelSelector: In, NotIn, Exists, DoesNotExist
  kNodes,       // core/v1 NodeSelector: those, and Gt and Lt comparing integers
  kProperties,  // a claim's metadataRequirements: the labels' ones, and Gt, Ge, Lt and Le
                // comparing Kubernetes quantities (12Gi < 40Gi)
};
bool admits(SelectorDialect dialect, SelectorOperator op);
// The dialect's operators for messages: "In, NotIn, Exists, DoesNotExist".
std::string operatorNames(SelectorDialect dialect);
// Gt, Ge, Lt or Le: compares the value with values[0].
bool isComparison(SelectorOperator op);

struct LabelSelectorRequirement {
  std::string key;
  SelectorOperator op = SelectorOperator::kIn;
  std::vector<std::string> values;
  bool operator==(const LabelSelectorRequirement&) const = default;
};

// metav1.LabelSelector, or (dialect kProperties) a claim's selector of device properties. An
// empty selector matches everything.
struct LabelSelector {
  std::map<std::string, std::string> matchLabels;
  std::vector<LabelSelectorRequirement> matchExpressions;
  SelectorDialect dialect = SelectorDialect::kLabels;
  bool operator==(const LabelSelector&) const = default;
};

struct NodeSelectorRequirement {
  std::string key;
  SelectorOperator op = SelectorOperator::kIn;
  std::vector<std::string> values;
};

struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> matchExpressions;  // against node labels
  std::vector<NodeSelectorRequirement> matchFields;       // against metadata.name
};

// core/v1 NodeSelector: terms ORed; an empty term list matches no node.
struct NodeSelector {
  std::vector<NodeSelectorTerm> terms;
};

struct Node {
  ObjectMeta meta;
  static Node fromJson(const nlohmann::json& obj);
};

// RFC 1123 subdomain as Kubernetes defines it for object names: dot-separated labels, each of
// lowercase alphanumerics and '-', starting and ending alphanumeric; at most 253 characters.
bool isDns1123Subdomain(const std::string& s);

// RFC 1123 label: lowercase alphanumerics and '-', starting and ending alphanumeric, at most 63.
bool isDns1123Label(const std::string& s);

// Parsing helpers shared by the typed views; they throw std::invalid_argument with a message
// naming the offending field. Each takes the value itself (the selector object, the NodeSelector
// object, the metadata object); null yields the empty value.
LabelSelector parseLabelSelector(const nlohmann::json& j);
NodeSelector parseNodeSelector(const nlohmann::json& j);
ObjectMeta parseObjectMeta(const nlohmann::json& j);
// The readers behind those, for the typed views built on them: each throws std::invalid_argument
// naming the field; readObjectMeta adds its problems to `p` and goes on.
LabelSelector readLabelSelector(const nlohmann::json& j, const std::string& path,
                                SelectorDialect dialect = SelectorDialect::kLabels);
NodeSelector readNodeSelector(const nlohmann::json& j, const std::string& path);
void readObjectMeta(const nlohmann::json& obj, ObjectMeta& meta, fields::Problems& p);

}  // namespace ker

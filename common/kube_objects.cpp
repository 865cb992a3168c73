#include "common/kube_objects.h"

#include <charconv>
#include <stdexcept>

#include "common/field_path.h"

namespace ker {

using json = nlohmann::json;
using namespace fields;

namespace {

bool isAlnumLower(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

}  // namespace

void readObjectMeta(const json& obj, ObjectMeta& meta, Problems& p) {
  const json* m = nullptr;
  p.check([&] { m = objectMember(obj, "metadata", "metadata"); });
  if (!m) {
    return;
  }
  p.check([&] { meta.name = stringMember(*m, "name", "metadata.name"); });
  p.check([&] { meta.ns = stringMember(*m, "namespace", "metadata.namespace"); });
  p.check([&] { meta.uid = stringMember(*m, "uid", "metadata.uid"); });
  p.check([&] {
    meta.resourceVersion = stringMember(*m, "resourceVersion", "metadata.resourceVersion");
  });
  p.check([&] {
    meta.creationTimestamp = stringMember(*m, "creationTimestamp", "metadata.creationTimestamp");
  });
  p.check([&] { meta.generation = countMember(*m, "generation", "metadata.generation"); });
  meta.deleting = member(*m, "deletionTimestamp") != nullptr;
  p.check([&] { meta.finalizers = stringListMember(*m, "finalizers", "metadata.finalizers"); });
  p.check([&] { meta.labels = stringMapMember(*m, "labels", "metadata.labels"); });
  p.check([&] { meta.annotations = stringMapMember(*m, "annotations", "metadata.annotations"); });
  p.check([&] {
    const json* refs = member(*m, "ownerReferences");
    if (!refs) {
      return;
    }
    const std::string base = "metadata.ownerReferences";
    if (!refs->is_array()) {
      wrongType(base, "an array", *refs);
    }
    for (size_t i = 0; i < refs->size(); ++i) {
      const json& r = (*refs)[i];
      const std::string at = indexPath(base, i);
      if (!r.is_object()) {
        wrongType(at, "an object", r);
      }
      OwnerReference ref{stringMember(r, "apiVersion", childPath(at, "apiVersion")),
                         stringMember(r, "kind", childPath(at, "kind")),
                         stringMember(r, "name", childPath(at, "name")),
                         stringMember(r, "uid", childPath(at, "uid"))};
      if (const json* c = member(r, "controller")) {
        if (!c->is_boolean()) {
          wrongType(childPath(at, "controller"), "a boolean", *c);
        }
        ref.controller = c->get<bool>();
      }
      meta.ownerReferences.push_back(std::move(ref));
    }
  });
}

namespace {

constexpr SelectorOperator kAllOperators[] = {
    SelectorOperator::kIn,           SelectorOperator::kNotIn, SelectorOperator::kExists,
    SelectorOperator::kDoesNotExist, SelectorOperator::kGt,    SelectorOperator::kGe,
    SelectorOperator::kLt,           SelectorOperator::kLe};

}  // namespace

const char* toString(SelectorOperator op) {
  switch (op) {
    case SelectorOperator::kIn:
      return "In";
    case SelectorOperator::kNotIn:
      return "NotIn";
    case SelectorOperator::kExists:
      return "Exists";
    case SelectorOperator::kDoesNotExist:
      return "DoesNotExist";
    case SelectorOperator::kGt:
      return "Gt";
    case SelectorOperator::kGe:
      return "Ge";
    case SelectorOperator::kLt:
      return "Lt";
    case SelectorOperator::kLe:
      return "Le";
  }
  return "";
}

std::optional<SelectorOperator> parseSelectorOperator(std::string_view text) {
  for (auto op : kAllOperators) {
    if (text == toString(op)) {
      return op;
    }
  }
  return std::nullopt;
}

bool isComparison(SelectorOperator op) {
  return op == SelectorOperator::kGt || op == SelectorOperator::kGe ||
         op == SelectorOperator::kLt || op == SelectorOperator::kLe;
}

bool admits(SelectorDialect dialect, SelectorOperator op) {
  switch (dialect) {
    case SelectorDialect::kLabels:
      return !isComparison(op);
    case SelectorDialect::kNodes:
      return op != SelectorOperator::kGe && op != SelectorOperator::kLe;
    case SelectorDialect::kProperties:
      return true;
  }
  return false;
}

std::string operatorNames(SelectorDialect dialect) {
  std::string out;
  for (auto op : kAllOperators) {
    if (admits(dialect, op)) {
      out += (out.empty() ? "" : ", ") + std::string(toString(op));
    }
  }
  return out;
}

namespace {

SelectorOperator operatorMember(const json& obj, const std::string& path, SelectorDialect dialect) {
  const std::string text = stringMember(obj, "operator", path);
  auto op = parseSelectorOperator(text);
  if (!op || !admits(dialect, *op)) {
    throw std::invalid_argument(path + ": \"" + text + "\" is not one of " +
                                operatorNames(dialect));
  }
  return *op;
}

}  // namespace

LabelSelector readLabelSelector(const json& j, const std::string& path, SelectorDialect dialect) {
  LabelSelector out;
  out.dialect = dialect;
  if (j.is_null()) {
    return out;
  }
  if (!j.is_object()) {
    wrongType(path.empty() ? "labelSelector" : path, "an object", j);
  }
  out.matchLabels = stringMapMember(j, "matchLabels", childPath(path, "matchLabels"));
  if (const json* exprs = member(j, "matchExpressions")) {
    const std::string base = childPath(path, "matchExpressions");
    if (!exprs->is_array()) {
      wrongType(base, "an array", *exprs);
    }
    for (size_t i = 0; i < exprs->size(); ++i) {
      const json& e = (*exprs)[i];
      const std::string at = indexPath(base, i);
      if (!e.is_object()) {
        wrongType(at, "an object", e);
      }
      out.matchExpressions.push_back({stringMember(e, "key", childPath(at, "key")),
                                      operatorMember(e, childPath(at, "operator"), dialect),
                                      stringListMember(e, "values", childPath(at, "values"))});
    }
  }
  return out;
}

std::vector<NodeSelectorRequirement> readNodeRequirements(const json& term, const char* key,
                                                          const std::string& path) {
  std::vector<NodeSelectorRequirement> out;
  const json* list = member(term, key);
  if (!list) {
    return out;
  }
  if (!list->is_array()) {
    wrongType(path, "an array", *list);
  }
  for (size_t i = 0; i < list->size(); ++i) {
    const json& r = (*list)[i];
    const std::string at = indexPath(path, i);
    if (!r.is_object()) {
      wrongType(at, "an object", r);
    }
    out.push_back({stringMember(r, "key", childPath(at, "key")),
                   operatorMember(r, childPath(at, "operator"), SelectorDialect::kNodes),
                   stringListMember(r, "values", childPath(at, "values"))});
  }
  return out;
}

NodeSelector readNodeSelector(const json& j, const std::string& path) {
  NodeSelector out;
  if (j.is_null()) {
    return out;
  }
  if (!j.is_object()) {
    wrongType(path.empty() ? "nodeSelector" : path, "an object", j);
  }
  const json* terms = member(j, "nodeSelectorTerms");
  if (!terms) {
    return out;
  }
  const std::string base = childPath(path, "nodeSelectorTerms");
  if (!terms->is_array()) {
    wrongType(base, "an array", *terms);
  }
  for (size_t i = 0; i < terms->size(); ++i) {
    const json& t = (*terms)[i];
    const std::string at = indexPath(base, i);
    // A null term is how Go serialises a zero term: it matches nothing, like an empty one.
    if (!t.is_null() && !t.is_object()) {
      wrongType(at, "an object", t);
    }
    out.terms.push_back(
        {readNodeRequirements(t, "matchExpressions", childPath(at, "matchExpressions")),
         readNodeRequirements(t, "matchFields", childPath(at, "matchFields"))});
  }
  return out;
}

bool isDns1123Subdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) {
    return false;
  }
  size_t labelStart = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == '.') {
      if (i == labelStart || !isAlnumLower(s[labelStart]) || !isAlnumLower(s[i - 1])) {
        return false;
      }
      labelStart = i + 1;
    } else if (!isAlnumLower(s[i]) && s[i] != '-') {
      return false;
    }
  }
  return true;
}

bool isDns1123Label(const std::string& s) {
  return s.size() <= 63 && s.find('.') == std::string::npos && isDns1123Subdomain(s);
}

std::string ObjectMeta::controllerUid() const {
  for (const auto& ref : ownerReferences) {
    if (ref.controller) {
      return ref.uid;
    }
  }
  return {};
}

bool ObjectMeta::olderThan(const ObjectMeta& known) const {
  auto parse = [](const std::string& v) -> std::optional<uint64_t> {
    uint64_t n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || v.empty()) {
      return std::nullopt;
    }
    return n;
  };
  if (uid != known.uid) {
    return false;
  }
  const auto mine = parse(resourceVersion);
  const auto theirs = parse(known.resourceVersion);
  return mine && theirs && *mine < *theirs;
}

std::string objectKey(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : ns + "/" + name;
}

LabelSelector parseLabelSelector(const nlohmann::json& j) {
  return readLabelSelector(j, "");
}

NodeSelector parseNodeSelector(const nlohmann::json& j) {
  return readNodeSelector(j, "");
}

ObjectMeta parseObjectMeta(const nlohmann::json& j) {
  ObjectMeta meta;
  Problems p;
  readObjectMeta(json{{"metadata", j}}, meta, p);
  if (!p.empty()) {
    throw std::invalid_argument(p.text());
  }
  return meta;
}

Node Node::fromJson(const nlohmann::json& obj) {
  Node node;
  // Node has no `invalid`: a node's garbled labels just leave them empty, which no device's
  // label affinity matches.
  Problems ignored;
  readObjectMeta(obj, node.meta, ignored);
  return node;
}

}  // namespace ker

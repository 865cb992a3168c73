#include "model/resource_class.h"

#include <algorithm>

#include "common/json_fields.h"
#include "common/label_selector.h"

namespace ker {

using json = nlohmann::json;
using fields::member;
using fields::objectMember;
using fields::Problems;
using fields::stringMember;

ExtendedResourceClass ExtendedResourceClass::fromJson(const json& obj) {
  ExtendedResourceClass c;
  c.raw = obj;
  if (!obj.is_object()) {
    c.invalid = std::string("expected a JSON object, got ") + obj.type_name();
    return c;
  }
  Problems p;
  readObjectMeta(obj, c.meta, p);
  const json* spec = nullptr;
  p.check([&] { spec = objectMember(obj, "spec", "spec"); });
  if (spec) {
    p.check([&] {
      c.extendedResourceName =
          stringMember(*spec, "extendedResourceName", "spec.extendedResourceName");
      if (!c.extendedResourceName.empty() && !isExtendedResourceName(c.extendedResourceName)) {
        p.add("spec.extendedResourceName: \"" + c.extendedResourceName +
              "\" is not an extended resource name (a domain-prefixed name outside kubernetes.io)");
      }
    });
    p.check([&] {
      c.rawResourceName = stringMember(*spec, "rawResourceName", "spec.rawResourceName");
    });
    p.check([&] {
      const json* sel = member(*spec, "metadataRequirements");
      c.rawRequirements = sel ? *sel : json();
      c.metadataRequirements = readLabelSelector(c.rawRequirements, "spec.metadataRequirements",
                                                 SelectorDialect::kProperties);
      if (Status s = validate(c.metadataRequirements); !s.ok()) {
        p.add("spec.metadataRequirements: " + s.message());
      }
    });
  }
  if (c.extendedResourceName.empty()) {
    p.add("spec.extendedResourceName: required");
  }
  if (c.rawResourceName.empty()) {
    p.add("spec.rawResourceName: required");
  }
  c.invalid = p.text();
  return c;
}

namespace {

// Which of two valid classes naming one resource serves it: the older, then the smaller name.
bool serves(const ExtendedResourceClass& a, const ExtendedResourceClass& b) {
  if (a.meta.creationTimestamp != b.meta.creationTimestamp) {
    // RFC 3339 in UTC, as the API server writes it: text order is time order.
    return a.meta.creationTimestamp < b.meta.creationTimestamp;
  }
  return a.meta.name < b.meta.name;
}

}  // namespace

ClassTable::ClassTable(std::vector<ClassPtr> classes) : classes_(std::move(classes)) {
  std::erase_if(classes_, [](const ClassPtr& c) { return !c; });
  std::sort(classes_.begin(), classes_.end(), [](const ClassPtr& a, const ClassPtr& b) {
    if (a->invalid.empty() != b->invalid.empty()) {
      return a->invalid.empty();
    }
    return serves(*a, *b);
  });
}

ClassPtr ClassTable::serving(const std::string& name) const {
  for (const auto& c : classes_) {
    if (c->invalid.empty() && c->extendedResourceName == name) {
      return c;  // sorted: the first valid one naming it serves it
    }
  }
  return nullptr;
}

ClassPtr ClassTable::supersededBy(const ExtendedResourceClass& cls) const {
  if (!cls.invalid.empty()) {
    return nullptr;
  }
  ClassPtr server = serving(cls.extendedResourceName);
  return server && server->meta.name != cls.meta.name ? server : nullptr;
}

namespace {

// As the policy encodes a claim's rawResourceName before it compares (replace, in this order).
std::string encodeParam(const std::string& raw) {
  std::string out;
  for (char c : raw) {
    out += c == '%' ? "%25" : c == ' ' ? "%20" : c == '=' ? "%3D" : std::string(1, c);
  }
  return out;
}

std::string joined(const std::map<std::string, std::string>& entries) {
  std::string out;
  for (const auto& [key, rest] : entries) {
    out += (out.empty() ? "" : " ") + key + "=" + rest;
  }
  return out;
}

// Only a class serving its name: pods asking for the name of a superseded one get another
// class's devices, so its own would be out of everyone's reach.
bool forPodsOnly(const ClassTable& classes, const ClassPtr& c) {
  auto label = c->meta.labels.find(kPodsOnlyLabel);
  return label != c->meta.labels.end() && label->second == "true" &&
         classes.serving(c->extendedResourceName) == c;
}

}  // namespace

ClassPtr podsOnlyClass(const ClassTable& classes, const std::string& rawResourceName) {
  for (const auto& c : classes.all()) {  // oldest first
    if (c->rawResourceName == rawResourceName && forPodsOnly(classes, c)) {
      return c;
    }
  }
  return nullptr;
}

std::map<std::string, std::string> classParams(const ClassTable& classes) {
  std::map<std::string, std::string> served;
  std::map<std::string, std::string> podsOnly;
  for (const auto& c : classes.all()) {
    if (classes.serving(c->extendedResourceName) == c) {
      served.emplace(c->extendedResourceName, c->meta.name);
    }
    // Oldest first, as podsOnlyClass: the entry names the class it finds.
    if (forPodsOnly(classes, c)) {
      podsOnly.emplace(encodeParam(c->rawResourceName),
                       c->meta.name + "=" + c->extendedResourceName);
    }
  }
  std::map<std::string, std::string> out;
  if (!served.empty()) {
    out[kClassParamsAnnotation] = joined(served);
  }
  if (!podsOnly.empty()) {
    out[kPodsOnlyParamsAnnotation] = joined(podsOnly);
  }
  return out;
}

ClassRequests classRequests(const ExtendedRequests& requests, const ClassTable& classes) {
  ClassRequests out;
  if (classes.empty()) {
    return out;
  }
  for (const auto& [name, shares] : requests) {
    if (ClassPtr c = classes.serving(name)) {
      out[name] = ClassRequest{std::move(c), shares};
    }
  }
  return out;
}

const ClassRequests::value_type* unrecordedRequest(
    const ClassRequests& requests, const std::map<std::string, std::string>& resourceClaims) {
  for (const auto& entry : requests) {
    if (!resourceClaims.count(entry.first)) {
      return &entry;
    }
  }
  return nullptr;
}

json claimSpecFor(const ClassRequest& request) {
  json containers = json::array();
  for (const auto& s : request.shares) {
    containers.push_back({{"name", s.name}, {"count", s.count}, {"kind", toString(s.kind)}});
  }
  json spec = {{"rawResourceName", request.cls->rawResourceName},
               {"extendedResourceNum", devicesNeeded(request.shares)},
               {"containers", std::move(containers)}};
  if (!request.cls->rawRequirements.is_null()) {
    spec["metadataRequirements"] = request.cls->rawRequirements;
  }
  return spec;
}

std::string classClaimProblem(const Pod& pod, const ClassRequest& request,
                              const ExtendedResourceClaim& claim) {
  const std::string what = "claim " + objectKey(claim.meta.ns, claim.meta.name) + " recorded for " +
                           request.cls->extendedResourceName;
  if (claim.meta.controllerUid() != pod.meta.uid) {
    return what + " is not controlled by this pod";
  }
  if (claim.rawResourceName != request.cls->rawResourceName ||
      !(claim.metadataRequirements == request.cls->metadataRequirements) ||
      claim.extendedResourceNum != devicesNeeded(request.shares) ||
      claim.containers != request.shares || claim.extendedResourceNames.has_value() ||
      !claim.constraints.empty() || !claim.firstAvailable.empty() || claim.shareable) {
    return what + " does not ask what class " + request.cls->meta.name +
           " and the pod's containers do (it was edited, or the class was)";
  }
  return "";
}

namespace resources {
const Resource kExtendedResourceClasses{kGroup, kVersion, "extendedresourceclasses", false};
}  // namespace resources

}  // namespace ker

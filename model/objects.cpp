#include "model/objects.h"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <set>
#include <stdexcept>
#include <unordered_set>
#include <utility>

#include "common/comma_list.h"
#include "common/field_path.h"
#include "common/label_selector.h"
#include "common/node_selector.h"
#include "model/conditions.h"

namespace ker {

using json = nlohmann::json;
using namespace fields;

namespace {

std::string trim(const std::string& s) {
  const char* ws = " \t\r\n";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) {
    return {};
  }
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// A phase of the wrong type counts as written: the object is invalid, not uninitialised.
bool hasPhase(const json& obj) {
  auto status = obj.find("status");
  if (status == obj.end() || !status->is_object()) {
    return false;
  }
  auto phase = status->find("phase");
  return phase != status->end() && !phase->is_null() &&
         !(phase->is_string() && phase->get_ref<const std::string&>().empty());
}

template <typename Phase>
Phase readPhase(const json& status, std::initializer_list<Phase> known, Phase absent) {
  const std::string value = stringMember(status, "phase", "status.phase");
  if (value.empty()) {
    return absent;
  }
  for (Phase p : known) {
    if (value == toString(p)) {
      return p;
    }
  }
  failAt("status.phase", "unknown phase \"" + value + "\"");
}

// raw with metadata.resourceVersion taken from meta and status reset to an object, ready for
// the typed status fields to be written over it. A raw that is not an object (a view built in
// code rather than parsed) gets a minimal skeleton instead.
json prepareWrite(const RawObject& raw, const ObjectMeta& meta, const char* kind) {
  json out = raw.parse();
  if (!out.is_object()) {
    out = json{{"apiVersion", kApiVersion}, {"kind", kind}, {"metadata", json::object()}};
    setOrErase(out["metadata"], "name", meta.name);
    setOrErase(out["metadata"], "namespace", meta.ns);
    setOrErase(out["metadata"], "uid", meta.uid);
  }
  json& m = out["metadata"];
  if (m.is_null()) {
    m = json::object();
  }
  // A garbled metadata is left for the server to reject rather than silently rewritten.
  if (m.is_object()) {
    setOrErase(m, "resourceVersion", meta.resourceVersion);
  }
  if (!out["status"].is_object()) {
    out["status"] = json::object();
  }
  return out;
}

}  // namespace

namespace {

// A required-plugins value as NRI reads it here: a JSON array of strings; anything else, none.
std::vector<std::string> parsePluginList(const std::string& value) {
  std::vector<std::string> out;
  const json parsed = json::parse(value, nullptr, false);
  if (!parsed.is_array() ||
      !std::all_of(parsed.begin(), parsed.end(), [](const json& v) { return v.is_string(); })) {
    return out;
  }
  for (const auto& v : parsed) {
    out.push_back(v.get<std::string>());
  }
  return out;
}

std::string withPlugin(std::vector<std::string> list, const std::string& plugin) {
  if (std::find(list.begin(), list.end(), plugin) == list.end()) {
    list.push_back(plugin);
  }
  return json(list).dump();
}

}  // namespace

std::vector<std::string> requiredPlugins(const std::map<std::string, std::string>& podAnnotations) {
  // NRI reads "<key>/pod" before the unscoped "<key>".
  const std::string scoped = kRequiredPluginsAnnotation;
  const std::string unscoped = scoped.substr(0, scoped.rfind('/'));
  auto it = podAnnotations.find(scoped);
  if (it == podAnnotations.end()) {
    it = podAnnotations.find(unscoped);
  }
  return it == podAnnotations.end() ? std::vector<std::string>{} : parsePluginList(it->second);
}

std::string requiredPluginsValue(const std::map<std::string, std::string>& podAnnotations,
                                 const std::string& plugin) {
  return withPlugin(requiredPlugins(podAnnotations), plugin);
}

std::map<std::string, std::string> requiredPluginsAnnotations(
    const std::map<std::string, std::string>& podAnnotations, const std::string& plugin) {
  std::map<std::string, std::string> out{
      {kRequiredPluginsAnnotation, requiredPluginsValue(podAnnotations, plugin)}};
  const std::string containerScoped = kRequiredPluginsContainerPrefix;
  for (auto it = podAnnotations.lower_bound(containerScoped);
       it != podAnnotations.end() && it->first.starts_with(containerScoped); ++it) {
    out[it->first] = withPlugin(parsePluginList(it->second), plugin);
  }
  return out;
}

const char* toString(DevicePhase phase) {
  switch (phase) {
    case DevicePhase::kAvailable:
      return "Available";
    case DevicePhase::kBound:
      return "Bound";
    case DevicePhase::kPending:
      return "Pending";
  }
  return "Unknown";
}

const char* toString(ClaimPhase phase) {
  switch (phase) {
    case ClaimPhase::kPending:
      return "Pending";
    case ClaimPhase::kBound:
      return "Bound";
    case ClaimPhase::kLost:
      return "Lost";
  }
  return "Unknown";
}

std::vector<std::string> parseClaimsAnnotation(const std::string& value) {
  std::vector<std::string> out;
  // A set, not a scan of `out`: an annotation may hold up to 256 KiB of names.
  std::unordered_set<std::string> seen;
  for (std::string& name : splitCommaList(value)) {
    if (!isDns1123Subdomain(name)) {
      throw std::invalid_argument("\"" + name +
                                  "\" is not a valid claim name (a DNS-1123 subdomain: lowercase "
                                  "alphanumerics, '-' and '.', at most 253 characters)");
    }
    if (seen.insert(name).second) {
      out.push_back(std::move(name));
    }
  }
  return out;
}

std::vector<TemplateEntry> parseClaimTemplatesAnnotation(const std::string& value) {
  std::vector<TemplateEntry> out;
  std::map<std::string, std::string> seen;  // entry -> template
  for (const std::string& item : splitCommaList(value)) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      throw std::invalid_argument("\"" + item +
                                  "\" is not an entry: write <entry>=<template>, e.g. "
                                  "gpu=gpu-template");
    }
    TemplateEntry e{trim(item.substr(0, eq)), trim(item.substr(eq + 1))};
    if (!isDns1123Label(e.name)) {
      throw std::invalid_argument("\"" + e.name +
                                  "\" is not a valid entry name (a DNS-1123 label: lowercase "
                                  "alphanumerics and '-', at most 63 characters)");
    }
    if (!isDns1123Subdomain(e.templateName)) {
      throw std::invalid_argument("\"" + e.templateName +
                                  "\" is not a valid template name (a DNS-1123 subdomain: "
                                  "lowercase alphanumerics, '-' and '.', at most 253 characters)");
    }
    auto [it, added] = seen.emplace(e.name, e.templateName);
    if (!added) {
      if (it->second != e.templateName) {
        throw std::invalid_argument("entry \"" + e.name + "\" names two templates (" + it->second +
                                    ", " + e.templateName + ")");
      }
      continue;
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::map<std::string, std::string> parseGeneratedClaimsAnnotation(const std::string& value) {
  const json parsed = json::parse(value, nullptr, false);
  if (!parsed.is_object()) {
    throw std::invalid_argument("not a JSON object of entry name to claim name");
  }
  std::map<std::string, std::string> out;
  for (const auto& [entry, claim] : parsed.items()) {
    if (!claim.is_string() || !isDns1123Subdomain(claim.get<std::string>())) {
      throw std::invalid_argument("entry \"" + entry + "\": " + claim.dump() +
                                  " is not a claim name");
    }
    out.emplace(entry, claim.get<std::string>());
  }
  return out;
}

std::string generatedClaimsValue(const std::map<std::string, std::string>& generated) {
  return json(generated).dump();
}

PodClaimNames podClaimNames(const std::map<std::string, std::string>& annotations) {
  PodClaimNames out;
  Problems p;
  if (auto it = annotations.find(kClaimsAnnotation); it != annotations.end()) {
    p.check([&] {
      try {
        out.claims = parseClaimsAnnotation(it->second);
      } catch (const std::invalid_argument& e) {
        failAt(std::string("annotation ") + kClaimsAnnotation, e.what());
      }
    });
  }
  if (auto it = annotations.find(kClaimTemplatesAnnotation); it != annotations.end()) {
    p.check([&] {
      try {
        out.templates = parseClaimTemplatesAnnotation(it->second);
      } catch (const std::invalid_argument& e) {
        failAt(std::string("annotation ") + kClaimTemplatesAnnotation, e.what());
      }
    });
  }
  std::map<std::string, std::string> record;
  if (auto it = annotations.find(kGeneratedClaimsAnnotation); it != annotations.end()) {
    p.check([&] {
      try {
        record = parseGeneratedClaimsAnnotation(it->second);
      } catch (const std::invalid_argument& e) {
        failAt(std::string("annotation ") + kGeneratedClaimsAnnotation, e.what());
      }
    });
  }
  out.invalid = p.text();
  // De-duplicated through a set: any pod author writes these annotations, and a scan of the list
  // per name would make a large one cost every informer its square.
  std::unordered_set<std::string> used(out.claims.begin(), out.claims.end());
  auto use = [&](const std::string& claim) {
    if (used.insert(claim).second) {
      out.claims.push_back(claim);
    }
  };
  for (const auto& e : out.templates) {
    if (auto r = record.find(e.name); r != record.end()) {
      out.generated.emplace(e.name, r->second);
      use(r->second);
    } else {
      out.awaiting.push_back(e.name);
    }
  }
  for (const auto& [key, claim] : record) {
    if (isExtendedResourceName(key)) {
      out.resourceClaims.emplace(key, claim);
      use(claim);
    }
  }
  return out;
}

namespace {

// status.holders of a claim or a device: pods by name (in the object's or its claim's
// namespace) and UID.
std::vector<PodRef> readHolders(const json& status) {
  std::vector<PodRef> out;
  const json* list = member(status, "holders");
  if (!list) {
    return out;
  }
  if (!list->is_array()) {
    wrongType("status.holders", "an array", *list);
  }
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string path = indexPath("status.holders", i);
    const json& h = (*list)[i];
    if (!h.is_object()) {
      wrongType(path, "an object", h);
    }
    out.push_back(
        PodRef{stringMember(h, "name", path + ".name"), stringMember(h, "uid", path + ".uid")});
  }
  return out;
}

// A count the status holds only while above 0.
void writeCount(json& status, const char* field, int64_t count) {
  if (count > 0) {
    status[field] = count;
  } else {
    status.erase(field);
  }
}

void writeHolders(json& status, const std::vector<PodRef>& holders) {
  if (holders.empty()) {
    status.erase("holders");
    return;
  }
  json list = json::array();
  for (const auto& h : holders) {
    json entry{{"name", h.name}};
    setOrErase(entry, "uid", h.uid);
    list.push_back(std::move(entry));
  }
  status["holders"] = std::move(list);
}

// fn(element, its path) for each element of the array member `key` of `obj`, each of which
// must be an object; nothing when the member is absent. Returns how many there were.
template <class Fn>
size_t forEachObject(const json& obj, const char* key, const std::string& path, Fn&& fn) {
  const json* list = member(obj, key);
  if (list == nullptr) {
    return 0;
  }
  if (!list->is_array()) {
    wrongType(path, "an array", *list);
  }
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    const json& e = (*list)[i];
    if (!e.is_object()) {
      wrongType(at, "an object", e);
    }
    fn(e, at);
  }
  return list->size();
}

// A device count at obj.extendedResourceNum: 1 when unset; throws past the range (an
// out-of-range count reads as 1, so the rest of the claim still parses).
int64_t deviceCount(const json& obj, const std::string& path) {
  const json* num = member(obj, "extendedResourceNum");
  if (!num) {
    return 1;
  }
  if (num->is_number_unsigned()) {
    if (num->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      failAt(path, "out of range");
    }
  } else if (!num->is_number_integer()) {
    failAt(path, std::string("not an integer (") + num->type_name() + ")");
  }
  if (num->get<int64_t>() < 1) {
    failAt(path, "must be at least 1");
  }
  return num->get<int64_t>();
}

// The property selector at obj.metadataRequirements (empty when unset), validated.
LabelSelector propertySelector(const json& obj, const std::string& path) {
  const json* sel = member(obj, "metadataRequirements");
  LabelSelector out = readLabelSelector(sel ? *sel : json(), path, SelectorDialect::kProperties);
  if (Status s = validate(out); !s.ok()) {
    failAt(path, s.message());
  }
  return out;
}

bool isEmpty(const LabelSelector& selector) {
  return selector.matchLabels.empty() && selector.matchExpressions.empty();
}

// A firstAvailable list at obj.firstAvailable (the claim's or a request's).
std::vector<ClaimAlternative> alternatives(const json& obj, const std::string& path) {
  std::vector<ClaimAlternative> out;
  const size_t count =
      forEachObject(obj, "firstAvailable", path, [&](const json& e, const std::string& at) {
        ClaimAlternative a;
        a.name = stringMember(e, "name", at + ".name");
        if (!isDns1123Label(a.name)) {
          failAt(at + ".name", "\"" + a.name + "\" is not a DNS-1123 label");
        }
        if (alternativeIn(out, a.name) != nullptr) {
          failAt(at + ".name", "\"" + a.name + "\" names an earlier alternative too");
        }
        a.extendedResourceNum = deviceCount(e, at + ".extendedResourceNum");
        a.metadataRequirements = propertySelector(e, at + ".metadataRequirements");
        out.push_back(std::move(a));
      });
  if (count > kMaxClaimAlternatives) {
    failAt(path, "at most " + std::to_string(kMaxClaimAlternatives) + " alternatives");
  }
  return out;
}

// spec.requests, each checked on its own.
std::vector<ClaimRequest> claimRequests(const json& spec) {
  std::vector<ClaimRequest> out;
  const size_t count =
      forEachObject(spec, "requests", "spec.requests", [&](const json& e, const std::string& at) {
        ClaimRequest r;
        r.name = stringMember(e, "name", at + ".name");
        if (!isDns1123Label(r.name)) {
          failAt(at + ".name", "\"" + r.name + "\" is not a DNS-1123 label");
        }
        if (std::any_of(out.begin(), out.end(),
                        [&](const ClaimRequest& o) { return o.name == r.name; })) {
          failAt(at + ".name", "\"" + r.name + "\" names an earlier request too");
        }
        r.rawResourceName = stringMember(e, "rawResourceName", at + ".rawResourceName");
        if (r.rawResourceName.empty()) {
          failAt(at + ".rawResourceName", "required");
        }
        r.extendedResourceNum = deviceCount(e, at + ".extendedResourceNum");
        r.metadataRequirements = propertySelector(e, at + ".metadataRequirements");
        r.firstAvailable = alternatives(e, at + ".firstAvailable");
        if (!r.firstAvailable.empty() &&
            (r.extendedResourceNum != 1 || !isEmpty(r.metadataRequirements))) {
          failAt(at,
                 "extendedResourceNum and metadataRequirements must be left unset with "
                 "firstAvailable");
        }
        out.push_back(std::move(r));
      });
  if (count > kMaxClaimRequests) {
    failAt("spec.requests", "at most " + std::to_string(kMaxClaimRequests) + " requests");
  }
  return out;
}

// The constraints' requests name requests of the claim, and the claim has at most one
// distinctProperty: each device then has one value to keep apart from the others' (fitDistinct).
void checkConstraintRequests(const ExtendedResourceClaim& c) {
  bool distinct = false;
  for (size_t i = 0; i < c.constraints.size(); ++i) {
    const DeviceConstraint& k = c.constraints[i];
    const std::string at = "spec.constraints[" + std::to_string(i) + "]";
    if (c.requests.empty() && !k.requests.empty()) {
      failAt(at + ".requests", "names requests, and the claim has no spec.requests");
    }
    for (const auto& name : k.requests) {
      if (c.requestNamed(name) == nullptr) {
        failAt(at + ".requests", "\"" + name + "\" is no request of spec.requests");
      }
    }
    if (!k.distinctProperty.empty() && std::exchange(distinct, true)) {
      failAt(at + ".distinctProperty", "only one constraint of a claim may be distinct");
    }
  }
}

// status.allocations.
std::vector<RequestAllocation> readAllocations(const json& status) {
  std::vector<RequestAllocation> out;
  forEachObject(
      status, "allocations", "status.allocations", [&](const json& e, const std::string& at) {
        RequestAllocation a;
        a.request = stringMember(e, "request", at + ".request");
        a.devices = stringListMember(e, "extendedResourceNames", at + ".extendedResourceNames");
        a.alternative = stringMember(e, "alternative", at + ".alternative");
        out.push_back(std::move(a));
      });
  return out;
}

}  // namespace

const ClaimAlternative* alternativeIn(const std::vector<ClaimAlternative>& list,
                                      const std::string& name) {
  auto it = std::find_if(list.begin(), list.end(),
                         [&](const ClaimAlternative& a) { return a.name == name; });
  return it == list.end() ? nullptr : &*it;
}

std::string ExtendedResource::labelledNode() const {
  auto at = meta.labels.find(kNodeLabel);
  return at == meta.labels.end() ? std::string() : at->second;
}

ExtendedResource ExtendedResource::fromJson(const nlohmann::json& obj) {
  ExtendedResource r;
  r.raw = obj;
  if (!obj.is_object()) {
    r.invalid = std::string("expected a JSON object, got ") + obj.type_name();
    return r;
  }
  r.phaseWritten = hasPhase(obj);
  Problems p;
  readObjectMeta(obj, r.meta, p);
  const json* spec = nullptr;
  p.check([&] { spec = objectMember(obj, "spec", "spec"); });
  if (spec) {
    p.check([&] {
      r.rawResourceName = stringMember(*spec, "rawResourceName", "spec.rawResourceName");
    });
    p.check([&] { r.deviceID = stringMember(*spec, "deviceID", "spec.deviceID"); });
    p.check([&] { r.properties = stringMapMember(*spec, "properties", "spec.properties"); });
    p.check([&] {
      const json* aff = objectMember(*spec, "nodeAffinity", "spec.nodeAffinity");
      if (!aff) {
        return;
      }
      const std::string path = "spec.nodeAffinity.required";
      const json* required = member(*aff, "required");
      r.nodeAffinity = readNodeSelector(required ? *required : json(), path);
      if (Status s = validate(r.nodeAffinity); !s.ok()) {
        failAt(path, s.message());
      }
    });
  }
  if (r.rawResourceName.empty()) {
    p.add("spec.rawResourceName: required");
  }
  const json* status = nullptr;
  p.check([&] { status = objectMember(obj, "status", "status"); });
  if (status) {
    p.check([&] {
      r.phase =
          readPhase(*status, {DevicePhase::kAvailable, DevicePhase::kBound, DevicePhase::kPending},
                    DevicePhase::kAvailable);
    });
    auto readClaimRef = [&](const char* field, std::optional<ClaimRef>& out) {
      p.check([&] {
        const std::string path = std::string("status.") + field;
        if (const json* ref = objectMember(*status, field, path.c_str())) {
          out = ClaimRef{stringMember(*ref, "namespace", (path + ".namespace").c_str()),
                         stringMember(*ref, "name", (path + ".name").c_str()),
                         stringMember(*ref, "uid", (path + ".uid").c_str())};
        }
      });
    };
    readClaimRef("claimRef", r.claimRef);
    readClaimRef("releasedFrom", r.releasedFrom);
    p.check([&] { r.holders = readHolders(*status); });
    p.check([&] { r.allocation = countMember(*status, "allocation", "status.allocation"); });
    p.check([&] { r.reason = stringMember(*status, "reason", "status.reason"); });
    p.check([&] { r.message = stringMember(*status, "message", "status.message"); });
    r.conditions = readConditions(*status);
  }
  r.invalid = p.text();
  return r;
}

nlohmann::json ExtendedResource::toJson(SystemTime now) const {
  json out = prepareWrite(raw, meta, "ExtendedResource");
  json& s = out["status"];
  s["phase"] = toString(phase);
  auto writeClaimRef = [&](const char* field, const std::optional<ClaimRef>& ref) {
    if (ref) {
      s[field] = json{{"namespace", ref->ns}, {"name", ref->name}};
      setOrErase(s[field], "uid", ref->uid);
    } else {
      s.erase(field);
    }
  };
  writeClaimRef("claimRef", claimRef);
  writeClaimRef("releasedFrom", releasedFrom);
  writeHolders(s, holders);
  writeCount(s, "allocation", allocation);
  setOrErase(s, "reason", reason);
  setOrErase(s, "message", message);
  writeConditions(s, deviceConditions(*this, conditions, now));
  return out;
}

namespace {

// spec.containers of a claim: [{name, count, kind}], the names unique.
std::vector<ContainerShare> readContainerShares(const json& spec) {
  std::vector<ContainerShare> out;
  forEachObject(spec, "containers", "spec.containers", [&](const json& e, const std::string& at) {
    ContainerShare s;
    s.name = stringMember(e, "name", at + ".name");
    if (!isDns1123Label(s.name)) {
      failAt(at + ".name", "\"" + s.name + "\" is not a container name");
    }
    s.count = countMember(e, "count", at + ".count");
    if (s.count < 1) {
      failAt(at + ".count", "must be at least 1");
    }
    const std::string kind = stringMember(e, "kind", at + ".kind");
    if (auto k = parseContainerKind(kind.empty() ? "App" : kind)) {
      s.kind = *k;
    } else {
      failAt(at + ".kind", "\"" + kind + "\" is none of Init, Sidecar, App");
    }
    for (const auto& earlier : out) {
      if (earlier.name == s.name) {
        failAt(at + ".name", "\"" + s.name + "\" names an earlier container too");
      }
    }
    out.push_back(std::move(s));
  });
  return out;
}

}  // namespace

ExtendedResourceClaim ExtendedResourceClaim::fromJson(const nlohmann::json& obj) {
  ExtendedResourceClaim c;
  c.raw = obj;
  if (!obj.is_object()) {
    c.invalid = std::string("expected a JSON object, got ") + obj.type_name();
    c.statusReadable = false;
    return c;
  }
  c.phaseWritten = hasPhase(obj);
  Problems p;
  readObjectMeta(obj, c.meta, p);
  const bool metaReadable = p.empty();
  const json* spec = nullptr;
  p.check([&] { spec = objectMember(obj, "spec", "spec"); });
  if (spec) {
    p.check([&] {
      c.rawResourceName = stringMember(*spec, "rawResourceName", "spec.rawResourceName");
    });
    p.check([&] { c.extendedResourceNum = deviceCount(*spec, "spec.extendedResourceNum"); });
    p.check([&] { c.metadataRequirements = propertySelector(*spec, "spec.metadataRequirements"); });
    p.check([&] {
      // An empty list is what Go's omitempty makes of "no restriction", so it means unset.
      auto names = stringListMember(*spec, "extendedResourceNames", "spec.extendedResourceNames");
      if (!names.empty()) {
        c.extendedResourceNames = std::move(names);
      }
    });
    p.check([&] {
      forEachObject(
          *spec, "constraints", "spec.constraints", [&](const json& e, const std::string& at) {
            DeviceConstraint k{stringMember(e, "matchProperty", at + ".matchProperty"),
                               stringMember(e, "distinctProperty", at + ".distinctProperty"),
                               stringListMember(e, "requests", at + ".requests")};
            if (k.matchProperty.empty() == k.distinctProperty.empty()) {
              failAt(at,
                     "needs exactly one of matchProperty and distinctProperty, a property name");
            }
            c.constraints.push_back(std::move(k));
          });
    });
    p.check([&] {
      c.firstAvailable = alternatives(*spec, "spec.firstAvailable");
      // Each alternative says how many and which: the claim's own must not say otherwise.
      if (!c.firstAvailable.empty() && c.extendedResourceNum != 1) {
        failAt("spec.extendedResourceNum", "must be left unset with spec.firstAvailable");
      }
      if (!c.firstAvailable.empty() && !isEmpty(c.metadataRequirements)) {
        failAt("spec.metadataRequirements", "must be left unset with spec.firstAvailable");
      }
    });
    p.check([&] { c.requests = claimRequests(*spec); });
    p.check([&] {
      if (const json* v = member(*spec, "shareable")) {
        if (!v->is_boolean()) {
          wrongType("spec.shareable", "a boolean", *v);
        }
        c.shareable = v->get<bool>();
      }
    });
    p.check([&] { c.containers = readContainerShares(*spec); });
  }
  if (c.requests.empty() && c.rawResourceName.empty() &&
      (spec == nullptr || member(*spec, "requests") == nullptr)) {
    p.add("spec.rawResourceName: required (or spec.requests)");
  }
  if (!c.requests.empty()) {
    // Each request says what, how many and which: the claim's own must not say otherwise.
    if (!c.rawResourceName.empty() || c.extendedResourceNum != 1 ||
        !isEmpty(c.metadataRequirements) || !c.firstAvailable.empty() || !c.containers.empty()) {
      p.add(
          "spec.requests: rawResourceName, extendedResourceNum, metadataRequirements, "
          "firstAvailable and containers must be left unset on a claim with requests");
    }
  }
  p.check([&] { checkConstraintRequests(c); });
  if (!c.containers.empty()) {
    // The split among the containers must add up to the claim's count, for one pod.
    if (devicesNeeded(c.containers) != c.extendedResourceNum) {
      p.add("spec.containers: the containers need " + std::to_string(devicesNeeded(c.containers)) +
            " devices, not the " + std::to_string(c.extendedResourceNum) +
            " of spec.extendedResourceNum");
    }
    if (c.shareable || !c.firstAvailable.empty()) {
      p.add("spec.containers: not with shareable or firstAvailable");
    }
  }
  Problems ps;  // the status's own, kept apart to know whether it can be trusted
  const json* status = nullptr;
  ps.check([&] { status = objectMember(obj, "status", "status"); });
  if (status) {
    ps.check([&] {
      c.phase = readPhase(*status, {ClaimPhase::kPending, ClaimPhase::kBound, ClaimPhase::kLost},
                          ClaimPhase::kPending);
    });
    ps.check([&] {
      c.allocated =
          stringListMember(*status, "extendedResourceNames", "status.extendedResourceNames");
    });
    ps.check([&] {
      c.lost = stringListMember(*status, "lostExtendedResourceNames",
                                "status.lostExtendedResourceNames");
    });
    ps.check([&] { c.nodeName = stringMember(*status, "nodeName", "status.nodeName"); });
    ps.check([&] { c.alternative = stringMember(*status, "alternative", "status.alternative"); });
    ps.check([&] { c.allocations = readAllocations(*status); });
    ps.check([&] {
      if (const json* ref = objectMember(*status, "podRef", "status.podRef")) {
        c.podRef = PodRef{stringMember(*ref, "name", "status.podRef.name"),
                          stringMember(*ref, "uid", "status.podRef.uid")};
      }
    });
    ps.check([&] { c.sharedHolders = readHolders(*status); });
    ps.check([&] { c.bindRewrites = countMember(*status, "bindRewrites", "status.bindRewrites"); });
    ps.check([&] { c.allocation = countMember(*status, "allocation", "status.allocation"); });
    ps.check([&] { c.reason = stringMember(*status, "reason", "status.reason"); });
    ps.check([&] { c.message = stringMember(*status, "message", "status.message"); });
    c.conditions = readConditions(*status);
  }
  c.statusReadable = metaReadable && ps.empty();
  // A spec problem, not the status's: the spec may be edited while Bound (a renamed or dropped
  // alternative), and the status still says what the claim holds, so its pod's end releases it.
  if (!c.alternative.empty() && c.chosen() == nullptr) {
    p.add("status.alternative: \"" + c.alternative +
          "\" is no alternative of spec.firstAvailable (edited since the bind?)");
  }
  for (const auto& a : c.allocations) {
    const ClaimRequest* r = c.requestNamed(a.request);
    if (r == nullptr) {
      p.add("status.allocations: \"" + a.request +
            "\" is no request of spec.requests (edited since the bind?)");
    } else if (!a.alternative.empty() &&
               alternativeIn(r->firstAvailable, a.alternative) == nullptr) {
      p.add("status.allocations: \"" + a.alternative + "\" is no alternative of request \"" +
            a.request + "\" (edited since the bind?)");
    }
  }
  if (!ps.empty()) {
    p.add(ps.text());
  }
  c.invalid = p.text();
  return c;
}

nlohmann::json ExtendedResourceClaim::toJson(SystemTime now) const {
  json out = prepareWrite(raw, meta, "ExtendedResourceClaim");
  json& s = out["status"];
  s["phase"] = toString(phase);
  if (allocated.empty()) {
    s.erase("extendedResourceNames");
  } else {
    s["extendedResourceNames"] = allocated;
  }
  if (lost.empty()) {
    s.erase("lostExtendedResourceNames");
  } else {
    s["lostExtendedResourceNames"] = lost;
  }
  setOrErase(s, "nodeName", nodeName);
  setOrErase(s, "alternative", alternative);
  if (allocations.empty()) {
    s.erase("allocations");
  } else {
    json list = json::array();
    for (const auto& a : allocations) {
      json e{{"request", a.request}, {"extendedResourceNames", a.devices}};
      setOrErase(e, "alternative", a.alternative);
      list.push_back(std::move(e));
    }
    s["allocations"] = std::move(list);
  }
  if (podRef) {
    s["podRef"] = json{{"name", podRef->name}};
    setOrErase(s["podRef"], "uid", podRef->uid);
  } else {
    s.erase("podRef");
  }
  writeHolders(s, sharedHolders);
  writeCount(s, "bindRewrites", bindRewrites);
  writeCount(s, "allocation", allocation);
  setOrErase(s, "reason", reason);
  setOrErase(s, "message", message);
  writeConditions(s, claimConditions(*this, conditions, now));
  return out;
}

std::vector<std::string> ExtendedResourceClaim::listedDevices() const {
  std::vector<std::string> names = allocated;
  names.insert(names.end(), lost.begin(), lost.end());
  return names;
}

std::vector<PodRef> ExtendedResourceClaim::holders() const {
  std::vector<PodRef> out;
  if (podRef) {
    out.push_back(*podRef);
  }
  out.insert(out.end(), sharedHolders.begin(), sharedHolders.end());
  return out;
}

std::vector<PodRef> ExtendedResourceClaim::holdersWith(const PodRef& pod) const {
  std::vector<PodRef> out = holders();
  if (std::none_of(out.begin(), out.end(), [&](const PodRef& h) { return h.uid == pod.uid; })) {
    out.push_back(pod);
  }
  return out;
}

const ClaimAlternative* ExtendedResourceClaim::alternativeNamed(const std::string& name) const {
  return alternativeIn(firstAvailable, name);
}

const ClaimRequest* ExtendedResourceClaim::requestNamed(const std::string& name) const {
  auto it = std::find_if(requests.begin(), requests.end(),
                         [&](const ClaimRequest& r) { return r.name == name; });
  return it == requests.end() ? nullptr : &*it;
}

std::optional<int64_t> ExtendedResourceClaim::wantedCount() const {
  int64_t total = 0;
  for (const auto& unit : units()) {
    if (unit.firstAvailable.empty()) {
      total += unit.extendedResourceNum;
    } else if (const ClaimAlternative* a = unit.chosen()) {
      total += a->extendedResourceNum;
    } else {
      return std::nullopt;
    }
  }
  return total;
}

std::vector<RequestAllocation> ExtendedResourceClaim::requestAllocations() const {
  if (requests.empty()) {
    return {RequestAllocation{"", allocated, alternative}};
  }
  return allocations;
}

std::vector<ExtendedResourceClaim> ExtendedResourceClaim::units() const {
  if (requests.empty()) {
    return {*this};
  }
  std::vector<ExtendedResourceClaim> out;
  out.reserve(requests.size());
  for (const auto& r : requests) {
    ExtendedResourceClaim u =
        derived(r.name, r.rawResourceName, r.extendedResourceNum, r.metadataRequirements, {});
    u.firstAvailable = r.firstAvailable;
    for (const auto& k : constraints) {
      std::vector<std::string> spanned = k.requests;
      if (spanned.empty()) {
        for (const auto& each : requests) {
          spanned.push_back(each.name);
        }
      }
      if (std::find(spanned.begin(), spanned.end(), r.name) == spanned.end()) {
        continue;
      }
      DeviceConstraint own = k;
      own.requests = spanned.size() > 1 ? std::move(spanned) : std::vector<std::string>{};
      u.constraints.push_back(std::move(own));
    }
    u.phaseWritten = phaseWritten;
    for (const auto& a : allocations) {
      if (a.request == r.name) {
        u.allocated = a.devices;
        u.alternative = a.alternative;
      }
    }
    u.nodeName = nodeName;
    u.podRef = podRef;
    u.sharedHolders = sharedHolders;
    u.allocation = allocation;
    u.statusReadable = statusReadable;
    out.push_back(std::move(u));
  }
  return out;
}

std::optional<ExtendedResourceClaim> ExtendedResourceClaim::unitNamed(
    const std::string& name) const {
  for (auto& u : units()) {
    if (u.request == name) {
      return std::move(u);
    }
  }
  return std::nullopt;
}

std::string unitKey(const ExtendedResourceClaim& unit) {
  std::string key = objectKey(unit.meta.ns, unit.meta.name);
  if (!unit.request.empty()) {
    key += "/" + unit.request;
  }
  return key;
}

ExtendedResourceClaim ExtendedResourceClaim::as(const ClaimAlternative& a) const {
  return derived(request, rawResourceName, a.extendedResourceNum, a.metadataRequirements,
                 constraints);
}

ExtendedResourceClaim ExtendedResourceClaim::derived(const std::string& requestName,
                                                     const std::string& resource, int64_t count,
                                                     const LabelSelector& selector,
                                                     std::vector<DeviceConstraint> rules) const {
  ExtendedResourceClaim out;
  out.meta = meta;
  out.request = requestName;
  out.rawResourceName = resource;
  out.extendedResourceNum = count;
  out.metadataRequirements = selector;
  out.extendedResourceNames = extendedResourceNames;
  out.constraints = std::move(rules);
  out.shareable = shareable;
  out.phase = phase;
  out.invalid = invalid;
  return out;
}

bool ExtendedResourceClaim::heldBy(const std::string& podUid, const std::string& podName) const {
  const auto all = holders();
  return std::any_of(all.begin(), all.end(), [&](const PodRef& h) {
    return podUid.empty() ? h.name == podName : h.uid == podUid;
  });
}

std::string ExtendedResourceClaim::holderNames() const {
  std::string out;
  for (const auto& h : holders()) {
    out += (out.empty() ? "" : ", ") + h.name;
  }
  return out;
}

std::vector<std::string> ExtendedResourceClaim::heldDevices() const {
  if (!statusReadable || phase == ClaimPhase::kPending) {
    return {};
  }
  return listedDevices();
}

std::map<std::string, std::vector<std::string>> ExtendedResourceClaim::heldByResource() const {
  std::map<std::string, std::vector<std::string>> out;
  for (auto& name : heldDevices()) {
    std::string resource = resourceOf(name);
    out[resource].push_back(std::move(name));
  }
  return out;
}

std::string ExtendedResourceClaim::resourceOf(const std::string& device) const {
  // A status of allocations goes by them even when the spec has changed since the bind.
  if (requests.empty() && allocations.empty()) {
    return rawResourceName;
  }
  const ClaimRequest* r = requestNamed(requestOf(device));
  return r != nullptr ? r->rawResourceName : std::string();
}

std::vector<std::string> ExtendedResourceClaim::resourceNames() const {
  if (requests.empty()) {
    return {rawResourceName};
  }
  std::vector<std::string> out;
  for (const auto& r : requests) {
    if (std::find(out.begin(), out.end(), r.rawResourceName) == out.end()) {
      out.push_back(r.rawResourceName);
    }
  }
  return out;
}

std::string ExtendedResourceClaim::requestOf(const std::string& device) const {
  for (const auto& a : allocations) {
    if (std::find(a.devices.begin(), a.devices.end(), device) != a.devices.end()) {
      return a.request;
    }
  }
  return "";
}

Pod Pod::fromJson(const nlohmann::json& obj) {
  Pod pod;
  if (!obj.is_object()) {
    pod.invalid = std::string("expected a JSON object, got ") + obj.type_name();
    return pod;
  }
  Problems p;
  readObjectMeta(obj, pod.meta, p);
  p.check([&] {
    if (const json* spec = objectMember(obj, "spec", "spec")) {
      pod.nodeName = stringMember(*spec, "nodeName", "spec.nodeName");
      pod.schedulerName = stringMember(*spec, "schedulerName", "spec.schedulerName");
      // Read leniently: a pod the API server accepted has them right, and a decision that
      // needs them falls back to the defaults rather than refusing the pod.
      if (const json* v = member(*spec, "priority"); v && v->is_number_integer()) {
        pod.priority = static_cast<int32_t>(
            std::clamp<int64_t>(v->get<int64_t>(), std::numeric_limits<int32_t>::min(),
                                std::numeric_limits<int32_t>::max()));
      }
      if (const json* v = member(*spec, "preemptionPolicy"); v && v->is_string()) {
        pod.preemptNever = v->get<std::string>() == "Never";
      }
      if (const json* v = member(*spec, "terminationGracePeriodSeconds");
          v && v->is_number_integer()) {
        pod.gracePeriodSeconds = std::max<int64_t>(0, v->get<int64_t>());
      }
      pod.extendedRequests = readExtendedRequests(*spec);
      if (const json* gates = member(*spec, "schedulingGates"); gates && gates->is_array()) {
        for (const auto& g : *gates) {
          const json* name = g.is_object() ? member(g, "name") : nullptr;
          pod.schedulingGates.push_back(name && name->is_string() ? name->get<std::string>()
                                                                  : std::string());
        }
      }
    }
  });
  p.check([&] {
    if (const json* status = objectMember(obj, "status", "status")) {
      pod.phase = stringMember(*status, "phase", "status.phase");
    }
  });
  PodClaimNames names = podClaimNames(pod.meta.annotations);
  pod.claims = std::move(names.claims);
  pod.claimTemplates = std::move(names.templates);
  pod.generatedClaims = std::move(names.generated);
  pod.awaitingTemplates = std::move(names.awaiting);
  pod.resourceClaims = std::move(names.resourceClaims);
  if (!names.invalid.empty()) {
    p.add(names.invalid);
  }
  pod.invalid = p.text();
  return pod;
}

std::optional<size_t> Pod::classClaimsGate() const {
  const auto it = std::find(schedulingGates.begin(), schedulingGates.end(), kClassClaimsGate);
  if (it == schedulingGates.end()) {
    return std::nullopt;
  }
  return static_cast<size_t>(it - schedulingGates.begin());
}

ExtendedResourceClaimTemplate ExtendedResourceClaimTemplate::fromJson(const nlohmann::json& obj) {
  ExtendedResourceClaimTemplate t;
  t.raw = obj;
  if (!obj.is_object()) {
    t.invalid = std::string("expected a JSON object, got ") + obj.type_name();
    return t;
  }
  Problems p;
  readObjectMeta(obj, t.meta, p);
  const json* spec = nullptr;
  p.check([&] { spec = objectMember(obj, "spec", "spec"); });
  if (spec) {
    p.check([&] {
      if (const json* m = objectMember(*spec, "metadata", "spec.metadata")) {
        t.claimLabels = stringMapMember(*m, "labels", "spec.metadata.labels");
        t.claimAnnotations = stringMapMember(*m, "annotations", "spec.metadata.annotations");
      }
    });
    p.check([&] {
      if (const json* s = objectMember(*spec, "spec", "spec.spec")) {
        t.claimSpec = *s;
      }
    });
  }
  if (t.claimSpec.is_null()) {
    p.add("spec.spec: required");
  } else {
    // The claims made from it must parse: their spec's problems are the template's.
    const ExtendedResourceClaim probe =
        ExtendedResourceClaim::fromJson(json{{"spec", t.claimSpec}});
    if (!probe.invalid.empty()) {
      p.add("spec.spec is not a valid claim spec: " + probe.invalid);
    }
    t.claimResources = probe.resourceNames();
  }
  t.invalid = p.text();
  return t;
}

ObjectReference referenceTo(const ExtendedResourceClaim& claim) {
  return {kApiVersion, "ExtendedResourceClaim", claim.meta.ns, claim.meta.name, claim.meta.uid};
}

ObjectReference referenceTo(const ExtendedResource& device) {
  return {kApiVersion, "ExtendedResource", "", device.meta.name, device.meta.uid};
}

ObjectReference referenceTo(const Pod& pod) {
  return {"v1", "Pod", pod.meta.ns, pod.meta.name, pod.meta.uid};
}

namespace resources {
const Resource kExtendedResources{kGroup, kVersion, "extendedresources", false};
const Resource kExtendedResourceClaims{kGroup, kVersion, "extendedresourceclaims", true};
const Resource kExtendedResourceClaimTemplates{kGroup, kVersion, "extendedresourceclaimtemplates",
                                               true};
}  // namespace resources

}  // namespace ker

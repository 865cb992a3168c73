#include "model/made_claims.h"

#include <cstdint>

namespace ker {

namespace {

using json = nlohmann::json;

// At most `max` characters of a name, without a trailing '-' or '.', so that "<prefix>-..."
// stays a DNS-1123 subdomain.
std::string namePrefix(const std::string& name, size_t max) {
  std::string out = name.substr(0, max);
  while (!out.empty() && (out.back() == '-' || out.back() == '.')) {
    out.pop_back();
  }
  return out;
}

// FNV-1a: stable across builds and platforms, as a name that must come out the same after an
// upgrade needs (std::hash promises neither).
uint64_t fnv1a(const std::string& bytes) {
  uint64_t h = 14695981039346656037ull;
  for (const unsigned char b : bytes) {
    h = (h ^ b) * 1099511628211ull;
  }
  return h;
}

// A claim the pod owns and controls, under `name`.
json podClaim(const Pod& pod, const std::string& name, json labels, bool protect) {
  labels[kPodUidLabel] = pod.meta.uid;
  json meta = {
      {"name", name},
      {"namespace", pod.meta.ns},
      {"labels", std::move(labels)},
      {"ownerReferences", json::array({{{"apiVersion", "v1"},
                                        {"kind", "Pod"},
                                        {"name", pod.meta.name},
                                        {"uid", pod.meta.uid},
                                        {"controller", true},
                                        {"blockOwnerDeletion", true}}})},
  };
  if (protect) {
    meta["finalizers"] = json::array({kClaimProtectionFinalizer});
  }
  return json{{"apiVersion", kApiVersion},
              {"kind", "ExtendedResourceClaim"},
              {"metadata", std::move(meta)}};
}

}  // namespace

std::string podClaimName(const Pod& pod, const std::string& part, const std::string& key) {
  static constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  uint64_t h = fnv1a(pod.meta.uid + '\0' + key);
  std::string suffix(8, '0');
  for (char& d : suffix) {
    d = kDigits[h % 36];
    h /= 36;
  }
  // 180 + '-' + 63 + '-' + 8: within a name's 253.
  return namePrefix(pod.meta.name, 180) + "-" + namePrefix(part, 63) + "-" + suffix;
}

std::string entryClaimName(const Pod& pod, const TemplateEntry& entry) {
  return podClaimName(pod, entry.name, entry.name);
}

std::string classClaimName(const Pod& pod, const ClassRequest& request) {
  return podClaimName(pod, request.cls->meta.name, request.cls->extendedResourceName);
}

bool madeFor(const ExtendedResourceClaim& c, const Pod& pod, const char* label,
             const std::string& value) {
  const auto it = c.meta.labels.find(label);
  return c.meta.controllerUid() == pod.meta.uid && it != c.meta.labels.end() && it->second == value;
}

std::map<std::string, std::string> recordedClaims(const Pod& pod) {
  std::map<std::string, std::string> record = pod.generatedClaims;
  record.insert(pod.resourceClaims.begin(), pod.resourceClaims.end());
  return record;
}

json claimFromTemplate(const Pod& pod, const TemplateEntry& entry,
                       const ExtendedResourceClaimTemplate& tmpl, bool protect) {
  json labels = tmpl.claimLabels;
  labels[kTemplateEntryLabel] = entry.name;
  json claim = podClaim(pod, entryClaimName(pod, entry), std::move(labels), protect);
  if (!tmpl.claimAnnotations.empty()) {
    claim["metadata"]["annotations"] = tmpl.claimAnnotations;
  }
  claim["spec"] = tmpl.claimSpec;
  return claim;
}

json claimFromClass(const Pod& pod, const ClassRequest& request, bool protect) {
  json claim = podClaim(pod, classClaimName(pod, request),
                        json{{kClassLabel, request.cls->meta.name}}, protect);
  claim["spec"] = claimSpecFor(request);
  return claim;
}

}  // namespace ker

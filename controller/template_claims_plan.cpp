#include "controller/template_claims_plan.h"

#include <algorithm>
#include <cstdint>

#include "common/event_recorder.h"
#include "model/event_reasons.h"

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

// The claim under an entry's name is one made for it (the pod controls it and its `label` is
// `value`), before the record named it.
bool madeFor(const ExtendedResourceClaim& c, const Pod& pod, const char* label,
             const std::string& value) {
  const auto it = c.meta.labels.find(label);
  return c.meta.controllerUid() == pod.meta.uid && it != c.meta.labels.end() && it->second == value;
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

// "<what><key>: <why>; ..." for each waiting key, "" when none wait.
std::string problemLine(const std::string& what,
                        const std::map<std::string, std::string>& waiting) {
  std::string line;
  for (const auto& [key, why] : waiting) {
    line += (line.empty() ? "" : "; ") + what + key + ": " + why;
  }
  return line;
}

// The JSON Patch operations lifting the pod's kClassClaimsGate (test and remove, by its index);
// none when the pod does not carry it.
json liftGateOps(const Pod& pod) {
  const std::optional<size_t> gate = pod.classClaimsGate();
  if (!gate) {
    return json::array();
  }
  const std::string path = "/spec/schedulingGates/" + std::to_string(*gate);
  return json::array({{{"op", "test"}, {"path", path + "/name"}, {"value", kClassClaimsGate}},
                      {{"op", "remove"}, {"path", path}}});
}

// The one name a template entry's claim and a class request's claim get, whether looked up or
// created.
std::string entryClaimName(const Pod& pod, const TemplateEntry& entry) {
  return podClaimName(pod, entry.name, entry.name);
}
std::string classClaimName(const Pod& pod, const ClassRequest& request) {
  return podClaimName(pod, request.cls->meta.name, request.cls->extendedResourceName);
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

TemplateClaimsPlan planTemplateClaims(const TemplateClaimsInputs& in) {
  TemplateClaimsPlan plan;
  const Pod& pod = *in.pod;
  const bool classesWait =
      std::any_of(in.classRequests.begin(), in.classRequests.end(),
                  [&](const auto& r) { return !pod.resourceClaims.count(r.first); });
  const json uidTest = {{"op", "test"}, {"path", "/metadata/uid"}, {"value", pod.meta.uid}};
  if (pod.meta.uid.empty() || pod.meta.deleting || pod.finished() || !pod.nodeName.empty()) {
    return plan;
  }
  if ((pod.awaitingTemplates.empty() && !classesWait) || !pod.invalid.empty()) {
    // Nothing (more) to record: a gate still on the pod is lifted, so that kube-scheduler tries
    // it (and the extender says what is wrong with a garbled one).
    if (json lift = liftGateOps(pod); !lift.empty()) {
      lift.insert(lift.begin(), uidTest);
      plan.recordPatch = std::move(lift);
      plan.why = "lifting the scheduling gate";
    }
    return plan;
  }
  std::map<std::string, std::string> record = pod.generatedClaims;
  record.insert(pod.resourceClaims.begin(), pod.resourceClaims.end());
  std::vector<std::string> adopted;
  bool adoptedEntry = false;  // a template entry's claim among them
  enum class Found { kNotLookedUp, kNone, kMadeForIt, kTaken };
  auto lookUp = [&](const std::string& name, const char* label, const std::string& value) {
    const auto it = in.existing.find(name);
    if (it == in.existing.end()) {
      plan.lookups.push_back(name);
      return Found::kNotLookedUp;
    }
    return !it->second                               ? Found::kNone
           : madeFor(*it->second, pod, label, value) ? Found::kMadeForIt
                                                     : Found::kTaken;
  };
  auto takenWhy = [&](const std::string& name) {
    return "claim " + objectKey(pod.meta.ns, name) + " exists and was not made for it";
  };
  for (const auto& entry : pod.claimTemplates) {
    if (record.count(entry.name)) {
      continue;
    }
    auto t = in.templates.find(entry.templateName);
    const ExtendedResourceClaimTemplate* tmpl = t == in.templates.end() ? nullptr : t->second;
    if (!tmpl) {
      plan.waitingEntries[entry.name] =
          "template " + objectKey(pod.meta.ns, entry.templateName) + " not found";
      continue;
    }
    if (!tmpl->invalid.empty()) {
      plan.waitingEntries[entry.name] = "template " + objectKey(pod.meta.ns, entry.templateName) +
                                        " is invalid: " + tmpl->invalid;
      continue;
    }
    std::string podsOnly;  // why not, when the template asks for a pods-only class's devices
    for (const auto& raw : tmpl->claimResources) {
      if (ClassPtr cls = podsOnlyClass(in.classes, raw); cls && podsOnly.empty()) {
        podsOnly = "template " + objectKey(pod.meta.ns, entry.templateName) +
                   " asks for devices of " + raw + ", which ExtendedResourceClass " +
                   cls->meta.name + " gives only to pods that ask for " +
                   cls->extendedResourceName + " in their resources";
      }
    }
    if (!podsOnly.empty()) {
      plan.waitingEntries[entry.name] = std::move(podsOnly);
      continue;
    }
    const std::string name = entryClaimName(pod, entry);
    switch (lookUp(name, kTemplateEntryLabel, entry.name)) {
      case Found::kMadeForIt:
        record[entry.name] = in.existing.at(name)->meta.name;
        adopted.push_back(entry.name + "=" + record[entry.name]);
        adoptedEntry = true;
        break;
      case Found::kNone:
        plan.creates.push_back(
            {entry.name, name, claimFromTemplate(pod, entry, *tmpl, in.protect)});
        break;
      case Found::kTaken:
        plan.waitingEntries[entry.name] = takenWhy(name);
        break;
      case Found::kNotLookedUp:
        break;
    }
  }
  for (const auto& [resource, request] : in.classRequests) {
    if (record.count(resource)) {
      continue;
    }
    if (const int64_t n = devicesNeeded(request.shares); n > kMaxClaimDevices) {
      plan.waitingRequests[resource] = "the containers ask for " + std::to_string(n) +
                                       " devices, more than a claim holds (" +
                                       std::to_string(kMaxClaimDevices) + ")";
      continue;
    }
    const std::string name = classClaimName(pod, request);
    switch (lookUp(name, kClassLabel, request.cls->meta.name)) {
      case Found::kMadeForIt:
        record[resource] = in.existing.at(name)->meta.name;
        adopted.push_back(resource + "=" + record[resource]);
        break;
      case Found::kNone:
        plan.creates.push_back({resource, name, claimFromClass(pod, request, in.protect)});
        break;
      case Found::kTaken:
        plan.waitingRequests[resource] = takenWhy(name);
        break;
      case Found::kNotLookedUp:
        break;
    }
  }
  const std::string entries = problemLine("template entry ", plan.waitingEntries);
  const std::string requests = problemLine("request of ", plan.waitingRequests);
  plan.problem = entries + (entries.empty() || requests.empty() ? "" : "; ") + requests;
  if (!plan.problem.empty() && plan.problem != in.warned) {
    for (const auto& [reason, line] : {std::pair{event_reason::kClaimTemplateUnusable, entries},
                                       std::pair{event_reason::kClassRequestUnusable, requests}}) {
      if (!line.empty()) {
        plan.warnings.push_back(PlannedEvent{referenceTo(pod), EventType::kWarning, reason,
                                             "no claim can be made yet for " + line});
      }
    }
  }
  if (!plan.lookups.empty()) {
    // Nothing is written before the lookups: they decide between adopting and creating.
    plan.creates.clear();
    plan.why = "looking for claims made before";
    return plan;
  }
  if (!plan.creates.empty()) {
    plan.why = "creating claims for template entries and class requests";
    return plan;
  }
  if (adopted.empty()) {
    return plan;
  }
  // The tests are the record's precondition: the same pod, and the record this plan started
  // from. A resourceVersion precondition would also lose to every other write of the pod, such
  // as kube-scheduler's status write when it tries the pod that waits for this very record.
  const auto recorded = pod.meta.annotations.find(kGeneratedClaimsAnnotation);
  const std::string path =
      (json::json_pointer("/metadata/annotations") / kGeneratedClaimsAnnotation).to_string();
  if (pod.meta.annotations.empty()) {
    // A pod without annotations (one that asks only in its resources) has no map to add the
    // record to: the map is added whole, if it is still absent (null reads as absent).
    plan.recordPatch = json::array({
        uidTest,
        {{"op", "test"}, {"path", "/metadata/annotations"}, {"value", nullptr}},
        {{"op", "add"},
         {"path", "/metadata/annotations"},
         {"value", {{kGeneratedClaimsAnnotation, generatedClaimsValue(record)}}}},
    });
  } else {
    plan.recordPatch = json::array({
        uidTest,
        // The API server's JSON Patch takes null as "absent": the pod carries no record yet.
        {{"op", "test"},
         {"path", path},
         {"value",
          recorded == pod.meta.annotations.end() ? json(nullptr) : json(recorded->second)}},
        {{"op", "add"}, {"path", path}, {"value", generatedClaimsValue(record)}},
    });
  }
  // Every entry and request recorded with this write: the gate goes with it, at no extra write.
  if (plan.waitingEntries.empty() && plan.waitingRequests.empty()) {
    for (auto& op : liftGateOps(pod)) {
      plan.recordPatch->push_back(std::move(op));
    }
  }
  // A pod whose template entries got claims is told which (docs/templates.md). A class request's
  // claim says so itself (its class and pod labels, the record), and a pod asking the usual way
  // gets one write fewer: kube-scheduler posts its own event for the pod already.
  if (adoptedEntry) {
    std::string list;
    for (const auto& a : adopted) {
      list += (list.empty() ? "" : ", ") + a;
    }
    plan.events.push_back({referenceTo(pod), EventType::kNormal, event_reason::kClaimsGenerated,
                           "claims made: " + list});
  }
  plan.why = "recording generated claims";
  return plan;
}

}  // namespace ker

#include "controller/template_claims_plan.h"

#include <algorithm>

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

const ExtendedResourceClaim* adoptable(const std::vector<const ExtendedResourceClaim*>& labelled,
                                       const Pod& pod, const std::string& entry) {
  for (const auto* c : labelled) {
    if (!c || c->meta.controllerUid() != pod.meta.uid) {
      continue;
    }
    auto it = c->meta.labels.find(kTemplateEntryLabel);
    if (it != c->meta.labels.end() && it->second == entry) {
      return c;
    }
  }
  return nullptr;
}

}  // namespace

json claimFromTemplate(const Pod& pod, const TemplateEntry& entry,
                       const ExtendedResourceClaimTemplate& tmpl, bool protect) {
  json labels = tmpl.claimLabels;
  labels[kTemplateEntryLabel] = entry.name;
  labels[kPodUidLabel] = pod.meta.uid;
  json meta = {
      // 180 + '-' + 63 + '-' + the 5 characters the server adds: within 253.
      {"generateName", namePrefix(pod.meta.name, 180) + "-" + entry.name + "-"},
      {"namespace", pod.meta.ns},
      {"labels", labels},
      {"ownerReferences", json::array({{{"apiVersion", "v1"},
                                        {"kind", "Pod"},
                                        {"name", pod.meta.name},
                                        {"uid", pod.meta.uid},
                                        {"controller", true},
                                        {"blockOwnerDeletion", true}}})},
  };
  if (!tmpl.claimAnnotations.empty()) {
    meta["annotations"] = tmpl.claimAnnotations;
  }
  if (protect) {
    meta["finalizers"] = json::array({kClaimProtectionFinalizer});
  }
  return json{{"apiVersion", kApiVersion},
              {"kind", "ExtendedResourceClaim"},
              {"metadata", std::move(meta)},
              {"spec", tmpl.claimSpec}};
}

TemplateClaimsPlan planTemplateClaims(const TemplateClaimsInputs& in) {
  TemplateClaimsPlan plan;
  const Pod& pod = *in.pod;
  if (pod.awaitingTemplates.empty() || !pod.invalid.empty() || pod.meta.uid.empty() ||
      pod.meta.deleting || pod.finished() || !pod.nodeName.empty()) {
    return plan;
  }
  std::map<std::string, std::string> record = pod.generatedClaims;
  // Entries this controller recorded that the cache does not show yet are not planned again:
  // the write would be refused by its own test, and cost a list first.
  if (!std::includes(record.begin(), record.end(), in.written.begin(), in.written.end())) {
    plan.remember = in.written;
    record.insert(in.written.begin(), in.written.end());
  }
  std::vector<std::string> adopted;
  for (const auto& entry : pod.claimTemplates) {
    if (record.count(entry.name)) {
      continue;
    }
    auto t = in.templates.find(entry.templateName);
    const ExtendedResourceClaimTemplate* tmpl = t == in.templates.end() ? nullptr : t->second;
    if (!tmpl) {
      plan.waiting[entry.name] =
          "template " + objectKey(pod.meta.ns, entry.templateName) + " not found";
      continue;
    }
    if (!tmpl->invalid.empty()) {
      plan.waiting[entry.name] = "template " + objectKey(pod.meta.ns, entry.templateName) +
                                 " is invalid: " + tmpl->invalid;
      continue;
    }
    if (!in.labelled) {
      plan.listLabelled = true;
      continue;
    }
    if (const ExtendedResourceClaim* c = adoptable(*in.labelled, pod, entry.name)) {
      record[entry.name] = c->meta.name;
      adopted.push_back(entry.name + "=" + c->meta.name);
    } else {
      plan.creates.push_back({entry.name, claimFromTemplate(pod, entry, *tmpl, in.protect)});
    }
  }
  for (const auto& [entry, why] : plan.waiting) {
    plan.problem +=
        (plan.problem.empty() ? "" : "; ") + std::string("template entry ") + entry + ": " + why;
  }
  if (!plan.problem.empty() && plan.problem != in.warned) {
    plan.warning =
        PlannedEvent{referenceTo(pod), EventType::kWarning, event_reason::kClaimTemplateUnusable,
                     "no claim can be made yet for " + plan.problem};
  }
  if (plan.listLabelled) {
    // Nothing is written before the list: it decides between adopting and creating.
    plan.creates.clear();
    plan.why = "looking for claims made before";
    return plan;
  }
  if (!plan.creates.empty()) {
    plan.why = "creating claims for template entries";
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
  plan.recordPatch = json::array({
      {{"op", "test"}, {"path", "/metadata/uid"}, {"value", pod.meta.uid}},
      // The API server's JSON Patch takes null as "absent": the pod carries no record yet.
      {{"op", "test"},
       {"path", path},
       {"value", recorded == pod.meta.annotations.end() ? json(nullptr) : json(recorded->second)}},
      {{"op", "add"}, {"path", path}, {"value", generatedClaimsValue(record)}},
  });
  plan.remember = record;
  std::string list;
  for (const auto& a : adopted) {
    list += (list.empty() ? "" : ", ") + a;
  }
  plan.events.push_back({referenceTo(pod), EventType::kNormal, event_reason::kClaimsGenerated,
                         "claims for template entries: " + list});
  plan.why = "recording generated claims";
  return plan;
}

}  // namespace ker

#include "controller/template_claims_plan.h"

#include <algorithm>
#include <cstdint>

#include "common/event_recorder.h"
#include "model/event_reasons.h"
#include "model/made_claims.h"

namespace ker {

namespace {

using json = nlohmann::json;

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

}  // namespace

TemplateClaimsPlan planTemplateClaims(const TemplateClaimsInputs& in) {
  TemplateClaimsPlan plan;
  const Pod& pod = *in.pod;
  const json uidTest = {{"op", "test"}, {"path", "/metadata/uid"}, {"value", pod.meta.uid}};
  if (pod.meta.uid.empty() || pod.meta.deleting || pod.finished() || !pod.nodeName.empty()) {
    return plan;
  }
  if (pod.awaitingTemplates.empty() || !pod.invalid.empty()) {
    // Nothing (more) to record: a gate still on the pod is lifted, so that kube-scheduler tries
    // it (and the extender says what is wrong with a garbled one). A class request's claim is
    // the extender's to make, at bind.
    if (json lift = liftGateOps(pod); !lift.empty()) {
      lift.insert(lift.begin(), uidTest);
      plan.recordPatch = std::move(lift);
      plan.why = "lifting the scheduling gate";
    }
    return plan;
  }
  std::map<std::string, std::string> record = recordedClaims(pod);
  std::vector<std::string> adopted;
  enum class Found { kNotLookedUp, kNone, kMadeForIt, kTaken };
  auto lookUp = [&](const std::string& name, const std::string& entry) {
    const auto it = in.existing.find(name);
    if (it == in.existing.end()) {
      plan.lookups.push_back(name);
      return Found::kNotLookedUp;
    }
    return !it->second                                             ? Found::kNone
           : madeFor(*it->second, pod, kTemplateEntryLabel, entry) ? Found::kMadeForIt
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
    switch (lookUp(name, entry.name)) {
      case Found::kMadeForIt:
        record[entry.name] = in.existing.at(name)->meta.name;
        adopted.push_back(entry.name + "=" + record[entry.name]);
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
  plan.problem = problemLine("template entry ", plan.waitingEntries);
  if (!plan.problem.empty() && plan.problem != in.warned) {
    plan.warnings.push_back(PlannedEvent{referenceTo(pod), EventType::kWarning,
                                         event_reason::kClaimTemplateUnusable,
                                         "no claim can be made yet for " + plan.problem});
  }
  if (!plan.lookups.empty()) {
    // Nothing is written before the lookups: they decide between adopting and creating.
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
  // Every entry recorded with this write: the gate goes with it, at no extra write.
  if (plan.waitingEntries.empty()) {
    for (auto& op : liftGateOps(pod)) {
      plan.recordPatch->push_back(std::move(op));
    }
  }
  // A pod whose template entries got claims is told which (docs/templates.md).
  std::string list;
  for (const auto& a : adopted) {
    list += (list.empty() ? "" : ", ") + a;
  }
  plan.events.push_back({referenceTo(pod), EventType::kNormal, event_reason::kClaimsGenerated,
                         "claims made: " + list});
  plan.why = "recording generated claims";
  return plan;
}

}  // namespace ker

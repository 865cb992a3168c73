#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "controller/plan.h"
#include "model/objects.h"
#include "model/resource_class.h"

// The claims a pod's template entries (docs/templates.md) and its containers' requests of a
// class's resource (docs/classes.md) call for: pure, as the other plans.
namespace ker {

struct TemplateClaimsInputs {
  const Pod* pod = nullptr;
  // Each template the pod's entries name, nullptr when it does not exist.
  std::map<std::string, const ExtendedResourceClaimTemplate*> templates;
  // The pod's requests a class serves (classRequests), by extended resource name: each gets one
  // claim, recorded under that name.
  ClassRequests classRequests;
  // The claims labelled with the pod's UID, as a live list returned them; nullopt until the
  // plan asks for that list. Only a quorum read may say that no claim was made yet: a claim
  // created just before a crash (or a lost reply) may not have reached any cache.
  std::optional<std::vector<const ExtendedResourceClaim*>> labelled;
  // The waiting problem this pod (same UID) was last warned of, "" for none.
  std::string warned;
  // The record this controller last wrote on the pod (same UID), which the pod's cached copy
  // may not show yet: the write's own watch event can come after events of earlier writes of
  // the pod, and each of those is a sync of the pod.
  std::map<std::string, std::string> written;
  // Protection in use is on: claims are created with the protection finalizer, as they would
  // get it at once, so a new claim is protected from the start at one write, not two.
  bool protect = false;
};

struct ClaimCreate {
  std::string entry;     // the template entry, or the extended resource name
  nlohmann::json claim;  // the whole object, generateName and ownerReference included
};

struct TemplateClaimsPlan {
  // Read the claims labelled with the pod's UID live, then plan again.
  bool listLabelled = false;
  // Claims to create. Once they exist, plan again with them among `labelled`: they are then
  // adopted into the record.
  std::vector<ClaimCreate> creates;
  // The JSON Patch writing the record onto the pod: it applies only to the same pod (UID) while
  // its record is still the one planned against. Once nothing waits, it also lifts the pod's
  // kClassClaimsGate (or does only that, when the record is complete already).
  std::optional<nlohmann::json> recordPatch;
  // The record to remember as written once this plan is carried out (`written` of the next
  // plan): the one recordPatch writes; else the last one written, until the cache shows it.
  std::map<std::string, std::string> remember;
  std::vector<PlannedEvent> events;  // with the record: ClaimsGenerated, for template entries
  // Template entries that wait for their template to exist or become valid, and class requests
  // (by resource name) no claim can be made for: each -> why.
  std::map<std::string, std::string> waitingEntries;
  std::map<std::string, std::string> waitingRequests;
  // All of them in one line ("" when none wait), to remember as warned of; and, when the pod was
  // not warned of it yet, a Warning per kind: ClaimTemplateUnusable, ClassRequestUnusable.
  std::string problem;
  std::vector<PlannedEvent> warnings;
  std::string why;  // for the log line
};

// One claim per template entry and per class request of a pod that is still to be scheduled: an
// existing claim the pod controls (ownerReference with its UID) labelled with the entry (or the
// class) is adopted, otherwise one is created from the template (or the class). Nothing for pods
// bound, finished or being deleted. A pod with garbled annotations, or whose entries and requests
// all have recorded claims, only has its kClassClaimsGate lifted, if it carries it: the gate
// waits for the record, never for a claim to be allocated.
TemplateClaimsPlan planTemplateClaims(const TemplateClaimsInputs& in);

// The claim a template entry of the pod gets: the template's labels and annotations, the
// entry and pod-UID labels, generateName "<pod>-<entry>-", the pod as controlling owner
// (blockOwnerDeletion, so the garbage collector deletes it with the pod), the template's spec;
// with `protect`, the protection finalizer.
nlohmann::json claimFromTemplate(const Pod& pod, const TemplateEntry& entry,
                                 const ExtendedResourceClaimTemplate& tmpl, bool protect);

// The claim a pod's request of a class's resource gets: the class and pod-UID labels,
// generateName "<pod>-<class>-", the pod as controlling owner, claimSpecFor's spec; with
// `protect`, the protection finalizer.
nlohmann::json claimFromClass(const Pod& pod, const ClassRequest& request, bool protect);

}  // namespace ker

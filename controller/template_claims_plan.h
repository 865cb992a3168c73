#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "controller/plan.h"
#include "model/made_claims.h"
#include "model/objects.h"
#include "model/resource_class.h"

// The claims a pod's template entries call for (docs/templates.md): pure, as the other plans. A
// request of a class's resource gets its claim from the extender, at bind (resolveClaims).
namespace ker {

struct TemplateClaimsInputs {
  const Pod* pod = nullptr;
  // Each template the pod's entries name, nullptr when it does not exist.
  std::map<std::string, const ExtendedResourceClaimTemplate*> templates;
  // The classes: no claim is made from a template of devices a class gives only to pods that
  // ask in their resources (podsOnlyClass).
  ClassTable classes;
  // The claims under the names the pod's entries get (podClaimName), as far as
  // they were looked up: nullptr for a name no claim has. The cache answers first; a create
  // refused because the name is taken (a claim made just before a crash, or a create whose
  // reply was lost) is answered by a live read. A name not in the map was not looked up yet.
  std::map<std::string, const ExtendedResourceClaim*> existing;
  // The waiting problem this pod (same UID) was last warned of, "" for none.
  std::string warned;
  // Protection in use is on: claims are created with the protection finalizer, as they would
  // get it at once, so a new claim is protected from the start at one write, not two.
  bool protect = false;
};

struct ClaimCreate {
  std::string entry;     // the template entry
  std::string name;      // the claim's name (podClaimName)
  nlohmann::json claim;  // the whole object, name and ownerReference included
};

struct TemplateClaimsPlan {
  // Claim names to look up (`existing`), then plan again.
  std::vector<std::string> lookups;
  // Claims to create. Once they exist, plan again with them in `existing`: they are then
  // adopted into the record. One refused as AlreadyExists goes into `existing` as a live read
  // shows it.
  std::vector<ClaimCreate> creates;
  // The JSON Patch writing the record onto the pod: it applies only to the same pod (UID) while
  // its record is still the one planned against. Once nothing waits, it also lifts the pod's
  // kClassClaimsGate (or does only that, when the record is complete already).
  std::optional<nlohmann::json> recordPatch;
  std::vector<PlannedEvent> events;  // with the record: ClaimsGenerated, for template entries
  // Template entries that wait for their template to exist or become valid (or to be of devices
  // no class gives to pods only: podsOnlyClass): each -> why.
  std::map<std::string, std::string> waitingEntries;
  // All of them in one line ("" when none wait), to remember as warned of; and, when the pod was
  // not warned of it yet, a ClaimTemplateUnusable Warning.
  std::string problem;
  std::vector<PlannedEvent> warnings;
  std::string why;  // for the log line
};

// One claim per template entry of a pod that is still to be scheduled, under the one name
// podClaimName gives it: a claim of that name the pod controls (ownerReference with its UID)
// labelled with the entry is adopted, a name that is free gets one created from the template,
// and a name another claim holds keeps the entry waiting, with a Warning (podClaimName says why
// the name is derived). Nothing for pods bound, finished or being deleted. A pod with garbled
// annotations, or whose entries all have recorded claims, only has its kClassClaimsGate lifted,
// if it carries it (deploy/'s routing policy gave it before the extender made class requests'
// claims itself): the gate waits for the record, never for a claim to be allocated.
TemplateClaimsPlan planTemplateClaims(const TemplateClaimsInputs& in);

}  // namespace ker

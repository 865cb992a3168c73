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
  // The classes: no claim is made from a template of devices a class gives only to pods that
  // ask in their resources (podsOnlyClass).
  ClassTable classes;
  // The claims under the names the pod's entries and requests get (podClaimName), as far as
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
  std::string entry;     // the template entry, or the extended resource name
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
  // no class gives to pods only: podsOnlyClass), and class requests (by resource name) no claim
  // can be made for: each -> why.
  std::map<std::string, std::string> waitingEntries;
  std::map<std::string, std::string> waitingRequests;
  // All of them in one line ("" when none wait), to remember as warned of; and, when the pod was
  // not warned of it yet, a Warning per kind: ClaimTemplateUnusable, ClassRequestUnusable.
  std::string problem;
  std::vector<PlannedEvent> warnings;
  std::string why;  // for the log line
};

// One claim per template entry and per class request of a pod that is still to be scheduled,
// under the one name podClaimName gives it: a claim of that name the pod controls (ownerReference
// with its UID) labelled with the entry (or the class) is adopted, a name that is free gets one
// created from the template (or the class), and a name another claim holds keeps the entry
// waiting, with a Warning. Names derived from the pod's UID make a second create for the same
// entry (after a crash or a lost reply) fail as AlreadyExists, instead of making a duplicate
// only a quorum list could have found. Nothing for pods
// bound, finished or being deleted. A pod with garbled annotations, or whose entries and requests
// all have recorded claims, only has its kClassClaimsGate lifted, if it carries it: the gate
// waits for the record, never for a claim to be allocated.
TemplateClaimsPlan planTemplateClaims(const TemplateClaimsInputs& in);

// "<pod>-<part>-<8 characters>", the characters a hash of the pod's UID and `key` (the template
// entry, or the extended resource name): the same for every sync of the pod, another for every
// other pod and entry. `part` is at most 63 characters, the pod's name is cut to 180.
std::string podClaimName(const Pod& pod, const std::string& part, const std::string& key);

// The claim a template entry of the pod gets: the template's labels and annotations, the
// entry and pod-UID labels, podClaimName, the pod as controlling owner
// (blockOwnerDeletion, so the garbage collector deletes it with the pod), the template's spec;
// with `protect`, the protection finalizer.
nlohmann::json claimFromTemplate(const Pod& pod, const TemplateEntry& entry,
                                 const ExtendedResourceClaimTemplate& tmpl, bool protect);

// The claim a pod's request of a class's resource gets: the class and pod-UID labels,
// podClaimName with the class's name and the resource name, the pod as controlling owner,
// claimSpecFor's spec; with `protect`, the protection finalizer.
nlohmann::json claimFromClass(const Pod& pod, const ClassRequest& request, bool protect);

}  // namespace ker

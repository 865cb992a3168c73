#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "model/objects.h"
#include "model/resource_class.h"

// The claims made for a pod, from a template entry (docs/templates.md) or for a request of a
// class's resource (docs/classes.md): their one name and their object. The controller makes
// those of template entries; the extender makes a class request's at bind, and the controller
// adopts one it finds.
namespace ker {

// "<pod>-<part>-<8 characters>", the characters a hash of the pod's UID and `key` (the template
// entry, or the extended resource name): the same for every sync of the pod, another for every
// other pod and entry. `part` is at most 63 characters, the pod's name is cut to 180. Names
// derived from the pod's UID make a second create for the same entry (after a crash, a lost
// reply, or by another component) fail as AlreadyExists instead of making a duplicate.
std::string podClaimName(const Pod& pod, const std::string& part, const std::string& key);
std::string entryClaimName(const Pod& pod, const TemplateEntry& entry);
std::string classClaimName(const Pod& pod, const ClassRequest& request);

// The claim under an entry's or a request's name is one made for it: the pod controls it
// (ownerReference with its UID) and its `label` is `value` (kTemplateEntryLabel and the entry,
// kClassLabel and the class).
bool madeFor(const ExtendedResourceClaim& claim, const Pod& pod, const char* label,
             const std::string& value);

// The pod's record of the claims made for it (kGeneratedClaimsAnnotation) as it stands: template
// entries' claims by entry, class requests' by extended resource name. A write of the record
// writes this with its new entries.
std::map<std::string, std::string> recordedClaims(const Pod& pod);

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

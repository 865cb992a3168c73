#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ker::rbac {

// One API request as kube-apiserver's audit log records it.
struct Request {
  std::string user;  // e.g. system:serviceaccount:kube-system:extended-resource-controller
  std::string verb;  // get, list, watch, create, update, patch, delete, ...
  std::string group;
  std::string resource;  // "pods" or "pods/binding"
  std::string ns;
  std::string name;
  int code = 0;  // the response's HTTP status
  // RBAC refused it (the audit annotation authorization.k8s.io/decision is "forbid"); a 403
  // from admission (the allocation policy refusing an attack) is not RBAC's.
  bool forbidden = false;
};

// One thing a rule grants: a verb on a group's resource, in one namespace ("" cluster-wide), to
// one object name ("" any).
struct Grant {
  std::string verb;
  std::string group;
  std::string resource;
  std::string ns;
  std::string name;
  auto operator<=>(const Grant&) const = default;
  // "update extendedresource.io/extendedresources/status", with " ns=…" and " name=…" when set.
  std::string describe() const;
  bool covers(const Request& r) const;
};

// What the manifests' own Roles and ClusterRoles grant each user they bind to, by user name
// (system:serviceaccount:NS:NAME). Roles the manifests only refer to (system:kube-scheduler,
// ...) are not expanded: the question is whether the project's own grants are used.
std::map<std::string, std::set<Grant>> grantsOf(const std::vector<nlohmann::json>& objects);

// The request of one audit log line (JSON, stage ResponseComplete); nullopt for other stages
// and lines that are not audit events.
std::optional<Request> parseAuditLine(const std::string& line);

// How each grant was used.
struct UsageReport {
  std::map<std::string, std::map<Grant, size_t>> uses;  // user -> grant -> requests it allowed
  std::vector<std::string> refused;  // requests of a checked user RBAC forbade, not granted
  // Requests RBAC forbade although the manifests grant them: the authorizer had not read the
  // bindings yet (a kube-apiserver serves a moment before its RBAC informers sync), not a
  // missing permission.
  std::vector<std::string> refusedThoughGranted;
  std::vector<std::string> unused;  // grants no request used and no exemption names
};

// Compares the requests of `users` with their grants. A refused request fails the check only
// when no grant covers it. An exemption is "USER GRANT" (the user's short ServiceAccount name
// and Grant::describe()): granted for something that is not a request of the component (an
// admission plugin's check, another binary sharing the ServiceAccount).
UsageReport compareUsage(const std::map<std::string, std::set<Grant>>& grants,
                         const std::vector<Request>& requests, const std::set<std::string>& users,
                         const std::set<std::string>& exemptions);

// "system:serviceaccount:kube-system:NAME" -> "NAME" (anything else unchanged).
std::string shortUser(const std::string& user);

}  // namespace ker::rbac

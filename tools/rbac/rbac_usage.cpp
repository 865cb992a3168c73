#include "tools/rbac/rbac_usage.h"

#include <algorithm>

namespace ker::rbac {

namespace {

constexpr std::string_view kServiceAccountPrefix = "system:serviceaccount:";

std::vector<std::string> strings(const nlohmann::json& obj, const char* key) {
  std::vector<std::string> out;
  if (obj.contains(key) && obj[key].is_array()) {
    for (const auto& v : obj[key]) {
      if (v.is_string()) {
        out.push_back(v.get<std::string>());
      }
    }
  }
  return out;
}

std::string objectKey(const std::string& kind, const std::string& ns, const std::string& name) {
  return kind + "/" + ns + "/" + name;
}

// The rules' grants, expanded to one per verb, group, resource and name.
std::set<Grant> expand(const nlohmann::json& role, const std::string& ns) {
  std::set<Grant> out;
  for (const auto& rule : role.value("rules", nlohmann::json::array())) {
    std::vector<std::string> names = strings(rule, "resourceNames");
    if (names.empty()) {
      names.push_back("");
    }
    for (const auto& verb : strings(rule, "verbs")) {
      for (const auto& group : strings(rule, "apiGroups")) {
        for (const auto& resource : strings(rule, "resources")) {
          for (const auto& name : names) {
            out.insert(Grant{verb, group, resource, ns, name});
          }
        }
      }
    }
  }
  return out;
}

}  // namespace

std::string Grant::describe() const {
  std::string out = verb + " " + (group.empty() ? "core" : group) + "/" + resource;
  if (!ns.empty()) {
    out += " ns=" + ns;
  }
  if (!name.empty()) {
    out += " name=" + name;
  }
  return out;
}

bool Grant::covers(const Request& r) const {
  return r.verb == verb && r.group == group && r.resource == resource &&
         (ns.empty() || r.ns == ns) && (name.empty() || r.name == name);
}

std::map<std::string, std::set<Grant>> grantsOf(const std::vector<nlohmann::json>& objects) {
  std::map<std::string, const nlohmann::json*> roles;
  for (const auto& o : objects) {
    const std::string kind = o.value("kind", "");
    if (kind == "Role" || kind == "ClusterRole") {
      const auto& meta = o.value("metadata", nlohmann::json::object());
      roles[objectKey(kind, kind == "Role" ? meta.value("namespace", "") : "",
                      meta.value("name", ""))] = &o;
    }
  }
  std::map<std::string, std::set<Grant>> out;
  for (const auto& o : objects) {
    const std::string kind = o.value("kind", "");
    if (kind != "RoleBinding" && kind != "ClusterRoleBinding") {
      continue;
    }
    const auto& meta = o.value("metadata", nlohmann::json::object());
    const std::string bindingNs = kind == "RoleBinding" ? meta.value("namespace", "") : "";
    const auto& ref = o.value("roleRef", nlohmann::json::object());
    const std::string refKind = ref.value("kind", "");
    auto role =
        roles.find(objectKey(refKind, refKind == "Role" ? bindingNs : "", ref.value("name", "")));
    if (role == roles.end()) {
      continue;
    }
    const std::set<Grant> grants = expand(*role->second, bindingNs);
    for (const auto& subject : o.value("subjects", nlohmann::json::array())) {
      if (subject.value("kind", "") != "ServiceAccount") {
        continue;
      }
      const std::string user = std::string(kServiceAccountPrefix) +
                               subject.value("namespace", bindingNs) + ":" +
                               subject.value("name", "");
      out[user].insert(grants.begin(), grants.end());
    }
  }
  return out;
}

std::optional<Request> parseAuditLine(const std::string& line) {
  auto ev = nlohmann::json::parse(line, nullptr, false);
  if (ev.is_discarded() || !ev.is_object() || ev.value("stage", "") != "ResponseComplete" ||
      !ev.contains("user") || !ev["user"].is_object()) {
    return std::nullopt;
  }
  Request r;
  r.user = ev["user"].value("username", "");
  r.verb = ev.value("verb", "");
  const auto& ref = ev.value("objectRef", nlohmann::json::object());
  r.group = ref.value("apiGroup", "");
  r.resource = ref.value("resource", "");
  if (ref.contains("subresource")) {
    r.resource += "/" + ref.value("subresource", "");
  }
  r.ns = ref.value("namespace", "");
  r.name = ref.value("name", "");
  r.code = ev.value("responseStatus", nlohmann::json::object()).value("code", 0);
  r.forbidden = ev.value("annotations", nlohmann::json::object())
                    .value("authorization.k8s.io/decision", "") == "forbid";
  return r;
}

std::string shortUser(const std::string& user) {
  if (user.rfind(kServiceAccountPrefix, 0) != 0) {
    return user;
  }
  return user.substr(user.rfind(':') + 1);
}

UsageReport compareUsage(const std::map<std::string, std::set<Grant>>& grants,
                         const std::vector<Request>& requests, const std::set<std::string>& users,
                         const std::set<std::string>& exemptions) {
  UsageReport report;
  for (const auto& user : users) {
    auto& uses = report.uses[user];
    if (auto g = grants.find(user); g != grants.end()) {
      for (const auto& grant : g->second) {
        uses[grant] = 0;
      }
    }
  }
  for (const auto& r : requests) {
    auto u = report.uses.find(r.user);
    if (u == report.uses.end()) {
      continue;
    }
    if (r.forbidden) {
      const bool granted = std::any_of(u->second.begin(), u->second.end(),
                                       [&](const auto& use) { return use.first.covers(r); });
      (granted ? report.refusedThoughGranted : report.refused)
          .push_back(shortUser(r.user) + " " + r.verb + " " + (r.group.empty() ? "core" : r.group) +
                     "/" + r.resource + (r.ns.empty() ? "" : " ns=" + r.ns) +
                     (r.name.empty() ? "" : " name=" + r.name));
      continue;
    }
    for (auto& [grant, n] : u->second) {
      if (grant.covers(r)) {
        ++n;
      }
    }
  }
  for (const auto& [user, uses] : report.uses) {
    for (const auto& [grant, n] : uses) {
      const std::string key = shortUser(user) + " " + grant.describe();
      if (n == 0 && exemptions.count(key) == 0) {
        report.unused.push_back(key);
      }
    }
  }
  return report;
}

}  // namespace ker::rbac

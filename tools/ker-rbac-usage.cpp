// ker-rbac-usage: checks, from a kube-apiserver audit log, that each component used every
// permission deploy/ grants it (least privilege) and asked for nothing more.
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/comma_list.h"
#include "common/flags.h"
#include "tools/rbac/rbac_usage.h"

namespace {

nlohmann::json toJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : n) {
        out[kv.first.as<std::string>()] = toJson(kv.second);
      }
      return out;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& v : n) {
        out.push_back(toJson(v));
      }
      return out;
    }
    case YAML::NodeType::Scalar:
      return n.as<std::string>();
    default:
      return nullptr;
  }
}

}  // namespace

int main(int argc, char** argv) {
  ker::FlagSet flags("ker-rbac-usage",
                     "Lists how often each permission the manifests grant a ServiceAccount was "
                     "used in an audit log; exits 1 when one was never used (and is not "
                     "exempt) or a request no grant covers was refused.");
  auto* auditLogs =
      flags.addString("audit-logs", "", "comma-separated audit log files (JSON lines)");
  auto* manifests = flags.addString("manifests", "", "comma-separated YAML manifests");
  auto* accounts = flags.addString("service-accounts", "",
                                   "comma-separated ServiceAccounts (NAMESPACE:NAME) to check");
  auto* exemptFile = flags.addString(
      "exemptions", "",
      "file of \"NAME GRANT\" lines (# comments) granted for what is not a request");
  if (auto r = flags.parse(argc, argv); r.status != ker::FlagParseResult::kOk) {
    r.print();
    return r.exitCode();
  }
  if (auditLogs->empty() || manifests->empty() || accounts->empty()) {
    std::fprintf(stderr,
                 "invalid flags: --audit-logs, --manifests and --service-accounts are required\n");
    return 2;
  }
  try {
    std::vector<nlohmann::json> objects;
    for (const auto& file : ker::splitCommaList(*manifests)) {
      for (const auto& doc : YAML::LoadAllFromFile(file)) {
        if (doc.IsMap()) {
          objects.push_back(toJson(doc));
        }
      }
    }
    std::set<std::string> users;
    for (const auto& a : ker::splitCommaList(*accounts)) {
      users.insert("system:serviceaccount:" + a);
    }
    std::set<std::string> exemptions;
    if (!exemptFile->empty()) {
      std::ifstream in(*exemptFile);
      if (!in) {
        throw std::runtime_error("cannot read " + *exemptFile);
      }
      for (std::string line; std::getline(in, line);) {
        line = line.substr(0, line.find('#'));
        while (!line.empty() && line.back() == ' ') {
          line.pop_back();
        }
        if (!line.empty()) {
          exemptions.insert(line);
        }
      }
    }
    std::vector<ker::rbac::Request> requests;
    for (const auto& file : ker::splitCommaList(*auditLogs)) {
      std::ifstream in(file);
      if (!in) {
        throw std::runtime_error("cannot read " + file);
      }
      for (std::string line; std::getline(in, line);) {
        if (auto r = ker::rbac::parseAuditLine(line)) {
          requests.push_back(std::move(*r));
        }
      }
    }
    const auto report =
        ker::rbac::compareUsage(ker::rbac::grantsOf(objects), requests, users, exemptions);
    for (const auto& [user, uses] : report.uses) {
      std::printf("%s\n", ker::rbac::shortUser(user).c_str());
      for (const auto& [grant, n] : uses) {
        std::printf("  %8zu  %s\n", n, grant.describe().c_str());
      }
    }
    for (const auto& r : report.refusedThoughGranted) {
      std::printf("refused though granted (authorizer not yet synced): %s\n", r.c_str());
    }
    for (const auto& r : report.refused) {
      std::printf("refused: %s\n", r.c_str());
    }
    for (const auto& u : report.unused) {
      std::printf("granted, never used: %s\n", u.c_str());
    }
    return report.refused.empty() && report.unused.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ker-rbac-usage: %s\n", e.what());
    return 2;
  }
}

#include "bench/audit.h"

#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

namespace ker::bench {

namespace {

// "2026-01-12T09:41:27.123456Z" (RFC 3339, UTC, as the audit log writes it).
std::chrono::system_clock::time_point parseTime(const std::string& s) {
  std::tm tm{};
  if (s.size() < 20 || strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) {
    return {};
  }
  auto t = std::chrono::system_clock::from_time_t(timegm(&tm));
  if (s[19] == '.') {
    std::string frac;
    for (size_t i = 20; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
      frac += s[i];
    }
    frac = (frac + "000000").substr(0, 6);
    t += std::chrono::microseconds(std::stol(frac));
  }
  return t;
}

}  // namespace

RequestCount countRequests(const std::string& auditLog, const std::string& user,
                           std::chrono::system_clock::time_point from,
                           std::chrono::system_clock::time_point to) {
  RequestCount count;
  std::ifstream in(auditLog);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(user) == std::string::npos) {
      continue;
    }
    auto ev = nlohmann::json::parse(line, nullptr, false);
    if (ev.is_discarded() || ev.value("stage", "") != "ResponseComplete" ||
        ev["user"].value("username", "") != user) {
      continue;
    }
    const std::string verb = ev.value("verb", "");
    const auto at = parseTime(ev.value("requestReceivedTimestamp", ""));
    if (verb == "watch" || at < from || at > to) {
      continue;
    }
    const auto& ref = ev.contains("objectRef") ? ev["objectRef"] : nlohmann::json::object();
    std::string what = ref.value("resource", "");
    if (ref.contains("subresource")) {
      what.append("/").append(ref.value("subresource", ""));
    }
    count.byKind[verb + " " + what]++;
    if (verb == "get" || verb == "list") {
      count.reads++;
    } else {
      count.writes++;
    }
  }
  return count;
}

}  // namespace ker::bench

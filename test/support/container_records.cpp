#include "test/support/container_records.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>

namespace ker::testsupport {
namespace {

std::set<std::string> words(const std::string& text, char sep) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string w; std::getline(in, w, sep);) {
    if (!w.empty()) {
      out.insert(w);
    }
  }
  return out;
}

std::string listed(const std::set<std::string>& items) {
  std::string out = "{";
  for (const auto& i : items) {
    out += (out.size() > 1 ? ", " : "") + i;
  }
  return out + "}";
}

}  // namespace

ContainerRecord parseContainerRecord(const std::string& file, const std::string& text) {
  ContainerRecord r;
  r.file = file;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto sp = line.find(' ');
    const std::string key = line.substr(0, sp);
    const std::string value = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (key == "pod") {
      r.pod = value;
    } else if (key == "uid") {
      r.uid = value;
    } else if (key == "node") {
      r.node = value;
    } else if (key == "shared") {
      r.shared = value == "true";
    } else if (key == "ids") {
      r.ids = words(value, ',');
    } else if (key == "devs") {
      r.deviceNodes = words(value, ' ');
    } else if (key == "alloc") {
      r.allocation = nlohmann::json::parse(value, nullptr, false);
    } else if (key == "start") {
      r.start = std::atof(value.c_str());
    } else if (key == "beat" || key == "stop") {
      r.end = std::max(r.end, std::atof(value.c_str()));
    }
  }
  r.end = std::max(r.end, r.start);
  return r;
}

std::vector<std::string> promiseViolations(const std::vector<ContainerRecord>& records,
                                           const std::vector<AgentOutage>& outages,
                                           int* letThrough) {
  std::vector<std::string> out;
  std::map<std::string, std::vector<const ContainerRecord*>> byId;
  int excused = 0;
  for (const auto& r : records) {
    const std::string who = r.pod + " (" + r.file + ")";
    if (r.ids.empty()) {
      const bool stoppedInTime =
          std::any_of(outages.begin(), outages.end(), [&](const AgentOutage& o) {
            return o.node == r.node && o.from <= r.start && r.start <= o.to &&
                   r.end <= o.to + kLetThroughBoundSeconds;
          });
      if (stoppedInTime) {
        ++excused;
      } else {
        out.push_back(who + " ran without its devices from " + std::to_string(r.start) + " to " +
                      std::to_string(r.end));
      }
      continue;
    }
    std::set<std::string> ids, deviceNodes;
    if (r.allocation.is_object()) {
      for (const auto& [claim, devices] : r.allocation.items()) {
        for (const auto& d : devices) {
          ids.insert(d.value("deviceID", ""));
          deviceNodes.insert("ker-" + d.value("name", ""));
        }
      }
    }
    if (r.ids != ids || r.deviceNodes != deviceNodes) {
      out.push_back(who + " saw " + listed(r.ids) + " and " + listed(r.deviceNodes) +
                    ", its allocation " + r.allocation.dump());
    }
    for (const auto& id : r.ids) {
      byId[id].push_back(&r);
    }
  }
  for (const auto& [id, holders] : byId) {
    for (size_t i = 0; i < holders.size(); ++i) {
      for (size_t j = i + 1; j < holders.size(); ++j) {
        const auto& a = *holders[i];
        const auto& b = *holders[j];
        if (a.uid != b.uid && !(a.shared && b.shared) && a.start < b.end && b.start < a.end) {
          out.push_back(id + " held by " + a.pod + " [" + std::to_string(a.start) + ", " +
                        std::to_string(a.end) + "] and " + b.pod + " [" + std::to_string(b.start) +
                        ", " + std::to_string(b.end) + "]");
        }
      }
    }
  }
  if (letThrough != nullptr) {
    *letThrough = excused;
  }
  return out;
}

}  // namespace ker::testsupport

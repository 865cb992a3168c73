#include "agent/discovery.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "agent/cdi_names.h"
#include "agent/device_identity.h"
#include "common/kube_objects.h"

namespace ker::agent {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument(what);
}

const json& stringAt(const json& obj, const char* key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    fail(path + "." + key + ": required, a non-empty string");
  }
  return *it;
}

DeviceSpec found(const DiscoverySource& source, const std::string& node, const std::string& id) {
  DeviceSpec d;
  d.name = discoveredName(node, id);
  d.rawResourceName = source.rawResourceName;
  d.deviceID = id;
  d.properties = source.properties;
  return d;
}

}  // namespace

std::string discoveredName(const std::string& node, const std::string& id) {
  std::string name = node + "-";
  for (char c : id) {
    const auto u = static_cast<unsigned char>(c);
    name += std::isalnum(u) || c == '.' || c == '-' ? static_cast<char>(std::tolower(u)) : '-';
  }
  return isDns1123Subdomain(name) ? name : "";
}

std::vector<DeviceSpec> devicesFromCdi(const DiscoverySource& source,
                                       const std::vector<CdiSpec>& specs, const std::string& node) {
  std::vector<DeviceSpec> out;
  for (const auto& spec : specs) {
    if (spec.kind != source.cdiKind) {
      continue;
    }
    for (const auto& name : spec.devices) {
      const auto& excluded = source.excludeNames;
      if (std::find(excluded.begin(), excluded.end(), name) != excluded.end()) {
        continue;
      }
      DeviceSpec d = found(source, node, name);
      d.cdiDevice = spec.kind + "=" + name;
      if (auto nodes = spec.deviceNodes.find(name); nodes != spec.deviceNodes.end()) {
        for (const auto& path : nodes->second) {
          d.deviceNodes.push_back({path, "rw"});
        }
      }
      out.push_back(std::move(d));
    }
  }
  return out;
}

std::vector<DeviceSpec> devicesFromCommand(const DiscoverySource& source, const std::string& output,
                                           const std::string& node) {
  const json doc = json::parse(output, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    fail("output: not a JSON object");
  }
  auto list = doc.find("devices");
  if (list == doc.end() || !list->is_array()) {
    fail("devices: required, a list");
  }
  std::vector<DeviceSpec> out;
  for (size_t i = 0; i < list->size(); ++i) {
    const json& e = (*list)[i];
    const std::string path = "devices[" + std::to_string(i) + "]";
    if (!e.is_object()) {
      fail(path + ": expected an object");
    }
    DeviceSpec d = found(source, node, stringAt(e, "id", path).get<std::string>());
    if (auto props = e.find("properties"); props != e.end()) {
      if (!props->is_object()) {
        fail(path + ".properties: expected an object of strings");
      }
      for (const auto& [k, v] : props->items()) {
        if (!v.is_string()) {
          fail(path + ".properties." + k + ": expected a string");
        }
        d.properties[k] = v.get<std::string>();
      }
    }
    if (auto nodes = e.find("deviceNodes"); nodes != e.end()) {
      if (!nodes->is_array()) {
        fail(path + ".deviceNodes: expected a list of paths");
      }
      for (const auto& n : *nodes) {
        if (!n.is_string() || !isDeviceNodePath(n.get<std::string>())) {
          fail(path + ".deviceNodes: " + n.dump() + " is not a path under /dev/");
        }
        d.deviceNodes.push_back({n.get<std::string>(), "rw"});
      }
    }
    if (e.contains("cdiDevice")) {
      d.cdiDevice = stringAt(e, "cdiDevice", path).get<std::string>();
      if (auto problem = cdiQualifiedNameProblem(d.cdiDevice); !problem.empty()) {
        fail(path + ".cdiDevice: " + problem);
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

NodeFile withDiscovered(const NodeFile& file, const std::vector<DeviceSpec>& found,
                        std::vector<std::string>& problems) {
  NodeFile out = file;
  std::set<std::string> names;
  for (const auto& d : file.devices) {
    names.insert(d.name);
  }
  for (const auto& d : found) {
    if (d.name.empty()) {
      problems.push_back("device ID \"" + d.deviceID + "\" makes no valid object name");
      continue;
    }
    if (names.count(d.name)) {
      problems.push_back("device " + d.name + " (ID " + d.deviceID + ") is already listed");
      continue;
    }
    auto same = std::find_if(out.devices.begin(), out.devices.end(), [&](const DeviceSpec& listed) {
      return !sharedKey(d, listed).empty();
    });
    if (same != out.devices.end()) {
      problems.push_back("device " + d.name + " is already listed as " + same->name +
                         ", both being " + sharedKey(d, *same));
      continue;
    }
    names.insert(d.name);
    out.devices.push_back(d);
  }
  return out;
}

}  // namespace ker::agent

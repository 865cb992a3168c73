#include "agent/node_file.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <set>
#include <stdexcept>

#include "agent/cdi_names.h"
#include "agent/device_identity.h"
#include "common/field_path.h"
#include "common/utf8.h"
#include "model/objects.h"

namespace ker::agent {

namespace {

// Unknown keys are errors: a misspelt field would otherwise be dropped without a word.
void onlyKeys(const YAML::Node& map, const std::string& path, const std::set<std::string>& known) {
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    if (!known.count(key)) {
      failAt(childPath(path, key), "unknown field");
    }
  }
}

// parent[key], or a null node when it is absent or null (an error when required).
YAML::Node member(const YAML::Node& parent, const char* key, const std::string& path,
                  bool required) {
  YAML::Node n = parent[key];
  if (n && !n.IsNull()) {
    return n;
  }
  if (required) {
    failAt(childPath(path, key), "required");
  }
  return {};
}

YAML::Node mapAt(const YAML::Node& parent, const char* key, const std::string& path,
                 bool required) {
  YAML::Node n = member(parent, key, path, required);
  if (!n.IsNull() && !n.IsMap()) {
    failAt(childPath(path, key), "expected a mapping");
  }
  return n;
}

YAML::Node listAt(const YAML::Node& parent, const char* key, const std::string& path) {
  YAML::Node n = member(parent, key, path, false);
  if (!n.IsNull() && !n.IsSequence()) {
    failAt(childPath(path, key), "expected a list");
  }
  return n;
}

std::string scalarAt(const YAML::Node& parent, const char* key, const std::string& path,
                     bool required) {
  YAML::Node n = member(parent, key, path, required);
  if (n.IsNull()) {
    return {};
  }
  if (!n.IsScalar()) {
    failAt(childPath(path, key), "expected a string");
  }
  std::string v = n.as<std::string>();
  if (required && v.empty()) {
    failAt(childPath(path, key), "must not be empty");
  }
  return v;
}

bool boolAt(const YAML::Node& parent, const char* key, const std::string& path, bool def) {
  YAML::Node n = parent[key];
  if (!n || n.IsNull()) {
    return def;
  }
  bool v = def;
  if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) {
    failAt(childPath(path, key), "expected true or false");
  }
  return v;
}

std::map<std::string, std::string> stringMapAt(const YAML::Node& parent, const char* key,
                                               const std::string& path) {
  std::map<std::string, std::string> out;
  YAML::Node n = mapAt(parent, key, path, false);
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    if (!kv.second.IsScalar()) {
      failAt(childPath(childPath(path, key), k), "expected a string");
    }
    out[k] = kv.second.as<std::string>();
  }
  return out;
}

// POSIX portable names, which every shell can read back.
bool isEnvName(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
      return false;
    }
  }
  return true;
}

bool isCleanAbsolutePath(std::string_view p) {
  if (p.empty() || p[0] != '/' || p.find('\0') != std::string_view::npos) {
    return false;
  }
  size_t start = 1;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string_view::npos) {
      end = p.size();
    }
    std::string_view part = p.substr(start, end - start);
    if (part == "." || part == "..") {
      return false;
    }
    start = end + 1;
  }
  return true;
}

DeviceNode parseDeviceNode(const YAML::Node& n, const std::string& path) {
  if (!n.IsMap()) {
    failAt(path, "expected a mapping");
  }
  onlyKeys(n, path, {"path", "permissions"});
  DeviceNode d;
  d.path = scalarAt(n, "path", path, true);
  if (!isDeviceNodePath(d.path)) {
    failAt(childPath(path, "path"), "must be an absolute path under /dev/ without . or ..");
  }
  if (n["permissions"]) {
    d.permissions = scalarAt(n, "permissions", path, true);
  }
  std::set<char> seen;
  for (char c : d.permissions) {
    if ((c != 'r' && c != 'w' && c != 'm') || !seen.insert(c).second) {
      failAt(childPath(path, "permissions"), "must be some of r, w and m, each once");
    }
  }
  return d;
}

DeviceMount parseMount(const YAML::Node& n, const std::string& path) {
  if (!n.IsMap()) {
    failAt(path, "expected a mapping");
  }
  onlyKeys(n, path, {"hostPath", "containerPath", "readOnly"});
  DeviceMount m;
  m.hostPath = scalarAt(n, "hostPath", path, true);
  m.containerPath = scalarAt(n, "containerPath", path, true);
  m.readOnly = boolAt(n, "readOnly", path, true);
  if (!isCleanAbsolutePath(m.hostPath)) {
    failAt(childPath(path, "hostPath"), "must be an absolute path without . or ..");
  }
  if (!isCleanAbsolutePath(m.containerPath) || m.containerPath == "/") {
    failAt(childPath(path, "containerPath"),
           "must be an absolute path other than / without . or ..");
  }
  return m;
}

HealthCheckSpec parseHealthCheck(const YAML::Node& n, const std::string& path) {
  if (!n.IsMap()) {
    failAt(path, "expected a mapping");
  }
  onlyKeys(n, path, {"command", "timeoutSeconds"});
  HealthCheckSpec h;
  YAML::Node command = listAt(n, "command", path);
  if (command.IsNull() || command.size() == 0) {
    failAt(childPath(path, "command"), "required: the program and its arguments");
  }
  for (size_t i = 0; i < command.size(); ++i) {
    if (!command[i].IsScalar()) {
      failAt(indexPath(childPath(path, "command"), i), "expected a string");
    }
    h.command.push_back(command[i].as<std::string>());
  }
  if (h.command[0].empty()) {
    failAt(indexPath(childPath(path, "command"), 0), "must not be empty");
  }
  const std::string timeout = scalarAt(n, "timeoutSeconds", path, false);
  if (!timeout.empty()) {
    int seconds = 0;
    if (!YAML::convert<int>::decode(n["timeoutSeconds"], seconds) || seconds < 1 || seconds > 60) {
      failAt(childPath(path, "timeoutSeconds"), "must be a whole number from 1 to 60");
    }
    h.timeout = std::chrono::seconds(seconds);
  }
  return h;
}

DeviceSpec parseDevice(const YAML::Node& n, const std::string& path) {
  if (!n.IsMap()) {
    failAt(path, "expected a mapping");
  }
  onlyKeys(n, path,
           {"name", "rawResourceName", "deviceID", "properties", "deviceNodes", "env", "mounts",
            "healthCheck", "cdiDevice"});
  DeviceSpec d;
  d.name = scalarAt(n, "name", path, true);
  if (!isDns1123Subdomain(d.name)) {
    failAt(childPath(path, "name"), "must be a valid object name (lowercase RFC 1123 subdomain)");
  }
  d.rawResourceName = scalarAt(n, "rawResourceName", path, true);
  d.deviceID = scalarAt(n, "deviceID", path, true);
  d.properties = stringMapAt(n, "properties", path);
  YAML::Node nodes = listAt(n, "deviceNodes", path);
  for (size_t i = 0; i < nodes.size(); ++i) {
    d.deviceNodes.push_back(
        parseDeviceNode(nodes[i], indexPath(childPath(path, "deviceNodes"), i)));
  }
  d.env = stringMapAt(n, "env", path);
  for (const auto& [k, v] : d.env) {
    if (!isEnvName(k)) {
      failAt(childPath(childPath(path, "env"), k), "not a valid environment variable name");
    }
  }
  YAML::Node mounts = listAt(n, "mounts", path);
  for (size_t i = 0; i < mounts.size(); ++i) {
    d.mounts.push_back(parseMount(mounts[i], indexPath(childPath(path, "mounts"), i)));
  }
  YAML::Node check = member(n, "healthCheck", path, false);
  if (!check.IsNull()) {
    d.healthCheck = parseHealthCheck(check, childPath(path, "healthCheck"));
  }
  d.cdiDevice = scalarAt(n, "cdiDevice", path, false);
  if (!d.cdiDevice.empty()) {
    if (auto problem = cdiQualifiedNameProblem(d.cdiDevice); !problem.empty()) {
      failAt(childPath(path, "cdiDevice"), "not a CDI device name: " + problem);
    }
  }
  return d;
}

std::vector<std::string> stringListAt(const YAML::Node& parent, const char* key,
                                      const std::string& path) {
  YAML::Node list = listAt(parent, key, path);
  std::vector<std::string> out;
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].IsScalar()) {
      failAt(indexPath(childPath(path, key), i), "expected a string");
    }
    out.push_back(list[i].Scalar());
  }
  return out;
}

DiscoverySource parseDiscovery(const YAML::Node& n, const std::string& path) {
  if (!n.IsMap()) {
    failAt(path, "expected a mapping");
  }
  onlyKeys(n, path, {"rawResourceName", "properties", "cdi", "command", "timeoutSeconds"});
  DiscoverySource s;
  s.rawResourceName = scalarAt(n, "rawResourceName", path, true);
  s.properties = stringMapAt(n, "properties", path);
  YAML::Node cdi = mapAt(n, "cdi", path, false);
  s.command = stringListAt(n, "command", path);
  if (cdi.IsNull() == s.command.empty()) {
    failAt(path, "needs exactly one of cdi and command");
  }
  if (!cdi.IsNull()) {
    const std::string at = childPath(path, "cdi");
    onlyKeys(cdi, at, {"kind", "exclude"});
    s.cdiKind = scalarAt(cdi, "kind", at, true);
    if (auto problem = cdiKindProblem(s.cdiKind); !problem.empty()) {
      failAt(childPath(at, "kind"), problem);
    }
    s.excludeNames =
        cdi["exclude"] ? stringListAt(cdi, "exclude", at) : std::vector<std::string>{"all"};
  }
  if (n["timeoutSeconds"]) {
    const std::string t = scalarAt(n, "timeoutSeconds", path, true);
    int seconds = 0;
    try {
      seconds = std::stoi(t);
    } catch (const std::exception&) {
      seconds = 0;
    }
    if (seconds < 1 || seconds > 60 || std::to_string(seconds) != t) {
      failAt(childPath(path, "timeoutSeconds"), "must be a whole number from 1 to 60");
    }
    s.timeout = std::chrono::seconds(seconds);
  }
  return s;
}

}  // namespace

bool isDeviceNodePath(std::string_view path) {
  return isCleanAbsolutePath(path) && path.starts_with("/dev/");
}

const DeviceSpec* NodeFile::find(std::string_view name) const {
  for (const auto& d : devices) {
    if (d.name == name) {
      return &d;
    }
  }
  return nullptr;
}

std::string NodeFile::envNameFor(const std::string& rawResourceName) const {
  auto it = envNames.find(rawResourceName);
  return it != envNames.end() ? it->second : defaultEnvName(rawResourceName);
}

std::string defaultEnvName(std::string_view rawResourceName) {
  std::string out(kDefaultEnvPrefix);
  for (char c : rawResourceName) {
    out += std::isalnum(static_cast<unsigned char>(c))
               ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
               : '_';
  }
  return out;
}

NodeFile parseNodeFile(const std::string& yamlText) {
  // Every name and property goes to the API server, which takes only UTF-8 (as YAML requires).
  if (auto bad = firstInvalidUtf8(yamlText)) {
    failAt("node file", "not valid UTF-8 at byte " + std::to_string(*bad));
  }
  YAML::Node root;
  try {
    root = YAML::Load(yamlText);
  } catch (const YAML::Exception& e) {
    failAt("node file", std::string("not valid YAML: ") + e.what());
  }
  NodeFile out;
  if (!root || root.IsNull()) {
    return out;  // an empty file: a node without devices
  }
  if (!root.IsMap()) {
    failAt("node file", "expected a mapping with devices and resources");
  }
  try {
    onlyKeys(root, "", {"devices", "resources", "discover"});
    YAML::Node sources = listAt(root, "discover", "");
    for (size_t i = 0; i < sources.size(); ++i) {
      out.discover.push_back(parseDiscovery(sources[i], indexPath("discover", i)));
    }
    YAML::Node resources = listAt(root, "resources", "");
    for (size_t i = 0; i < resources.size(); ++i) {
      const std::string path = indexPath("resources", i);
      const YAML::Node& r = resources[i];
      if (!r.IsMap()) {
        failAt(path, "expected a mapping");
      }
      onlyKeys(r, path, {"rawResourceName", "envName"});
      std::string name = scalarAt(r, "rawResourceName", path, true);
      std::string env = scalarAt(r, "envName", path, true);
      if (!isEnvName(env)) {
        failAt(childPath(path, "envName"), "not a valid environment variable name");
      }
      if (!out.envNames.emplace(name, env).second) {
        failAt(childPath(path, "rawResourceName"), "listed twice");
      }
    }
    YAML::Node devices = listAt(root, "devices", "");
    std::set<std::string> names;
    for (size_t i = 0; i < devices.size(); ++i) {
      const std::string path = indexPath("devices", i);
      DeviceSpec d = parseDevice(devices[i], path);
      if (!names.insert(d.name).second) {
        failAt(childPath(path, "name"), "\"" + d.name + "\" is listed twice");
      }
      for (size_t j = 0; j < out.devices.size(); ++j) {
        if (const std::string key = sharedKey(d, out.devices[j]); !key.empty()) {
          failAt(path, "is the same device as " + indexPath("devices", j) + " (" +
                           out.devices[j].name + "), both being " + key +
                           ": one device is listed once, under one name");
        }
      }
      out.devices.push_back(std::move(d));
    }
    // A device's own variable must not clash with the one that lists its resource's IDs.
    for (size_t i = 0; i < out.devices.size(); ++i) {
      const auto& d = out.devices[i];
      const std::string listVar = out.envNameFor(d.rawResourceName);
      if (d.env.count(listVar)) {
        failAt(childPath(childPath(indexPath("devices", i), "env"), listVar),
               "is the variable that lists the " + d.rawResourceName + " device IDs");
      }
    }
  } catch (const YAML::Exception& e) {
    failAt("node file", std::string("unreadable: ") + e.what());
  }
  return out;
}

}  // namespace ker::agent

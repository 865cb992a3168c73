#include "agent/cdi_specs.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "agent/cdi_names.h"
#include "agent/node_file.h"
#include "common/utf8.h"

namespace ker::agent {

namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument(what);
}

std::string scalar(const YAML::Node& parent, const char* key, const std::string& path) {
  YAML::Node n = parent[key];
  if (!n || !n.IsScalar() || n.Scalar().empty()) {
    fail(path + key + ": required, a string");
  }
  return n.Scalar();
}

CdiSpec readCdiSpec(const YAML::Node& root) {
  if (!root.IsMap()) {
    fail("expected a mapping");
  }
  scalar(root, "cdiVersion", "");
  CdiSpec spec;
  spec.kind = scalar(root, "kind", "");
  if (auto p = cdiKindProblem(spec.kind); !p.empty()) {
    fail("kind: " + p);
  }
  YAML::Node devices = root["devices"];
  if (!devices || !devices.IsSequence()) {
    fail("devices: required, a list");
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    const std::string path = "devices[" + std::to_string(i) + "].";
    if (!devices[i].IsMap()) {
      fail(path.substr(0, path.size() - 1) + ": expected a mapping");
    }
    std::string name = scalar(devices[i], "name", path);
    if (auto p = cdiDeviceNameProblem(name); !p.empty()) {
      fail(path + "name: " + p);
    }
    const YAML::Node edits = devices[i]["containerEdits"];
    const YAML::Node nodes = edits && edits.IsMap() ? edits["deviceNodes"] : YAML::Node();
    for (size_t k = 0; nodes && nodes.IsSequence() && k < nodes.size(); ++k) {
      const YAML::Node& n = nodes[k];
      if (!n.IsMap() || !n["path"] || !n["path"].IsScalar()) {
        continue;  // the runtime refuses it; nothing for the agent to check
      }
      const std::string node = n["path"].Scalar();
      const bool samePlace =
          !n["hostPath"] || (n["hostPath"].IsScalar() && n["hostPath"].Scalar() == node);
      if (samePlace && isDeviceNodePath(node)) {
        spec.deviceNodes[name].push_back(node);
      }
    }
    spec.devices.push_back(std::move(name));
  }
  return spec;
}

}  // namespace

CdiSpec parseCdiSpec(const std::string& text) {
  // Its device names become device IDs the API server stores, and it takes only UTF-8.
  if (auto bad = firstInvalidUtf8(text)) {
    fail("not valid UTF-8 at byte " + std::to_string(*bad));
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail(std::string("not YAML or JSON: ") + e.what());
  }
  try {
    return readCdiSpec(root);
  } catch (const YAML::Exception& e) {  // a shape the reads above did not expect
    fail(std::string("unexpected shape: ") + e.what());
  }
}

CdiDevices readCdiSpecDirs(const std::string& hostRoot, const std::vector<std::string>& dirs) {
  namespace fs = std::filesystem;
  CdiDevices out;
  for (const auto& dir : dirs) {
    std::error_code ec;
    fs::directory_iterator it(hostRoot + dir, ec);
    if (ec) {
      continue;
    }
    std::vector<fs::directory_entry> entries(it, fs::directory_iterator());
    std::sort(entries.begin(), entries.end());
    for (const auto& entry : entries) {
      const std::string ext = entry.path().extension().string();
      if ((ext != ".json" && ext != ".yaml") || !entry.is_regular_file(ec)) {
        continue;
      }
      const std::string shown = dir + "/" + entry.path().filename().string();
      std::ifstream in(entry.path());
      if (!in.is_open()) {
        out.problems.push_back(shown + ": cannot be read");
        out.failedFiles.push_back(shown);
        continue;
      }
      std::stringstream text;
      text << in.rdbuf();
      try {
        CdiSpec spec = parseCdiSpec(text.str());
        spec.file = shown;
        for (const auto& name : spec.devices) {
          out.names.insert(spec.kind + "=" + name);
        }
        out.specs.push_back(std::move(spec));
      } catch (const std::invalid_argument& e) {
        out.problems.push_back(shown + ": " + e.what());
        out.failedFiles.push_back(shown);
      }
    }
  }
  return out;
}

}  // namespace ker::agent

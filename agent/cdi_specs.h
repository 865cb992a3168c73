#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

// What the agent reads of the CDI specs a node's vendors installed (the files the runtime
// applies when a container names a CDI device).
namespace ker::agent {

// One spec file: its kind ("vendor/class") and the names of the devices it defines.
struct CdiSpec {
  std::string kind;
  std::vector<std::string> devices;
  // Per device name, the device nodes of its own edits that the host has at the same path
  // (no hostPath, or the same one): those the agent can check and guard as the node file's.
  std::map<std::string, std::vector<std::string>> deviceNodes;
  std::string file;  // where it was read, "<dir>/<name>" (readCdiSpecDirs)
};

// Parses a spec's text (YAML or JSON, which is YAML). Throws std::invalid_argument naming the
// field when it is not a spec: no cdiVersion, a kind or device name CDI does not allow.
CdiSpec parseCdiSpec(const std::string& text);

// The devices the specs define, fully qualified ("nvidia.com/gpu=GPU-…"), and the files that
// could not be read or parsed (the runtime skips those too).
struct CdiDevices {
  std::set<std::string> names;
  std::vector<CdiSpec> specs;            // in directory, then file-name order
  std::vector<std::string> problems;     // "<file>: <why>"
  std::vector<std::string> failedFiles;  // the files of `problems`, "<dir>/<name>"
};

// Reads every *.json and *.yaml file of `dirs` (host paths, each under hostRoot), as the
// runtime's CDI registry does; a missing directory defines nothing.
CdiDevices readCdiSpecDirs(const std::string& hostRoot, const std::vector<std::string>& dirs);

}  // namespace ker::agent

// libFuzzer target: the node agent's node file, as any text an administrator (or a broken
// config tool) could write, and the same text as a CDI spec in the runtime's spec folders.
// Parsing must either succeed or throw std::invalid_argument; it never crashes, and a file
// that parses yields devices that are all valid: names unique, device nodes under /dev/, and
// the environment-variable names usable.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <stdexcept>
#include <string>

#include "agent/cdi_specs.h"
#include "agent/node_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    ker::agent::parseCdiSpec(text);
  } catch (const std::invalid_argument&) {
    // refused with a reason, as a spec that is not one must be
  }
  ker::agent::NodeFile file;
  try {
    file = ker::agent::parseNodeFile(text);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  std::set<std::string> names;
  for (const auto& d : file.devices) {
    if (d.name.empty() || d.rawResourceName.empty() || d.deviceID.empty() ||
        !names.insert(d.name).second) {
      std::abort();
    }
    for (const auto& n : d.deviceNodes) {
      if (n.path.rfind("/dev/", 0) != 0 || n.path.find("/../") != std::string::npos) {
        std::abort();
      }
    }
    if (d.env.count(file.envNameFor(d.rawResourceName))) {
      std::abort();
    }
  }
  return 0;
}

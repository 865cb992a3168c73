#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/flags.h"
#include "common/status.h"

namespace ker {

// Parses args as a command line after the program's name.
inline FlagParseResult parseArgs(FlagSet& flags, const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"prog"};
  for (const auto& a : args) {
    argv.push_back(a.c_str());
  }
  return flags.parse(static_cast<int>(argv.size()), argv.data());
}

// Registers a binary's flags (Flags(FlagSet&, extra...)), parses args and converts them: the
// settings, or the parse or conversion error.
template <class Flags, class Settings, class... Extra>
Status parseSettings(const std::vector<std::string>& args, Settings& out, Extra&&... extra) {
  FlagSet flags("prog", "");
  const Flags binary(flags, std::forward<Extra>(extra)...);
  const FlagParseResult r = parseArgs(flags, args);
  if (r.status != FlagParseResult::kOk) {
    return Status::internal(r.message);
  }
  return binary.settings(out);
}

}  // namespace ker

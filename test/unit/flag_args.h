#pragma once

#include <string>
#include <vector>

#include "common/flags.h"

namespace ker {

// Parses args as a command line after the program's name.
inline FlagParseResult parseArgs(FlagSet& flags, const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"prog"};
  for (const auto& a : args) {
    argv.push_back(a.c_str());
  }
  return flags.parse(static_cast<int>(argv.size()), argv.data());
}

}  // namespace ker

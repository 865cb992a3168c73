#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ker::bench {

// A verb row's probe: its claims per pod, with "c" when every claim has a constraint ("1c").
std::string probeLabel(int claims, bool constrained);

// Judges the results against the targets (adding "targets" to them), writes
// OUT_DIR/latest.json and OUT_DIR/latest.md, and returns the markdown.
std::string writeResults(nlohmann::ordered_json& results, const std::string& outDir);

}  // namespace ker::bench

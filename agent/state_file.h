#pragma once

#include <optional>
#include <string>

#include "common/status.h"

// Files the agent keeps in its folder on the node (--state-dir), across restarts.
namespace ker::agent {

// The whole text of the file at `path` into `out`; nullopt when there is no such file.
Status readStateFile(const std::string& path, std::optional<std::string>& out);

// Replaces the file `name` in folder `dir` with `text`, atomically (a temporary file synced,
// then renamed over it, then the folder synced), creating the folder when missing: a crash
// leaves the old file or the new, never a mix.
Status writeStateFile(const std::string& dir, const std::string& name, const std::string& text);

}  // namespace ker::agent

#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "common/status.h"

// The files the agent reads whole (its node file), and those it keeps in its folder on the node
// (--state-dir) across restarts.
namespace ker::agent {

// The whole text of the file at `path` into `out`; nullopt when there is no such file. An error
// when it cannot be read or holds more than `maxBytes` (read no further than that).
Status readWholeFile(const std::string& path, size_t maxBytes, std::optional<std::string>& out);

// Where writeStateFile puts the file `name` of folder `dir`.
std::string stateFilePath(const std::string& dir, const std::string& name);

// Replaces the file `name` in folder `dir` with `text`, atomically (a temporary file synced,
// then renamed over it, then the folder synced), creating the folder when missing: a crash
// leaves the old file or the new, never a mix.
Status writeStateFile(const std::string& dir, const std::string& name, const std::string& text);

}  // namespace ker::agent

#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace ker::agent {

struct CommandOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds(5)};
  size_t maxOutput = 4096;     // bytes of output kept; the rest is read and dropped
  bool stderrToOutput = true;  // false: the command's stderr is the agent's (its log)
};

struct CommandResult {
  std::string startError;  // set when the command could not be started (pipe, fork)
  bool timedOut = false;
  bool exited = false;  // exited on its own: exitCode is its status
  int exitCode = 0;
  int signal = 0;  // the signal that killed it, when it neither exited nor timed out
  std::string output;
  bool truncated = false;  // output passed maxOutput

  bool succeeded() const { return startError.empty() && !timedOut && exited && exitCode == 0; }
  // "exited with 2", "killed by signal 9", "timed out after 5000ms" or the start error.
  std::string describe(const std::string& what, std::chrono::milliseconds timeout) const;
};

// Runs argv (argv[0] looked up in PATH) with env added to the agent's environment and stdin
// from /dev/null, in a process group of its own, and waits at most options.timeout; past it
// the whole group is killed. Never throws.
CommandResult runCommand(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env,
                         const CommandOptions& options);

}  // namespace ker::agent

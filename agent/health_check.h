#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace ker::agent {

// The outcome of running a device's configured health check.
struct CheckResult {
  bool healthy = false;
  std::string problem;  // when not healthy: the exit status or timeout, and the first output line
};

// Runs argv (argv[0] looked up in PATH) with env added to the agent's environment, its output
// captured, and waits at most `timeout`; past it the command's process group is killed. Exit
// status 0 is healthy. Never throws; a command that cannot start is unhealthy.
CheckResult runHealthCheck(const std::vector<std::string>& argv,
                           const std::map<std::string, std::string>& env,
                           std::chrono::milliseconds timeout);

}  // namespace ker::agent

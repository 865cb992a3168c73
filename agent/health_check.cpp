#include "agent/health_check.h"

#include "agent/command_runner.h"

namespace ker::agent {

namespace {

std::string firstLine(const std::string& out) {
  std::string line = out.substr(0, out.find('\n'));
  return line.size() > 200 ? line.substr(0, 200) + "…" : line;
}

}  // namespace

CheckResult runHealthCheck(const std::vector<std::string>& argv,
                           const std::map<std::string, std::string>& env,
                           std::chrono::milliseconds timeout) {
  if (argv.empty()) {
    return {false, "health check has no command"};
  }
  const CommandResult r = runCommand(argv, env, {.timeout = timeout});
  if (r.succeeded()) {
    return {true, {}};
  }
  const std::string why = r.describe("health check", timeout);
  const std::string line = r.exited || r.signal != 0 ? firstLine(r.output) : "";
  return {false, line.empty() ? why : why + ": " + line};
}

}  // namespace ker::agent

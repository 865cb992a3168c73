#include "agent/health_check.h"

#include "agent/command_runner.h"
#include "common/utf8.h"

namespace ker::agent {

namespace {

// The output's first line, of at most 200 bytes and UTF-8 (it goes into the device's status).
std::string firstLine(const std::string& out) {
  const std::string line = clippedUtf8(out.substr(0, out.find('\n')), std::string::npos);
  const std::string clipped = clippedUtf8(line, 200);
  return clipped.size() < line.size() ? clipped + "…" : clipped;
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

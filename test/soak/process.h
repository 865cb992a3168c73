#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ker::soak {

// A component the soak runs, kills and restarts (an extender or a controller replica), with
// its output appended to a log file. The child gets PR_SET_PDEATHSIG(SIGKILL), so it dies with
// the soak even when the soak itself is SIGKILLed. The signal follows the thread that forked,
// so start() must be called from the main thread, which lives as long as the soak.
class Process {
 public:
  Process(std::string binary, std::vector<std::string> args, std::string logFile);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // Starts a new run with `env` added to the soak's environment; throws when one is running.
  void start(const std::map<std::string, std::string>& env = {});
  // Reaps the child when it has ended; false from then on.
  bool running();
  // The wait status of the last run once it ended.
  std::optional<int> lastStatus() const { return lastStatus_; }
  int pid() const { return pid_; }
  void signal(int sig) const;
  // SIGTERM, up to `grace` to exit, then SIGKILL; returns once the child is reaped.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(10));
  void kill();
  std::string logTail(size_t bytes) const;

 private:
  void waitExit(std::chrono::milliseconds timeout);

  std::string binary_;
  std::vector<std::string> args_;
  std::string logFile_;
  int pid_ = -1;
  std::optional<int> lastStatus_;
};

// Runs a command to completion with its output appended to logFile; returns its exit code
// (-1 when it could not run or ended by a signal).
int runCommand(const std::vector<std::string>& argv, const std::string& logFile);

// "exit 1", "signal 9 (Killed)", from a wait status.
std::string describeStatus(int status);

}  // namespace ker::soak

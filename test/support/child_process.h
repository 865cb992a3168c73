#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ker::testsupport {

struct ChildProcessOptions {
  // PR_SET_PDEATHSIG(SIGKILL): the child dies with this process even when this one is
  // SIGKILLed. The signal follows the thread that started the child, not the process, so
  // start() must then be called from a thread that outlives the child (the main thread).
  bool dieWithParent = false;
};

// A program the tests, the soak or the bench run next to themselves (an extender, a controller,
// a script): stdin is /dev/null, stdout and stderr are appended to a log file. Once a run has
// ended, start() begins the next one; the destructor stops a running one.
class ChildProcess {
 public:
  ChildProcess(std::string binary, std::vector<std::string> args, std::string logFile,
               ChildProcessOptions options = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts a run with `env` added to this process's environment. Throws when a run is still
  // going or the binary cannot be executed.
  void start(const std::map<std::string, std::string>& env = {});
  // Reaps the child when it has ended; false from then on.
  bool running();
  // Blocks until the run ends.
  void wait();
  // The wait status of the last run, once it ended.
  std::optional<int> lastStatus() const { return lastStatus_; }
  int pid() const { return pid_; }
  void signal(int sig) const;
  // SIGTERM, up to `grace` to exit, then SIGKILL; returns once the child is reaped.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(10));
  void kill();
  std::string logTail(size_t bytes = 4000) const;

 private:
  void ended(int status);

  std::string binary_;
  std::vector<std::string> args_;
  std::string logFile_;
  ChildProcessOptions options_;
  int pid_ = -1;
  std::optional<int> lastStatus_;
};

// From now on SIGINT and SIGTERM stop every running ChildProcess before this process exits, so
// an interrupted run leaves none behind. Call before starting threads: it blocks both signals in
// the calling thread and the threads it creates, and handles them in a thread of its own.
void stopChildrenOnSignal();

}  // namespace ker::testsupport

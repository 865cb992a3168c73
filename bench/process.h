#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace ker::bench {

// A child process (the extender or the controller) whose output goes to a log file. Stopped
// with SIGTERM, then SIGKILL after a grace period, at the latest when destroyed.
class Process {
 public:
  Process(const std::string& binary, const std::vector<std::string>& args,
          const std::string& logFile);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  int pid() const { return pid_; }
  bool running();
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(10));
  std::string logTail(size_t bytes = 3000) const;

 private:
  void forget();

  int pid_ = -1;
  std::string logFile_;
};

// From now on SIGINT and SIGTERM stop every running Process before the bench exits, so an
// interrupted run leaves no extender or controller behind. Call before starting threads.
void stopChildrenOnSignal();

// Memory of a process from /proc/PID/status, in bytes (0 when unreadable): the resident set
// now (VmRSS) and its peak since the process started (VmHWM).
struct Memory {
  double rss = 0;
  double peak = 0;
};
Memory memoryOf(int pid);

// CPU time (user + system) a process has used so far, in seconds; 0 when unreadable.
double cpuSeconds(int pid);

// A TCP port on 127.0.0.1 that nothing listens on right now.
int freePort();

}  // namespace ker::bench

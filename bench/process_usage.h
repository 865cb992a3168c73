#pragma once

namespace ker::bench {

// Memory of a process from /proc/PID/status, in bytes (0 when unreadable): the resident set
// now (VmRSS) and its peak since the process started (VmHWM).
struct Memory {
  double rss = 0;
  double peak = 0;
};
Memory memoryOf(int pid);

// CPU time (user + system) a process has used so far, in seconds; 0 when unreadable.
double cpuSeconds(int pid);

}  // namespace ker::bench

#include "bench/process_usage.h"

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace ker::bench {

Memory memoryOf(int pid) {
  Memory m;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    // Lines read "VmHWM:	  123456 kB".
    auto value = [&] { return std::stod(line.substr(line.find(':') + 1)) * 1024; };
    if (line.rfind("VmRSS:", 0) == 0) {
      m.rss = value();
    } else if (line.rfind("VmHWM:", 0) == 0) {
      m.peak = value();
    }
  }
  return m;
}

double cpuSeconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name, which is in parentheses and may hold spaces: state is
  // field 3, utime and stime are fields 14 and 15.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) {
    return 0;
  }
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i >= 14) {
      ticks += std::stod(field);
    }
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace ker::bench

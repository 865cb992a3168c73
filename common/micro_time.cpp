#include "common/micro_time.h"

#include <cstdio>
#include <ctime>

namespace ker {

std::string formatMicroTime(SystemTime t) {
  const auto secs = std::chrono::floor<std::chrono::seconds>(t);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t - secs).count();
  const std::time_t tt = std::chrono::system_clock::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(micros));
  return buf;
}

}  // namespace ker

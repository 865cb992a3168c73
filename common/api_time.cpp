#include "common/api_time.h"

#include <cstdio>
#include <ctime>

namespace ker {

namespace {

// "2006-01-02T15:04:05" for t's whole second, in UTC.
std::string utcSeconds(std::chrono::sys_seconds secs) {
  const std::time_t tt = std::chrono::system_clock::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

}  // namespace

std::string formatTime(SystemTime t) {
  return utcSeconds(std::chrono::floor<std::chrono::seconds>(t)) + "Z";
}

std::string formatMicroTime(SystemTime t) {
  const auto secs = std::chrono::floor<std::chrono::seconds>(t);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t - secs).count();
  char fraction[32];
  std::snprintf(fraction, sizeof fraction, ".%06lldZ", static_cast<long long>(micros));
  return utcSeconds(secs) + fraction;
}

}  // namespace ker

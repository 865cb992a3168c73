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

std::optional<SystemTime> parseTime(std::string_view text) {
  std::tm tm{};
  int used = 0;
  const std::string s(text);
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &used) != 6 ||
      used != static_cast<int>(s.size()) || s.size() != 20 || tm.tm_mon < 1 || tm.tm_mon > 12 ||
      tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const std::time_t tt = timegm(&tm);
  if (tt == static_cast<std::time_t>(-1)) {
    return std::nullopt;
  }
  return std::chrono::system_clock::from_time_t(tt);
}

}  // namespace ker

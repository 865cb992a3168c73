#include "common/request_deadline.h"

namespace ker {

namespace {
thread_local std::optional<RequestDeadline::Clock::time_point> current;
}  // namespace

RequestDeadline::RequestDeadline(std::optional<Clock::time_point> at) : previous_(current) {
  current = at;
}

RequestDeadline::~RequestDeadline() {
  current = previous_;
}

std::optional<std::chrono::milliseconds> RequestDeadline::remaining() {
  if (!current) {
    return std::nullopt;
  }
  return std::chrono::floor<std::chrono::milliseconds>(*current - Clock::now());
}

}  // namespace ker

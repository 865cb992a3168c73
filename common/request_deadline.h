#pragma once

#include <chrono>
#include <optional>

namespace ker {

// A deadline on the API calls this thread makes while the scope lives, as a Go context
// carries one: KubeClient caps each try's timeouts by the time left, and starts no try or
// retry past it. Scopes nest, the innermost wins; an empty one lifts the deadline (for calls
// that must run whatever the time, such as reading back what a cut-off call may have done).
class RequestDeadline {
 public:
  using Clock = std::chrono::steady_clock;
  explicit RequestDeadline(std::optional<Clock::time_point> at);
  ~RequestDeadline();
  RequestDeadline(const RequestDeadline&) = delete;
  RequestDeadline& operator=(const RequestDeadline&) = delete;

  // Time left under the innermost scope on this thread (zero or less once it passed);
  // nullopt when no deadline applies.
  static std::optional<std::chrono::milliseconds> remaining();

 private:
  std::optional<Clock::time_point> previous_;
};

}  // namespace ker

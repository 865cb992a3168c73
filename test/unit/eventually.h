#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace ker::testing {

// Polls `done` every few milliseconds until it holds or `timeout` passes; whether it held. For
// tests of components that act on their own threads.
inline bool eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

}  // namespace ker::testing

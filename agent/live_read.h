#pragma once

#include <exception>
#include <memory>
#include <utility>

#include "common/status.h"

namespace ker::agent {

// A live read at the injection's boundary, for the sources of claims and pods: a container is
// refused by a decision on what could not be read, never by an exception. `read` returns the
// object; NotFound reads as absent (nullptr, OK), any other failure as its Status.
template <class T, class Read>
std::pair<std::shared_ptr<const T>, Status> readLive(Read&& read) {
  try {
    return {std::make_shared<const T>(read()), {}};
  } catch (const std::exception& e) {
    Status status = statusFrom(e);
    if (status.isNotFound()) {
      return {nullptr, {}};
    }
    return {nullptr, std::move(status)};
  }
}

}  // namespace ker::agent

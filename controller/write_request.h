#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "controller/plan.h"

namespace ker {

// A planned write as it goes on the wire: an update of /status, or a merge patch of /status or
// (subresource "") of the object itself.
struct WriteRequest {
  bool mergePatch = false;
  std::string subresource = "status";
  nlohmann::json body;
};

// Rendered where the write is sent (Executor::write), from the typed write alone: a whole status
// by the object's toJson, a mark with the conditions writtenConditions gives, at the write's time.
WriteRequest renderWrite(const StatusWrite& w);

}  // namespace ker

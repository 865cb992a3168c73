#pragma once

#include <map>
#include <memory>
#include <string>

#include "model/objects.h"
#include "scheduler/bind/binder.h"
#include "scheduler/cache/device_index.h"
#include "scheduler/extender.h"
#include "scheduler/fit/allocator.h"
#include "test/unit/fake_api_client.h"

namespace ker::testing {

// The extender wired as the app wires it, over the claims a test puts in claims_ and no Node
// objects (the tests' devices are pinned by name), for a fixture of the filter, its holds or
// preemption to derive from.
class ExtenderParts {
 protected:
  explicit ExtenderParts(Scoring scoring = {})
      : binder_(api_, index_,
                [](const std::string&) { return std::map<std::string, std::string>{}; },
                {.scoring = scoring}),
        extender_(
            index_,
            [this](const std::string& key) -> ClaimPtr {
              auto it = claims_.find(key);
              return it == claims_.end() ? nullptr : it->second;
            },
            [](const std::string&) -> std::shared_ptr<const Node> { return nullptr; }, binder_,
            scoring) {}

  std::map<std::string, ClaimPtr> claims_;
  DeviceIndex index_;
  FakeApiClient api_;
  Binder binder_;
  Extender extender_;
};

}  // namespace ker::testing

#pragma once

#include <string>

#include "common/api_client.h"
#include "controller/executor.h"
#include "controller/reconciler.h"
#include "model/resource_class.h"

namespace ker {

// Keeps the annotations of the Namespace the class admission policies read as their params
// (kClassParamsAnnotation, kPodsOnlyParamsAnnotation) equal to classParams(the classes). The
// Namespace is deployed with the policies and holds nothing; this only ever updates those two
// annotations of it, so the controller needs no right to create or change another Namespace.
class ClassParamsPublisher {
 public:
  // `ns`: the Namespace's name; "" publishes nothing. Writes only while `mayWrite`.
  ClassParamsPublisher(ApiClient& api, WriteGate mayWrite, std::string ns);

  // Reads the Namespace live and updates the annotations that differ (removes one with no
  // entries). A missing Namespace is a failure to retry (the policies then route
  // nothing and refuse no class), as is a lost race.
  ReconcileResult sync(const ClassTable& classes);

  static constexpr Millis kRecheck{std::chrono::minutes(1)};  // the done result's requeueAfter

 private:
  ApiClient& api_;
  WriteGate mayWrite_;
  const std::string ns_;
};

}  // namespace ker

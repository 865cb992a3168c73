#pragma once

#include <string>

#include "common/api_client.h"
#include "controller/executor.h"
#include "controller/reconciler.h"
#include "model/resource_class.h"

namespace ker {

// Keeps the annotation kClassParamsAnnotation of the Namespace the class admission policies read
// as their params equal to classParams(the classes). The Namespace is deployed with the policies
// and holds nothing; this only ever updates it (the one annotation, never its labels), so the
// controller needs no right to create or change any other Namespace.
class ClassParamsPublisher {
 public:
  // `ns`: the Namespace's name; "" publishes nothing. Writes only while `mayWrite`.
  ClassParamsPublisher(ApiClient& api, WriteGate mayWrite, std::string ns);

  // Reads the Namespace live and updates the annotation when it differs (removes it when no
  // class serves a name). A missing Namespace is a failure to retry (the policies then route
  // nothing and refuse no class), as is a lost race.
  ReconcileResult sync(const ClassTable& classes);

 private:
  ApiClient& api_;
  WriteGate mayWrite_;
  const std::string ns_;
};

}  // namespace ker

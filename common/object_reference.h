#pragma once

#include <string>

namespace ker {

// core/v1 ObjectReference: the object an event is about.
struct ObjectReference {
  std::string apiVersion;
  std::string kind;
  std::string ns;
  std::string name;
  std::string uid;
};

}  // namespace ker

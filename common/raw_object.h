#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ker {

// An object as last read from the API, kept so that a status write carries every field this
// code does not model. Held as compact JSON text without metadata.managedFields: a parsed
// DOM costs ~20x the text, and with tens of thousands of cached devices that was most of the
// extender's memory. managedFields is dropped because an update that omits it keeps the
// server's copy (the same reason client-go informers may strip it).
class RawObject {
 public:
  RawObject() = default;
  // Implicit, so a typed view can be given its raw form by assignment.
  RawObject(const nlohmann::json& obj);  // NOLINT(google-explicit-constructor)

  // The object; null when none was kept.
  nlohmann::json parse() const;
  bool empty() const { return text_.empty(); }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

}  // namespace ker

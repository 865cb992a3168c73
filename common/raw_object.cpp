#include "common/raw_object.h"

namespace ker {

namespace {

bool hasManagedFields(const nlohmann::json& obj) {
  if (!obj.is_object()) {
    return false;
  }
  auto meta = obj.find("metadata");
  return meta != obj.end() && meta->is_object() && meta->contains("managedFields");
}

}  // namespace

RawObject::RawObject(const nlohmann::json& obj) {
  if (obj.is_null()) {
    return;
  }
  if (!hasManagedFields(obj)) {
    text_ = obj.dump();
    return;
  }
  nlohmann::json copy = obj;
  copy["metadata"].erase("managedFields");
  text_ = copy.dump();
}

nlohmann::json RawObject::parse() const {
  return text_.empty() ? nlohmann::json() : nlohmann::json::parse(text_);
}

}  // namespace ker

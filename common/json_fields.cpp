#include "common/json_fields.h"

#include <limits>

#include "common/field_path.h"

namespace ker::fields {

using json = nlohmann::json;

void wrongType(const std::string& path, const char* want, const json& got) {
  failAt(path, std::string("expected ") + want + ", got " + got.type_name());
}

// A member of obj, or nullptr when it is absent or JSON null: the API server omits empty
// optional fields, and a client may send null for them, so both mean "not set".
const json* member(const json& obj, const char* key) {
  if (!obj.is_object()) {
    return nullptr;
  }
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    return nullptr;
  }
  return &*it;
}

// The object at obj[key], or nullptr when unset; throws when it is set but not an object.
const json* objectMember(const json& obj, const char* key, const std::string& path) {
  const json* v = member(obj, key);
  if (v && !v->is_object()) {
    wrongType(path, "an object", *v);
  }
  return v;
}

std::string stringMember(const json& obj, const char* key, const std::string& path) {
  const json* v = member(obj, key);
  if (!v) {
    return {};
  }
  if (!v->is_string()) {
    wrongType(path, "a string", *v);
  }
  return v->get<std::string>();
}

std::vector<std::string> stringList(const json& v, const std::string& path) {
  if (!v.is_array()) {
    wrongType(path, "an array of strings", v);
  }
  std::vector<std::string> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) {
      wrongType(indexPath(path, i), "a string", v[i]);
    }
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

std::vector<std::string> stringListMember(const json& obj, const char* key,
                                          const std::string& path) {
  const json* v = member(obj, key);
  return v ? stringList(*v, path) : std::vector<std::string>{};
}

// An integer of at least 0 at obj[key], 0 when unset; throws when it is set but not one.
int64_t countMember(const json& obj, const char* key, const std::string& path) {
  const json* v = member(obj, key);
  if (!v) {
    return 0;
  }
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      failAt(path, "out of range");
    }
  } else if (!v->is_number_integer()) {
    wrongType(path, "an integer", *v);
  } else if (v->get<int64_t>() < 0) {
    failAt(path, "must be at least 0");
  }
  return v->get<int64_t>();
}

std::map<std::string, std::string> stringMapMember(const json& obj, const char* key,
                                                   const std::string& path) {
  const json* v = objectMember(obj, key, path);
  std::map<std::string, std::string> out;
  if (!v) {
    return out;
  }
  for (const auto& [k, val] : v->items()) {
    if (!val.is_string()) {
      wrongType(childPath(path, k), "a string", val);
    }
    out.emplace(k, val.get<std::string>());
  }
  return out;
}

void setOrErase(json& obj, const char* key, const std::string& value) {
  if (value.empty()) {
    obj.erase(key);
  } else {
    obj[key] = value;
  }
}

}  // namespace ker::fields

#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

// Lenient reading of API objects' JSON fields, shared by the typed views of the Kubernetes kinds
// (common/kube_objects.h) and of this project's (model/objects.h). Each reader throws
// std::invalid_argument naming the field's path when the field is set but of the wrong shape.
namespace ker::fields {

[[noreturn]] void wrongType(const std::string& path, const char* want, const nlohmann::json& got);
// A member of obj, or nullptr when it is absent or JSON null: the API server omits empty
// optional fields, and a client may send null for them, so both mean "not set".
const nlohmann::json* member(const nlohmann::json& obj, const char* key);
// The object at obj[key], or nullptr when unset.
const nlohmann::json* objectMember(const nlohmann::json& obj, const char* key,
                                   const std::string& path);
std::string stringMember(const nlohmann::json& obj, const char* key, const std::string& path);
std::vector<std::string> stringList(const nlohmann::json& v, const std::string& path);
std::vector<std::string> stringListMember(const nlohmann::json& obj, const char* key,
                                          const std::string& path);
// An integer of at least 0 at obj[key], 0 when unset.
int64_t countMember(const nlohmann::json& obj, const char* key, const std::string& path);
std::map<std::string, std::string> stringMapMember(const nlohmann::json& obj, const char* key,
                                                   const std::string& path);
// obj[key] = value, or no key when value is empty.
void setOrErase(nlohmann::json& obj, const char* key, const std::string& value);

// Collects the reasons an object is malformed while parsing goes on, so one bad field does not
// hide the object's name or the other fields.
class Problems {
 public:
  template <typename F>
  void check(F&& parse) {
    try {
      parse();
    } catch (const std::invalid_argument& e) {
      add(e.what());
    } catch (const nlohmann::json::exception& e) {
      add(e.what());
    }
  }
  void add(const std::string& why) { text_ += (text_.empty() ? "" : "; ") + why; }
  bool empty() const { return text_.empty(); }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

}  // namespace ker::fields

#include "model/condition.h"

#include <array>
#include <string_view>

namespace ker {

namespace {

using json = nlohmann::json;

constexpr std::array kTypes{ConditionType::kAllocated, ConditionType::kLost,
                            ConditionType::kHealthy};
constexpr std::array kStatuses{ConditionStatus::kTrue, ConditionStatus::kFalse,
                               ConditionStatus::kUnknown};
template <typename E, size_t N>
std::optional<E> parse(const std::array<E, N>& known, std::string_view text) {
  for (E e : known) {
    if (text == toString(e)) {
      return e;
    }
  }
  return std::nullopt;
}

std::string stringOf(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool isOurs(const json& entry) {
  return parse(kTypes, stringOf(entry, "type")).has_value();
}

}  // namespace

const char* toString(ConditionType type) {
  switch (type) {
    case ConditionType::kAllocated:
      return "Allocated";
    case ConditionType::kLost:
      return "Lost";
    case ConditionType::kHealthy:
      return "Healthy";
  }
  return "";
}

const char* toString(ConditionStatus status) {
  switch (status) {
    case ConditionStatus::kTrue:
      return "True";
    case ConditionStatus::kFalse:
      return "False";
    case ConditionStatus::kUnknown:
      return "Unknown";
  }
  return "";
}

std::vector<Condition> readConditions(const json& status) {
  std::vector<Condition> out;
  auto list = status.is_object() ? status.find("conditions") : status.end();
  if (!status.is_object() || list == status.end() || !list->is_array()) {
    return out;
  }
  for (const json& entry : *list) {
    if (!entry.is_object()) {
      continue;
    }
    auto type = parse(kTypes, stringOf(entry, "type"));
    auto st = parse(kStatuses, stringOf(entry, "status"));
    if (!type || !st || findCondition(out, *type)) {
      continue;
    }
    Condition c{*type, *st, parseReason(stringOf(entry, "reason")), stringOf(entry, "message"),
                stringOf(entry, "lastTransitionTime")};
    if (auto g = entry.find("observedGeneration"); g != entry.end() && g->is_number_integer()) {
      c.observedGeneration = g->get<int64_t>();
    }
    out.push_back(std::move(c));
  }
  return out;
}

void writeConditions(json& status, const std::vector<Condition>& ours) {
  json list = json::array();
  for (const Condition& c : ours) {
    json entry{{"type", toString(c.type)},
               {"status", toString(c.status)},
               {"reason", toString(c.reason)},
               {"message", c.message},
               {"lastTransitionTime", c.lastTransitionTime}};
    if (c.observedGeneration > 0) {
      entry["observedGeneration"] = c.observedGeneration;
    }
    list.push_back(std::move(entry));
  }
  if (auto old = status.find("conditions"); old != status.end() && old->is_array()) {
    for (const json& entry : *old) {
      if (entry.is_object() && !isOurs(entry)) {
        list.push_back(entry);
      }
    }
  }
  if (list.empty()) {
    status.erase("conditions");
  } else {
    status["conditions"] = std::move(list);
  }
}

const Condition* findCondition(const std::vector<Condition>& conditions, ConditionType type) {
  for (const Condition& c : conditions) {
    if (c.type == type) {
      return &c;
    }
  }
  return nullptr;
}

}  // namespace ker

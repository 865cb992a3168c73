#include "scheduler/preemption/disruption_budget.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "common/label_selector.h"

namespace ker {

namespace {

const nlohmann::json* member(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) {
    return nullptr;
  }
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

PodDisruptionBudget PodDisruptionBudget::fromJson(const nlohmann::json& obj) {
  PodDisruptionBudget pdb;
  if (!obj.is_object()) {
    pdb.invalid = std::string("expected a JSON object, got ") + obj.type_name();
    return pdb;
  }
  try {
    if (const auto* m = member(obj, "metadata")) {
      pdb.meta = parseObjectMeta(*m);
    }
    const auto* spec = member(obj, "spec");
    if (const auto* s = spec ? member(*spec, "selector") : nullptr) {
      pdb.selector = parseLabelSelector(*s);
      pdb.selectsNothing =
          (pdb.selector.matchLabels.empty() && pdb.selector.matchExpressions.empty()) ||
          !validate(pdb.selector).ok();
    }
    if (const auto* status = member(obj, "status")) {
      if (const auto* v = member(*status, "disruptionsAllowed"); v && v->is_number_integer()) {
        pdb.disruptionsAllowed = static_cast<int32_t>(
            std::clamp<int64_t>(v->get<int64_t>(), std::numeric_limits<int32_t>::min(),
                                std::numeric_limits<int32_t>::max()));
      }
      if (const auto* d = member(*status, "disruptedPods"); d && d->is_object()) {
        for (auto it = d->begin(); it != d->end(); ++it) {
          pdb.disruptedPods.insert(it.key());
        }
      }
    }
  } catch (const std::exception& e) {
    pdb.invalid = e.what();
    pdb.selectsNothing = true;
  }
  return pdb;
}

}  // namespace ker

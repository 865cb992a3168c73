#include "controller/write_request.h"

#include "model/condition.h"

namespace ker {

namespace {

template <typename Object>
WriteRequest render(const WholeStatus<Object>& whole, const StatusWrite& w) {
  return {false, "status", whole.next.toJson(w.now)};
}

// The mark, or both fields as the clearing leaves them, with its phase (markInvalid); the
// initial phase when the object has no phase yet.
template <typename Object>
WriteRequest render(const InvalidMarkPatch<Object>& mark, const StatusWrite& w) {
  const Object& next = mark.next;
  // Cleared, both go (null), unless the clearing left a reason of its own (markInvalid).
  const auto orNull = [](const std::string& v) {
    return v.empty() ? nlohmann::json() : nlohmann::json(v);
  };
  nlohmann::json status = {{"reason", orNull(next.reason)}, {"message", orNull(next.message)}};
  if (mark.phaseChanged || (!next.invalid.empty() && !next.phaseWritten)) {
    status["phase"] = toString(next.phase);
  }
  // A merge patch replaces the whole list: the conditions of others are written back as read.
  const nlohmann::json raw = next.raw.parse();
  nlohmann::json list = nlohmann::json::object();
  if (auto st = raw.is_object() ? raw.find("status") : raw.end();
      raw.is_object() && st != raw.end() && st->is_object() && st->contains("conditions")) {
    list["conditions"] = st->at("conditions");
  }
  writeConditions(list, writtenConditions(w));
  status["conditions"] = std::move(list["conditions"]);
  return {true,
          "status",
          {{"metadata", {{"resourceVersion", next.meta.resourceVersion}}},
           {"status", std::move(status)}}};
}

WriteRequest render(const FinalizersPatch& patch, const StatusWrite&) {
  return {true,
          "",
          {{"metadata",
            {{"resourceVersion", patch.resourceVersion}, {"finalizers", patch.finalizers}}}}};
}

}  // namespace

WriteRequest renderWrite(const StatusWrite& w) {
  return std::visit([&](const auto& content) { return render(content, w); }, w.content);
}

}  // namespace ker

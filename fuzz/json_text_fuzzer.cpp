// libFuzzer target: the extender's hand-written JSON reader and string writer against
// nlohmann::json, which they promise to agree with. JsonReader must accept exactly what
// nlohmann::json::parse accepts (short of its own nesting bound), and appendJsonString must
// write what nlohmann::json::dump writes for UTF-8 text, and valid JSON for any bytes.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "scheduler/wire/extender_wire.h"
#include "scheduler/wire/json_text.h"

namespace {

using nlohmann::json;

constexpr int kMaxDepth = 64;

[[noreturn]] void disagree(const char* what, std::string_view detail) {
  std::fprintf(stderr, "%s: %.*s\n", what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}

void checkReader(std::string_view input) {
  bool accepted = false;
  bool tooDeep = false;
  std::string error;
  try {
    ker::JsonReader reader(input, kMaxDepth);
    const std::string_view value = reader.skip();
    reader.finish();
    accepted = true;
    // The value's bytes are the input without its surrounding whitespace (and a leading
    // byte order mark, which nlohmann skips too).
    const std::string_view text = input.starts_with("\xEF\xBB\xBF") ? input.substr(3) : input;
    const size_t begin = text.find_first_not_of(" \t\r\n");
    const size_t end = text.find_last_not_of(" \t\r\n");
    if (value != text.substr(begin, end - begin + 1)) {
      disagree("skip() returned other bytes than the value", value);
    }
  } catch (const ker::WireError& e) {
    error = e.what();
    tooDeep = error.rfind("JSON nested deeper than", 0) == 0;
    if (!tooDeep && error.rfind("malformed JSON: ", 0) != 0) {
      disagree("unexpected error message", error);
    }
  }
  if (tooDeep) {
    return;  // nlohmann's parser keeps its own stack, so it takes any depth
  }
  // A raw NUL is never valid JSON (Go rejects it too), but nlohmann reads it as the end of
  // the input and so accepts a valid value followed by NUL and anything at all.
  const bool valid =
      input.find('\0') == std::string_view::npos && json::accept(input.begin(), input.end());
  if (accepted != valid) {
    disagree(accepted ? "JsonReader accepts what nlohmann rejects"
                      : "JsonReader rejects what nlohmann accepts",
             error);
  }
}

void checkStringWriter(std::string_view input) {
  std::string written;
  ker::appendJsonString(written, input);
  std::string expected;
  try {
    expected = json(std::string(input)).dump();
  } catch (const json::type_error&) {
    // Not UTF-8: the writer replaces bad bytes one by one, as Go does, where nlohmann
    // replaces a truncated sequence at once; only require a string any parser accepts.
    if (!json::accept(written) || !json::parse(written).is_string()) {
      disagree("appendJsonString wrote invalid JSON", written);
    }
    return;
  }
  if (written != expected) {
    disagree("appendJsonString differs from nlohmann::json::dump", written);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  checkReader(input);
  checkStringWriter(input);
  return 0;
}

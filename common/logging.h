#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

// Process-wide logging over spdlog. After init(), spdlog's default logger uses the same sink
// and format, so spdlog::info(...) elsewhere lands in the same stream.
//
//   ker::log::init(ker::log::Format::kJson, 2);
//   ker::log::info("bound pod", {{"pod", key}, {"node", node}});
//   if (ker::log::v(4)) ker::log::info("cache state", {{"items", n}});
//
// Text lines are klog-like: `I0102 15:04:05.123456 4242] bound pod pod="ns/p" node="n1"`.
// JSON lines are one object each: {"ts":"2024-01-02T15:04:05.123456Z","level":"info",
// "msg":"bound pod","pod":"ns/p","node":"n1"}.
namespace ker::log {

enum class Format { kText, kJson };

// "text" or "json"; nullopt for anything else.
std::optional<Format> parseFormat(std::string_view name);
// The inverse: "text" or "json".
const char* formatName(Format format);

// Safe to call again (e.g. tests); out == nullptr means stderr. verbosity is klog's -v: info
// is always on, v(n) is true for n <= verbosity, and spdlog's debug (trace) level is enabled
// from verbosity 4 (6).
void init(Format format, int verbosity, std::ostream* out = nullptr);

bool v(int level);
int verbosity();

// One structured key/value; the value is anything nlohmann::json accepts.
struct Field {
  template <class T>
  Field(std::string_view k, T&& v) : key(k), value(std::forward<T>(v)) {}
  std::string key;
  nlohmann::json value;
};
using Fields = std::initializer_list<Field>;

// Keys that clash with ts, level or msg are dropped from JSON lines.
void info(std::string_view msg, Fields fields = {});
void warn(std::string_view msg, Fields fields = {});
void error(std::string_view msg, Fields fields = {});

}  // namespace ker::log

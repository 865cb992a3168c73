#include "common/logging.h"

#include <spdlog/formatter.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "common/api_time.h"

namespace ker::log {

namespace {

std::atomic<int> gVerbosity{0};
std::atomic<bool> gInitialized{false};

// Fields of the record being logged on this thread. spdlog's synchronous loggers format on
// the calling thread, so the formatter can read them without changing spdlog's message type.
thread_local const Fields* tFields = nullptr;

void appendEscaped(std::string& out, std::string_view s) {
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
}

std::string dumpJson(const nlohmann::ordered_json& j) {
  // Replace invalid UTF-8 instead of throwing: a log line must never fail.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

class Formatter : public spdlog::formatter {
 public:
  explicit Formatter(Format format) : format_(format) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    std::string line = format_ == Format::kJson ? json(msg) : text(msg);
    line += '\n';
    dest.append(line.data(), line.data() + line.size());
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<Formatter>(format_);
  }

 private:
  static std::string text(const spdlog::details::log_msg& msg) {
    using namespace std::chrono;
    const auto since = msg.time.time_since_epoch();
    const std::time_t secs = duration_cast<seconds>(since).count();
    const auto micros = duration_cast<microseconds>(since).count() % 1000000;
    std::tm tm{};
    localtime_r(&secs, &tm);
    char head[64];
    std::snprintf(head, sizeof head, "%c%02d%02d %02d:%02d:%02d.%06lld %7zu] ",
                  spdlog::level::to_short_c_str(msg.level)[0], tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(micros), msg.thread_id);
    std::string out = head;
    appendEscaped(out, std::string_view(msg.payload.data(), msg.payload.size()));
    if (tFields != nullptr) {
      for (const Field& f : *tFields) {
        out += ' ';
        out += f.key;
        out += '=';
        // Strings are quoted and escaped so a value cannot forge a key or a new line.
        out += f.value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      }
    }
    return out;
  }

  static std::string json(const spdlog::details::log_msg& msg) {
    const auto level = spdlog::level::to_string_view(msg.level);
    nlohmann::ordered_json j;
    j["ts"] = formatMicroTime(
        std::chrono::time_point_cast<std::chrono::system_clock::duration>(msg.time));
    j["level"] = std::string(level.data(), level.size());
    j["msg"] = std::string(msg.payload.data(), msg.payload.size());
    if (tFields != nullptr) {
      for (const Field& f : *tFields) {
        j.emplace(f.key, f.value);
      }
    }
    return dumpJson(j);
  }

  Format format_;
};

std::shared_ptr<spdlog::logger> logger() {
  if (!gInitialized.load(std::memory_order_acquire)) {
    static std::once_flag once;
    std::call_once(once, [] {
      if (!gInitialized.load()) {
        init(Format::kText, 0);
      }
    });
  }
  return spdlog::default_logger();
}

void write(spdlog::level::level_enum level, std::string_view msg, Fields fields) {
  auto l = logger();
  if (!l->should_log(level)) {
    return;
  }
  tFields = &fields;
  l->log(level, spdlog::string_view_t(msg.data(), msg.size()));
  tFields = nullptr;
}

}  // namespace

std::optional<Format> parseFormat(std::string_view name) {
  for (Format f : {Format::kText, Format::kJson}) {
    if (name == formatName(f)) {
      return f;
    }
  }
  return std::nullopt;
}

const char* formatName(Format format) {
  return format == Format::kJson ? "json" : "text";
}

void init(Format format, int verbosity, std::ostream* out) {
  spdlog::sink_ptr sink;
  if (out != nullptr) {
    sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(*out, true);
  } else {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  }
  sink->set_formatter(std::make_unique<Formatter>(format));
  auto l = std::make_shared<spdlog::logger>("ker", std::move(sink));
  l->set_level(verbosity >= 6   ? spdlog::level::trace
               : verbosity >= 4 ? spdlog::level::debug
                                : spdlog::level::info);
  l->flush_on(spdlog::level::info);
  gVerbosity.store(verbosity);
  spdlog::set_default_logger(std::move(l));
  gInitialized.store(true, std::memory_order_release);
}

bool v(int level) {
  return level <= gVerbosity.load(std::memory_order_relaxed);
}

int verbosity() {
  return gVerbosity.load(std::memory_order_relaxed);
}

void info(std::string_view msg, Fields fields) {
  write(spdlog::level::info, msg, fields);
}
void warn(std::string_view msg, Fields fields) {
  write(spdlog::level::warn, msg, fields);
}
void error(std::string_view msg, Fields fields) {
  write(spdlog::level::err, msg, fields);
}

}  // namespace ker::log

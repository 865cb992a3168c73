#include "common/flags.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <variant>

#include "common/status.h"

namespace ker {

namespace {

struct Unit {
  std::string_view suffix;
  double ms;
};
// Longest suffix first so "ms" is not read as "m" followed by garbage.
constexpr Unit kUnits[] = {{"ms", 1}, {"h", 3600000}, {"m", 60000}, {"s", 1000}};

bool parseDouble(std::string_view text, double& out) {
  if (text.empty()) {
    return false;
  }
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && std::isfinite(out);
}

}  // namespace

std::optional<std::chrono::milliseconds> parseDuration(std::string_view text) {
  if (text == "0") {
    return std::chrono::milliseconds(0);
  }
  if (text.empty()) {
    return std::nullopt;
  }
  double total = 0;
  while (!text.empty()) {
    size_t numLen = 0;
    while (numLen < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[numLen])) || text[numLen] == '.')) {
      ++numLen;
    }
    double value = 0;
    if (!parseDouble(text.substr(0, numLen), value)) {
      return std::nullopt;
    }
    text.remove_prefix(numLen);
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits) {
      if (text.starts_with(u.suffix)) {
        unit = &u;
        break;
      }
    }
    if (unit == nullptr) {
      return std::nullopt;
    }
    text.remove_prefix(unit->suffix.size());
    total += value * unit->ms;
  }
  // Bounded well below the int64 range so the cast below cannot overflow.
  if (total > 9e15) {
    return std::nullopt;
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(total)));
}

std::string formatDuration(std::chrono::milliseconds d) {
  int64_t ms = d.count();
  if (ms == 0) {
    return "0s";
  }
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  if (ms < 1000) {
    return out + std::to_string(ms) + "ms";
  }
  const int64_t h = ms / 3600000;
  const int64_t m = ms / 60000 % 60;
  const int64_t s = ms / 1000 % 60;
  const int64_t frac = ms % 1000;
  if (h > 0) {
    out += std::to_string(h) + "h";
  }
  if (m > 0) {
    out += std::to_string(m) + "m";
  }
  if (s > 0 || frac > 0) {
    out += std::to_string(s);
    if (frac > 0) {
      char buf[8];
      std::snprintf(buf, sizeof buf, ".%03d", static_cast<int>(frac));
      std::string f = buf;
      while (f.back() == '0') {
        f.pop_back();
      }
      out += f;
    }
    out += "s";
  }
  return out;
}

void FlagParseResult::print() const {
  std::FILE* out = status == kError ? stderr : stdout;
  std::fputs(message.c_str(), out);
  if (!message.empty() && message.back() != '\n') {
    std::fputc('\n', out);
  }
}

struct FlagSet::Flag {
  std::string name;
  std::string help;
  std::variant<std::string, int64_t, bool, double, std::chrono::milliseconds> value;
  std::string defaultText;
  std::vector<std::string> aliases;
  bool set = false;

  bool isBool() const { return std::holds_alternative<bool>(value); }

  const char* typeName() const {
    static constexpr const char* kNames[] = {"string", "int", "", "float", "duration"};
    return kNames[value.index()];
  }

  std::string render() const {
    return std::visit(
        [](const auto& v) -> std::string {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::string>) {
            return "\"" + v + "\"";
          } else if constexpr (std::is_same_v<V, bool>) {
            return v ? "true" : "false";
          } else if constexpr (std::is_same_v<V, double>) {
            char buf[32];
            auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
            return std::string(buf, end);
          } else if constexpr (std::is_same_v<V, std::chrono::milliseconds>) {
            return formatDuration(v);
          } else {
            return std::to_string(v);
          }
        },
        value);
  }

  // Sets the value from its text; kInvalid saying what was expected when it does not parse.
  Status assign(std::string_view text) {
    Status error;
    std::visit(
        [&](auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::string>) {
            v = std::string(text);
          } else if constexpr (std::is_same_v<V, bool>) {
            if (text == "true" || text == "1") {
              v = true;
            } else if (text == "false" || text == "0") {
              v = false;
            } else {
              error = Status::invalid("expected true or false");
            }
          } else if constexpr (std::is_same_v<V, int64_t>) {
            int64_t parsed = 0;
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
            if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
              error = Status::invalid(ec == std::errc::result_out_of_range ? "integer out of range"
                                                                           : "expected an integer");
            } else {
              v = parsed;
            }
          } else if constexpr (std::is_same_v<V, double>) {
            double parsed = 0;
            if (!parseDouble(text, parsed)) {
              error = Status::invalid("expected a number");
            } else {
              v = parsed;
            }
          } else {
            auto parsed = parseDuration(text);
            if (!parsed) {
              error = Status::invalid("expected a duration such as 30s, 2m, 1h30m, 250ms");
            } else {
              v = *parsed;
            }
          }
        },
        value);
    return error;
  }
};

FlagSet::FlagSet(std::string program, std::string description)
    : program_(std::move(program)), description_(std::move(description)) {}

FlagSet::~FlagSet() = default;

namespace {

void checkNewName(const std::string& name, bool taken) {
  const bool valid =
      !name.empty() && name[0] != '-' && name != "help" &&
      std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
      });
  if (!valid) {
    throw std::logic_error("invalid flag name: \"" + name + "\"");
  }
  if (taken) {
    throw std::logic_error("flag declared twice: --" + name);
  }
}

}  // namespace

void FlagSet::addAlias(const std::string& alias, const std::string& target) {
  checkNewName(alias, find(alias) != nullptr);
  Flag* f = find(target);
  if (f == nullptr) {
    throw std::logic_error("alias --" + alias + " of an undeclared flag --" + target);
  }
  f->aliases.push_back(alias);
}

FlagSet::Flag& FlagSet::add(const std::string& name, const std::string& help) {
  checkNewName(name, find(name) != nullptr);
  flags_.push_back(std::make_unique<Flag>());
  Flag& f = *flags_.back();
  f.name = name;
  f.help = help;
  return f;
}

FlagSet::Flag* FlagSet::find(std::string_view name) const {
  for (const auto& f : flags_) {
    if (f->name == name ||
        std::find(f->aliases.begin(), f->aliases.end(), name) != f->aliases.end()) {
      return f.get();
    }
  }
  return nullptr;
}

std::string* FlagSet::addString(const std::string& name, std::string def, const std::string& help) {
  Flag& f = add(name, help);
  f.value = std::move(def);
  f.defaultText = f.render();
  return &std::get<std::string>(f.value);
}

int64_t* FlagSet::addInt(const std::string& name, int64_t def, const std::string& help) {
  Flag& f = add(name, help);
  f.value = def;
  f.defaultText = f.render();
  return &std::get<int64_t>(f.value);
}

bool* FlagSet::addBool(const std::string& name, bool def, const std::string& help) {
  Flag& f = add(name, help);
  f.value = def;
  f.defaultText = f.render();
  return &std::get<bool>(f.value);
}

double* FlagSet::addDouble(const std::string& name, double def, const std::string& help) {
  Flag& f = add(name, help);
  f.value = def;
  f.defaultText = f.render();
  return &std::get<double>(f.value);
}

std::chrono::milliseconds* FlagSet::addDuration(const std::string& name,
                                                std::chrono::milliseconds def,
                                                const std::string& help) {
  Flag& f = add(name, help);
  f.value = def;
  f.defaultText = f.render();
  return &std::get<std::chrono::milliseconds>(f.value);
}

FlagParseResult FlagSet::parse(int argc, const char* const* argv) {
  const std::string hint = "Run '" + program_ + " --help' for usage.\n";
  auto fail = [&](const std::string& what) {
    return FlagParseResult{FlagParseResult::kError, program_ + ": " + what + "\n" + hint};
  };
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") {
      if (i + 1 < argc) {
        return fail("unexpected argument \"" + std::string(argv[i + 1]) + "\"");
      }
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      // No command takes arguments, so a stray word is a mistake: most often the value of a
      // boolean written as a separate word, which would otherwise be silently dropped.
      return fail("unexpected argument \"" + std::string(arg) +
                  "\" (a boolean takes its value as --flag=false)");
    }
    arg.remove_prefix(arg[1] == '-' ? 2 : 1);
    std::string_view name = arg;
    std::optional<std::string_view> value;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    if (name == "help" || name == "h") {
      return FlagParseResult{FlagParseResult::kHelp, usage()};
    }
    Flag* f = find(name);
    if (f == nullptr) {
      return fail("unknown flag --" + std::string(name));
    }
    if (!value) {
      if (f->isBool()) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return fail("flag --" + std::string(name) + " needs a value");
      }
    }
    if (Status err = f->assign(*value); !err.ok()) {
      // Named as typed: an alias is what the user wrote.
      return fail("invalid value \"" + std::string(*value) + "\" for --" + std::string(name) +
                  ": " + err.message());
    }
    f->set = true;
  }
  return {};
}

bool FlagSet::isSet(const std::string& name) const {
  const Flag* f = find(name);
  return f != nullptr && f->set;
}

std::string FlagSet::usage() const {
  std::string out = "Usage: " + program_ + " [flags]\n";
  if (!description_.empty()) {
    out += "\n" + description_ + "\n";
  }
  out += "\nFlags:\n";
  std::vector<std::string> heads;
  const std::string helpHead = "  --help";
  size_t width = helpHead.size();
  for (const auto& f : flags_) {
    std::string head = "  --" + f->name;
    if (!f->isBool()) {
      head += std::string(" ") + f->typeName();
    }
    width = std::max(width, head.size());
    heads.push_back(std::move(head));
  }
  for (size_t i = 0; i < flags_.size(); ++i) {
    const Flag& f = *flags_[i];
    out += heads[i] + std::string(width - heads[i].size() + 3, ' ') + f.help;
    for (const auto& alias : f.aliases) {
      out += " (also --" + alias + ")";
    }
    // Zero values are not worth a "(default ...)" note, as in Go's flag package.
    if (f.defaultText != "\"\"" && f.defaultText != "false" && f.defaultText != "0" &&
        f.defaultText != "0s") {
      out += " (default " + f.defaultText + ")";
    }
    out += "\n";
  }
  out += helpHead + std::string(width - helpHead.size() + 3, ' ') + "show this help and exit\n";
  return out;
}

}  // namespace ker

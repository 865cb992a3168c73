#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ker {

// Go-style duration text: a sequence of decimal numbers with units ms, s, m, h ("30s", "2m",
// "1h30m", "1.5s", "250ms"); a bare "0" is zero. Sub-millisecond remainders are rounded.
std::optional<std::chrono::milliseconds> parseDuration(std::string_view text);
// The inverse, shortest form: "0s", "250ms", "1.5s", "2m", "1h30m".
std::string formatDuration(std::chrono::milliseconds d);

// Outcome of FlagSet::parse. The library never prints or exits by itself; the binary does
//   if (auto r = flags.parse(argc, argv); r.status != FlagParseResult::kOk) {
//     r.print();
//     return r.exitCode();
//   }
struct FlagParseResult {
  enum Status { kOk, kHelp, kError };
  Status status = kOk;
  std::string message;  // usage text for kHelp; the error and a hint for kError

  // 0 for kOk and kHelp, 2 for kError (the conventional usage-error code).
  int exitCode() const { return status == kError ? 2 : 0; }
  // Usage goes to stdout (it was asked for), errors to stderr.
  void print() const;
};

// A small command-line parser: `--name=value`, `--name value`, a single leading dash works too;
// booleans accept `--flag` and `--flag=true|false` (a separate word is never consumed, as in
// Go); `--` ends flag parsing. No command takes positional arguments, so any is an error.
// The add* methods return a pointer to the value, valid for the FlagSet's lifetime, holding
// the default until parse() overwrites it.
class FlagSet {
 public:
  FlagSet(std::string program, std::string description);
  ~FlagSet();
  FlagSet(const FlagSet&) = delete;
  FlagSet& operator=(const FlagSet&) = delete;

  // Throw std::logic_error on a duplicate or malformed name (a programming error).
  std::string* addString(const std::string& name, std::string def, const std::string& help);
  int64_t* addInt(const std::string& name, int64_t def, const std::string& help);
  bool* addBool(const std::string& name, bool def, const std::string& help);
  double* addDouble(const std::string& name, double def, const std::string& help);
  std::chrono::milliseconds* addDuration(const std::string& name, std::chrono::milliseconds def,
                                         const std::string& help);

  // Another name for a declared flag (the name other components use for the same setting);
  // usage lists it beside the flag. Throws std::logic_error as the add* methods do, or when
  // the target is not declared.
  void addAlias(const std::string& alias, const std::string& target);

  FlagParseResult parse(int argc, const char* const* argv);

  // Whether the flag appeared on the command line (as opposed to holding its default).
  bool isSet(const std::string& name) const;
  std::string usage() const;

 private:
  struct Flag;
  Flag& add(const std::string& name, const std::string& help);
  Flag* find(std::string_view name) const;

  std::string program_;
  std::string description_;
  std::vector<std::unique_ptr<Flag>> flags_;  // declaration order, used by usage()
};

}  // namespace ker

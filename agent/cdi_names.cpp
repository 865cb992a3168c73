#include "agent/cdi_names.h"

#include <cctype>

namespace ker::agent {

namespace {

bool alnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

// `what "text"`, or `"text"` without a what. Built by appending: GCC 12 warns (-Wrestrict)
// wrongly on a literal added to a temporary string.
std::string quote(std::string_view what, std::string_view text) {
  std::string out(what);
  out.append(what.empty() ? "\"" : " \"").append(text).append("\"");
  return out;
}

// The rule vendor, class and device names share, with their own first-character test and
// extra characters.
std::string nameProblem(std::string_view what, std::string_view name, bool letterFirst,
                        std::string_view extra) {
  if (name.empty()) {
    return std::string(what).append(" is empty");
  }
  const std::string quoted = quote(what, name);
  const char first = name.front();
  if (letterFirst ? std::isalpha(static_cast<unsigned char>(first)) == 0 : !alnum(first)) {
    return quoted +
           (letterFirst ? " must start with a letter" : " must start with a letter or digit");
  }
  if (!alnum(name.back())) {
    return quoted + " must end with a letter or digit";
  }
  for (char c : name) {
    if (!alnum(c) && extra.find(c) == std::string_view::npos) {
      std::string out = quoted + " has '";
      out.push_back(c);
      return out.append("', not a letter, digit or one of ").append(extra);
    }
  }
  return {};
}

}  // namespace

std::string cdiKindProblem(std::string_view kind) {
  const size_t slash = kind.find('/');
  if (slash == std::string_view::npos) {
    return quote("kind", kind) + " is not vendor/class";
  }
  if (auto p = nameProblem("vendor", kind.substr(0, slash), true, "_-."); !p.empty()) {
    return p;
  }
  return nameProblem("class", kind.substr(slash + 1), true, "_-.");
}

std::string cdiDeviceNameProblem(std::string_view name) {
  return nameProblem("device name", name, false, "_-.:");
}

std::string cdiQualifiedNameProblem(std::string_view qualified) {
  const size_t eq = qualified.find('=');
  if (eq == std::string_view::npos) {
    return quote("", qualified) + " is not vendor/class=name";
  }
  if (auto p = cdiKindProblem(qualified.substr(0, eq)); !p.empty()) {
    return p;
  }
  return cdiDeviceNameProblem(qualified.substr(eq + 1));
}

}  // namespace ker::agent

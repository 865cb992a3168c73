#pragma once

#include <string>
#include <string_view>

// Container Device Interface names, as the CDI specification defines them: a device is named
// "vendor/class=name" (nvidia.com/gpu=GPU-6f1e…), its spec's kind is "vendor/class".
namespace ker::agent {

// "" when `kind` is a valid "vendor/class", else why not. The vendor and class start with a
// letter, end with a letter or digit, and hold letters, digits, '_', '-' and '.'.
std::string cdiKindProblem(std::string_view kind);
// "" when `name` is a valid device name (a spec's devices[].name): letters, digits, '_', '-',
// '.' and ':', starting and ending with a letter or digit; else why not.
std::string cdiDeviceNameProblem(std::string_view name);
// "" when `qualified` is "vendor/class=name" with each part valid, else why not.
std::string cdiQualifiedNameProblem(std::string_view qualified);

}  // namespace ker::agent

#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace ker::testing {

inline std::string readTestdata(const std::string& name) {
  std::ifstream in(std::string(KER_TESTDATA_DIR) + "/" + name, std::ios::binary);
  if (!in) {
    throw std::runtime_error("missing testdata " + name);
  }
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace ker::testing

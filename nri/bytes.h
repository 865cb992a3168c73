#pragma once

#include <cstdint>
#include <string>

namespace ker::nri {

// Big-endian uint32, the byte order of both the mux and the ttrpc headers.
inline void appendBigEndian32(uint32_t v, std::string* out) {
  out->push_back(static_cast<char>(v >> 24));
  out->push_back(static_cast<char>(v >> 16));
  out->push_back(static_cast<char>(v >> 8));
  out->push_back(static_cast<char>(v));
}

inline uint32_t readBigEndian32(const char* p) {
  auto b = [p](int i) { return static_cast<uint32_t>(static_cast<unsigned char>(p[i])); };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

}  // namespace ker::nri

#include "common/utf8.h"

namespace ker {

namespace {

// The length of the valid UTF-8 sequence at text[i], or 0 when none starts there.
size_t sequenceAt(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) {
    return 1;
  }
  size_t len = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    lo = b0 == 0xE0 ? 0xA0 : 0x80;  // no overlong forms
    hi = b0 == 0xED ? 0x9F : 0xBF;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    lo = b0 == 0xF0 ? 0x90 : 0x80;  // no overlong forms
    hi = b0 == 0xF4 ? 0x8F : 0xBF;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  if (i + len > text.size() || byte(i + 1) < lo || byte(i + 1) > hi) {
    return 0;
  }
  for (size_t k = 2; k < len; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) {
      return 0;
    }
  }
  return len;
}

}  // namespace

std::optional<size_t> firstInvalidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t len = sequenceAt(text, i);
    if (len == 0) {
      return i;
    }
    i += len;
  }
  return std::nullopt;
}

std::string clippedUtf8(std::string_view text, size_t maxBytes) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const size_t len = sequenceAt(text, i);
    const std::string_view piece = len == 0 ? kReplacement : text.substr(i, len);
    if (out.size() + piece.size() > maxBytes) {
      break;
    }
    out += piece;
    i += len == 0 ? 1 : len;
  }
  return out;
}

}  // namespace ker

#include "scheduler/wire/json_text.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "scheduler/wire/extender_wire.h"

namespace ker {

namespace {

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

bool isSpace(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

void appendUtf8(std::string& out, unsigned cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Length of the well-formed UTF-8 sequence (RFC 3629: no overlongs, no surrogates, nothing
// above U+10FFFF) starting at s[i] >= 0x80, or 0 when there is none.
size_t utf8Length(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) {
    return at(k) >= lo && at(k) <= hi;
  };
  const unsigned c = at(0);
  if (c >= 0xC2 && c <= 0xDF) {
    return cont(1) ? 2 : 0;
  }
  if (c >= 0xE0 && c <= 0xEF) {
    const unsigned lo = c == 0xE0 ? 0xA0 : 0x80;
    const unsigned hi = c == 0xED ? 0x9F : 0xBF;
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const unsigned lo = c == 0xF0 ? 0x90 : 0x80;
    const unsigned hi = c == 0xF4 ? 0x8F : 0xBF;
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

}  // namespace

JsonReader::JsonReader(std::string_view text, int maxDepth) : text_(text), maxDepth_(maxDepth) {
  // nlohmann::json::parse skips a byte order mark; so does this reader.
  if (text_.starts_with("\xEF\xBB\xBF")) {
    pos_ = 3;
  }
}

void JsonReader::fail(const std::string& what) const {
  throw WireError("malformed JSON: " + what + " at byte " + std::to_string(pos_));
}

void JsonReader::space() {
  while (pos_ < text_.size() && isSpace(text_[pos_])) {
    ++pos_;
  }
}

void JsonReader::expect(char c) {
  space();
  if (pos_ >= text_.size()) {
    fail(std::string("expected '") + c + "', got the end of the input");
  }
  if (text_[pos_] != c) {
    fail(std::string("expected '") + c + "'");
  }
  ++pos_;
}

JsonReader::Kind JsonReader::peek() {
  space();
  if (pos_ >= text_.size()) {
    fail("expected a value, got the end of the input");
  }
  switch (text_[pos_]) {
    case '{':
      return Kind::kObject;
    case '[':
      return Kind::kArray;
    case '"':
      return Kind::kString;
    case 't':
    case 'f':
      return Kind::kBool;
    case 'n':
      return Kind::kNull;
    default:
      if (text_[pos_] == '-' || isDigit(text_[pos_])) {
        return Kind::kNumber;
      }
      fail("expected a value");
  }
}

void JsonReader::open(char c) {
  expect(c);
  if (++depth_ > maxDepth_) {
    throw WireError("JSON nested deeper than " + std::to_string(maxDepth_) + " levels");
  }
  started_.push_back(false);
}

void JsonReader::openObject() {
  open('{');
}

void JsonReader::openArray() {
  open('[');
}

bool JsonReader::more(char close) {
  space();
  if (pos_ < text_.size() && text_[pos_] == close) {
    ++pos_;
    --depth_;
    started_.pop_back();
    return false;
  }
  if (started_.back()) {
    expect(',');
  }
  started_.back() = true;
  return true;
}

bool JsonReader::next() {
  return more(']');
}

bool JsonReader::next(std::string& key) {
  if (!more('}')) {
    return false;
  }
  space();
  if (pos_ >= text_.size() || text_[pos_] != '"') {
    fail("expected a member name");
  }
  key.clear();
  string(&key);
  expect(':');
  return true;
}

std::string_view JsonReader::skip() {
  const Kind kind = peek();
  const size_t start = pos_;
  switch (kind) {
    case Kind::kObject:
      openObject();
      while (more('}')) {
        space();
        if (pos_ >= text_.size() || text_[pos_] != '"') {
          fail("expected a member name");
        }
        string(nullptr);
        expect(':');
        skip();
      }
      break;
    case Kind::kArray:
      openArray();
      while (more(']')) {
        skip();
      }
      break;
    case Kind::kString:
      string(nullptr);
      break;
    case Kind::kNumber:
      number();
      break;
    case Kind::kBool:
      literal(text_[pos_] == 't' ? "true" : "false");
      break;
    case Kind::kNull:
      literal("null");
      break;
  }
  return text_.substr(start, pos_ - start);
}

std::string JsonReader::readString() {
  if (peek() != Kind::kString) {
    fail("expected a string");
  }
  std::string out;
  string(&out);
  return out;
}

std::string_view JsonReader::readStringView(std::string& decoded) {
  if (peek() != Kind::kString) {
    fail("expected a string");
  }
  const size_t start = pos_;
  escaped_ = false;
  string(nullptr);
  if (!escaped_) {
    return text_.substr(start + 1, pos_ - start - 2);
  }
  pos_ = start;
  decoded.clear();
  string(&decoded);
  return decoded;
}

void JsonReader::finish() {
  space();
  if (pos_ != text_.size()) {
    fail("unexpected data after the value");
  }
}

unsigned JsonReader::hex4() {
  unsigned v = 0;
  for (int i = 0; i < 4; ++i, ++pos_) {
    const char c = pos_ < text_.size() ? text_[pos_] : '\0';
    v <<= 4;
    if (isDigit(c)) {
      v |= static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      v |= static_cast<unsigned>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      v |= static_cast<unsigned>(c - 'A' + 10);
    } else {
      fail("\\u must be followed by four hex digits");
    }
  }
  return v;
}

namespace {

// Whether none of the eight bytes at p is a control character, a byte of a multi-byte UTF-8
// sequence, '"' or '\\' (SWAR: a byte of (x - 0x01..) & ~x & 0x80.. is set where x is 0).
bool plainWord(const char* p) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHigh = 0x8080808080808080ULL;
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  auto hasZero = [](uint64_t x) { return (x - kOnes) & ~x & kHigh; };
  const uint64_t special = (v & kHigh) | ((v - 0x20 * kOnes) & ~v & kHigh) |
                           hasZero(v ^ ('"' * kOnes)) | hasZero(v ^ ('\\' * kOnes));
  return special == 0;
}

// The end of the run of bytes from i that a JSON string holds as they are: printable ASCII
// other than the quote and the backslash, eight bytes per step while no byte in the word
// needs a closer look.
size_t plainEnd(std::string_view s, size_t i) {
  while (i + 8 <= s.size() && plainWord(s.data() + i)) {
    i += 8;
  }
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') {
      break;
    }
    ++i;
  }
  return i;
}

}  // namespace

void JsonReader::string(std::string* out) {
  ++pos_;  // the opening quote, checked by the caller
  while (true) {
    const size_t run = pos_;
    pos_ = plainEnd(text_, pos_);
    if (out != nullptr) {
      out->append(text_.data() + run, pos_ - run);
    }
    if (pos_ >= text_.size()) {
      fail("unterminated string");
    }
    const auto c = static_cast<unsigned char>(text_[pos_]);
    if (c == '"') {
      ++pos_;
      return;
    }
    if (c < 0x20) {
      fail("control character in a string");
    }
    if (c >= 0x80) {
      const size_t n = utf8Length(text_, pos_);
      if (n == 0) {
        fail("invalid UTF-8 in a string");
      }
      if (out != nullptr) {
        out->append(text_.data() + pos_, n);
      }
      pos_ += n;
      continue;
    }
    ++pos_;  // the backslash
    escaped_ = true;
    const char e = pos_ < text_.size() ? text_[pos_++] : '\0';
    char plain = '\0';
    switch (e) {
      case '"':
      case '\\':
      case '/':
        plain = e;
        break;
      case 'b':
        plain = '\b';
        break;
      case 'f':
        plain = '\f';
        break;
      case 'n':
        plain = '\n';
        break;
      case 'r':
        plain = '\r';
        break;
      case 't':
        plain = '\t';
        break;
      case 'u': {
        unsigned cp = hex4();
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
          fail("a low surrogate must follow a high one");
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (!text_.substr(pos_).starts_with("\\u")) {
            fail("a high surrogate must be followed by a low one");
          }
          pos_ += 2;
          const unsigned low = hex4();
          if (low < 0xDC00 || low > 0xDFFF) {
            fail("a high surrogate must be followed by a low one");
          }
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        if (out != nullptr) {
          appendUtf8(*out, cp);
        }
        continue;
      }
      default:
        fail("invalid escape in a string");
    }
    if (out != nullptr) {
      *out += plain;
    }
  }
}

bool JsonReader::plainStrings(std::vector<std::string_view>& out) {
  // Whitespace, separators and the strings' bytes are checked here directly: next() and
  // readStringView cost several times the few bytes of a name. Anything else is left to them.
  const std::string_view t = text_;
  bool started = started_.back();
  size_t p = pos_;
  while (true) {
    while (p < t.size() && isSpace(t[p])) {
      ++p;
    }
    if (p < t.size() && t[p] == ']') {
      started_.back() = started;
      pos_ = p;
      return !more(']');
    }
    if (started) {
      if (p >= t.size() || t[p] != ',') {
        break;
      }
      ++p;
      while (p < t.size() && isSpace(t[p])) {
        ++p;
      }
    }
    if (p >= t.size() || t[p] != '"') {
      break;
    }
    const size_t end = plainEnd(t, p + 1);
    if (end >= t.size() || t[end] != '"') {
      break;
    }
    out.push_back(t.substr(p + 1, end - p - 1));
    p = end + 1;
    pos_ = p;
    started = true;
  }
  started_.back() = started;
  return false;
}

void JsonReader::number() {
  auto digits = [&] {
    const size_t from = pos_;
    while (pos_ < text_.size() && isDigit(text_[pos_])) {
      ++pos_;
    }
    if (pos_ == from) {
      fail("invalid number");
    }
  };
  const size_t start = pos_;
  bool isFloat = false;
  if (text_[pos_] == '-') {
    ++pos_;
  }
  if (pos_ < text_.size() && text_[pos_] == '0') {
    ++pos_;
  } else {
    digits();
  }
  if (pos_ < text_.size() && text_[pos_] == '.') {
    isFloat = true;
    ++pos_;
    digits();
  }
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    isFloat = true;
    ++pos_;
    if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) {
      ++pos_;
    }
    digits();
  }
  // nlohmann::json::parse refuses numbers a double cannot hold; integers too large for 64
  // bits become doubles there, so only very long ones overflow.
  const std::string_view token = text_.substr(start, pos_ - start);
  if (isFloat || token.size() > 19) {
    const std::string copy(token);
    if (!std::isfinite(std::strtod(copy.c_str(), nullptr))) {
      fail("number overflow parsing '" + copy + "'");
    }
  }
}

void JsonReader::literal(std::string_view word) {
  if (text_.substr(pos_, word.size()) != word) {
    fail("invalid literal");
  }
  pos_ += word.size();
}

void appendJsonString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    const size_t run = i;
    i = plainEnd(s, i);
    out.append(s.data() + run, i - run);
    if (i == s.size()) {
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t n = utf8Length(s, i);
      if (n == 0) {
        out += "\xEF\xBF\xBD";
        ++i;
      } else {
        out.append(s.data() + i, n);
        i += n;
      }
      continue;
    }
    ++i;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
  }
  out += '"';
}

}  // namespace ker

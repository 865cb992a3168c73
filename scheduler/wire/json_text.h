#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ker {

// Reads JSON text (RFC 8259) in one forward pass without building a document: the caller
// walks the parts it needs and skips the rest, and everything read or skipped is validated as
// strictly as nlohmann::json::parse does (UTF-8, escapes and surrogate pairs, number syntax,
// control characters, nesting at most maxDepth containers deep, nothing after the value).
// Errors throw WireError: "malformed JSON: ..." or "JSON nested deeper than N levels".
class JsonReader {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  JsonReader(std::string_view text, int maxDepth);

  // The kind of the next value, after whitespace.
  Kind peek();
  // Validates the next value and returns its bytes.
  std::string_view skip();
  // Reads a string value, escapes decoded.
  std::string readString();
  // readString without a copy when it can: a string without escapes is its own bytes, so
  // the view points into the text; otherwise it is decoded into `decoded`, which the view
  // then points into.
  std::string_view readStringView(std::string& decoded);

  // Walking a container: open it, then call next() before each member or element; it
  // returns false (and closes the container) at its end. In an object, next() reads the
  // member's key (decoded) and the colon, leaving the reader at the value.
  void openObject();
  void openArray();
  bool next();
  bool next(std::string& key);
  // In an open array, reads the elements that are strings needing no decoding (no escapes,
  // ASCII) as views into the text, as next() and readStringView would, at a fraction of the
  // cost: NodeNames holds thousands of names. Returns true having closed the array, or false
  // before the first element it leaves to next().
  bool plainStrings(std::vector<std::string_view>& out);

  // Fails unless only whitespace is left.
  void finish();
  size_t offset() const { return pos_; }

 private:
  [[noreturn]] void fail(const std::string& what) const;
  void space();
  void expect(char c);
  void open(char c);
  bool more(char close);
  void string(std::string* out);
  void number();
  void literal(std::string_view word);
  void utf8();
  unsigned hex4();

  std::string_view text_;
  size_t pos_ = 0;
  int maxDepth_;
  int depth_ = 0;
  // Per open container: whether an element was read (a comma is due before the next).
  std::vector<bool> started_;
  bool escaped_ = false;  // the last string read had an escape
};

// Appends s as a JSON string literal: '"', '\\' and control characters escaped, other
// characters as UTF-8. Each byte that does not begin a valid UTF-8 sequence becomes U+FFFD,
// as Go's encoding/json does when it decodes such bytes, so the output is always valid JSON.
// (nlohmann's dump(replace) may replace a broken sequence by fewer U+FFFD.)
void appendJsonString(std::string& out, std::string_view s);

}  // namespace ker

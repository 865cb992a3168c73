#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ker {

// A reply body made of text of its own with slices of the request body inserted into it.
// A reply that repeats most of its request (a NodeList filter answer: tens of MB of Node
// objects, passed back whole) points at those bytes instead of copying them, and is written
// from them.
struct SplicedBody {
  // request[offset, offset + length) goes before text[at].
  struct Insert {
    size_t at;
    size_t offset;
    size_t length;
  };
  SplicedBody() = default;
  // Implicit: most bodies are plain text.
  SplicedBody(std::string t) : text(std::move(t)) {}
  SplicedBody(const char* t) : text(t) {}
  SplicedBody(std::string t, std::vector<Insert> i) : text(std::move(t)), inserts(std::move(i)) {}

  std::string text;
  std::vector<Insert> inserts;  // by `at`, ascending

  // Inserts request[offset, offset + length) at the end of the text so far.
  void insertRequestBytes(size_t offset, size_t length);
  size_t size() const;
  // Whether the inserts are in order and lie within the text and a request of this size.
  bool fits(size_t requestSize) const;
  // Hands the body to `piece` in order, stopping when it returns false; returns false then.
  // Throws std::out_of_range unless fits(request.size()).
  bool forEachPiece(std::string_view request,
                    const std::function<bool(std::string_view)>& piece) const;
  std::string join(std::string_view request) const;
};

}  // namespace ker

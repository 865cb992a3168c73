#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
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
  std::string text;
  std::vector<Insert> inserts;  // by `at`, ascending

  // Inserts request[offset, offset + length) at the end of the text so far.
  void insertRequestBytes(size_t offset, size_t length);
  size_t size() const;
  // Whether the inserts are in order and lie within the text and a request of this size.
  bool fits(size_t requestSize) const { return fits(text.size(), inserts, requestSize); }
  static bool fits(size_t textSize, const std::vector<Insert>& inserts, size_t requestSize);
  // Hands the body to `piece` in order, stopping when it returns false; returns false then.
  // Throws std::out_of_range unless fits(request.size()).
  bool forEachPiece(std::string_view request,
                    const std::function<bool(std::string_view)>& piece) const;
  std::string join(std::string_view request) const;
};

}  // namespace ker

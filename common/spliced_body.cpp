#include "common/spliced_body.h"

#include <stdexcept>

namespace ker {

void SplicedBody::insertRequestBytes(size_t offset, size_t length) {
  inserts.push_back({text.size(), offset, length});
}

size_t SplicedBody::size() const {
  size_t n = text.size();
  for (const Insert& i : inserts) {
    n += i.length;
  }
  return n;
}

bool SplicedBody::fits(size_t requestSize) const {
  size_t from = 0;
  for (const Insert& i : inserts) {
    if (i.at < from || i.at > text.size() || i.offset > requestSize ||
        i.length > requestSize - i.offset) {
      return false;
    }
    from = i.at;
  }
  return true;
}

bool SplicedBody::forEachPiece(std::string_view request,
                               const std::function<bool(std::string_view)>& piece) const {
  if (!fits(request.size())) {
    throw std::out_of_range("a spliced body's insert lies outside its text or the request");
  }
  size_t from = 0;
  for (const Insert& i : inserts) {
    if (i.at > from && !piece(std::string_view(text).substr(from, i.at - from))) {
      return false;
    }
    if (i.length != 0 && !piece(request.substr(i.offset, i.length))) {
      return false;
    }
    from = i.at;
  }
  return from == text.size() || piece(std::string_view(text).substr(from));
}

std::string SplicedBody::join(std::string_view request) const {
  std::string out;
  out.reserve(size());
  forEachPiece(request, [&](std::string_view p) {
    out += p;
    return true;
  });
  return out;
}

}  // namespace ker

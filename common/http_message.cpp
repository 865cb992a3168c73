#include "common/http_message.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace ker {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

void HttpRequest::addHeader(std::string_view name, std::string value) {
  headers.emplace(lower(name), std::move(value));
}

std::string HttpRequest::header(std::string_view name) const {
  auto it = headers.find(lower(name));
  return it == headers.end() ? std::string() : it->second;
}

}  // namespace ker

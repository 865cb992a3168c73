#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/spliced_body.h"

namespace ker {

// A request and its response as plain data: what HttpServer hands its handlers and takes back,
// and what code that answers requests without sockets (the extender's handlers) works with.
struct HttpRequest {
  std::string method;
  std::string path;
  std::string body;
  std::string remoteAddr;
  std::multimap<std::string, std::string> headers;  // names lower-cased

  // Adds a header under its lower-cased name.
  void addHeader(std::string_view name, std::string value);
  // First value of a header (name matched case-insensitively), "" when absent.
  std::string header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string contentType = "text/plain; charset=utf-8";
  // Text of its own, and slices of the request body inserted into it (a NodeList filter
  // reply): the server keeps the request until the response is written and copies nothing
  // up front.
  SplicedBody body = {};
};

}  // namespace ker

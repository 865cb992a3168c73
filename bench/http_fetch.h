#pragma once

#include <chrono>
#include <string>

namespace ker::bench {

// A GET of a plain-text endpoint (/metrics) over http or https, with the control plane's CA
// and, for the API server, the admin client certificate.
struct FetchOptions {
  std::string caFile;    // https: verify the server with this CA
  std::string certFile;  // client certificate (optional)
  std::string keyFile;
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
};

// The body of a 200 reply; throws std::runtime_error otherwise.
std::string fetchText(const std::string& url, const FetchOptions& opts = {});

}  // namespace ker::bench

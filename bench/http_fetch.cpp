#include "bench/http_fetch.h"

#include <curl/curl.h>

#include <memory>
#include <stdexcept>

namespace ker::bench {

namespace {

size_t append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

}  // namespace

std::string fetchText(const std::string& url, const FetchOptions& opts) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) {
    throw std::runtime_error("curl_easy_init failed");
  }
  std::string body;
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(opts.timeout.count()));
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
  if (!opts.caFile.empty()) {
    curl_easy_setopt(c, CURLOPT_CAINFO, opts.caFile.c_str());
  }
  if (!opts.certFile.empty()) {
    curl_easy_setopt(c, CURLOPT_SSLCERT, opts.certFile.c_str());
    curl_easy_setopt(c, CURLOPT_SSLKEY, opts.keyFile.c_str());
  }
  const CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    throw std::runtime_error("GET " + url + ": " + curl_easy_strerror(rc));
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200) {
    throw std::runtime_error("GET " + url + ": HTTP " + std::to_string(status) + ": " +
                             body.substr(0, 200));
  }
  return body;
}

}  // namespace ker::bench

#include "common/kube_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "common/api_error.h"
#include "common/backoff.h"
#include "common/logging.h"
#include "common/request_deadline.h"
#include "common/watch_decoder.h"

namespace ker {

namespace {

// A request body as JSON text. A string that is not UTF-8 (a device property or a command's
// output carried into a status) has each invalid byte replaced by U+FFFD rather than failing the
// encoding with an exception its caller does not expect; the API server accepts only UTF-8.
std::string encodeBody(const nlohmann::json& body) {
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Idle easy handles kept for reuse; each holds its own keep-alive connection(s).
constexpr size_t kMaxIdleHandles = 16;
// How often a watch looks at its stop flag while no bytes arrive.
constexpr int kWatchPollMs = 100;
// A non-200 watch response is an error Status; anything beyond this is not worth keeping.
constexpr size_t kMaxErrorBody = 64 * 1024;

void initCurlOnce() {
  static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (rc != CURLE_OK) {
    throw ApiError(ApiErrorKind::kTransport, 0, "",
                   std::string("libcurl initialisation failed: ") + curl_easy_strerror(rc));
  }
}

struct SlistFree {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using Slist = std::unique_ptr<curl_slist, SlistFree>;

void append(Slist& list, const std::string& line) {
  curl_slist* grown = curl_slist_append(list.get(), line.c_str());
  if (grown == nullptr) {
    throw std::bad_alloc();
  }
  (void)list.release();
  list.reset(grown);
}

// Easy handles are reused across calls so their connections stay alive; a handle is used by
// one call at a time.
class HandlePool {
 public:
  HandlePool() = default;
  HandlePool(const HandlePool&) = delete;
  HandlePool& operator=(const HandlePool&) = delete;
  ~HandlePool() {
    for (CURL* handle : idle_) {
      curl_easy_cleanup(handle);
    }
  }

  struct Return {
    HandlePool* pool;
    void operator()(CURL* handle) const { pool->release(handle); }
  };
  using Handle = std::unique_ptr<CURL, Return>;

  Handle acquire() {
    CURL* handle = nullptr;
    {
      std::lock_guard lock(mu_);
      if (!idle_.empty()) {
        handle = idle_.back();
        idle_.pop_back();
      }
    }
    if (handle == nullptr) {
      handle = curl_easy_init();
      if (handle == nullptr) {
        throw ApiError(ApiErrorKind::kTransport, 0, "", "curl_easy_init failed");
      }
    }
    return Handle(handle, Return{this});
  }

 private:
  void release(CURL* handle) {
    // Clears the options at once (keeping live connections): they point into the finished
    // call's stack (its error buffer, body, header list), which a later cleanup must not see.
    curl_easy_reset(handle);
    {
      std::lock_guard lock(mu_);
      if (idle_.size() < kMaxIdleHandles) {
        idle_.push_back(handle);
        return;
      }
    }
    curl_easy_cleanup(handle);
  }

  std::mutex mu_;
  std::vector<CURL*> idle_;
};

// Builds "?a=1&b=2" with escaped values; empty values are left out.
class Query {
 public:
  Query& add(const char* key, const std::string& value) {
    if (!value.empty()) {
      text_ += text_.empty() ? '?' : '&';
      text_ += key;
      text_ += '=';
      text_ += urlEscape(value);
    }
    return *this;
  }
  const std::string& str() const { return text_; }

 private:
  std::string text_;
};

struct Request {
  const char* method;
  std::string path;  // with query string
  std::optional<std::string> body{};
  const char* contentType = "application/json";
  bool read = false;  // idempotent: retried on any transport error or 5xx
};

struct Response {
  CURLcode result = CURLE_OK;
  std::optional<ApiError> error{};  // set when the transfer failed
  long status = 0;
  std::string body{};
  std::string retryAfter{};
};

struct BodyReader {
  std::string_view body;
  size_t offset;

  static size_t read(char* buffer, size_t size, size_t count, void* self) {
    auto* reader = static_cast<BodyReader*>(self);
    size_t n = std::min(size * count, reader->body.size() - reader->offset);
    std::copy_n(reader->body.data() + reader->offset, n, buffer);
    reader->offset += n;
    return n;
  }

  static int refuseRewind(void*, curl_off_t, int) { return CURL_SEEKFUNC_FAIL; }
};

// libcurl callbacks must not throw; returning a short count aborts the transfer instead.
size_t appendBody(char* data, size_t size, size_t count, void* user) noexcept {
  try {
    static_cast<std::string*>(user)->append(data, size * count);
    return size * count;
  } catch (const std::bad_alloc&) {
    return 0;
  }
}

bool startsWithIgnoreCase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), text.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         });
}

// Keeps the Retry-After value of the final response (a 100 Continue block starts over).
size_t captureRetryAfter(char* data, size_t size, size_t count, void* user) noexcept {
  auto* retryAfter = static_cast<std::string*>(user);
  std::string_view line(data, size * count);
  if (startsWithIgnoreCase(line, "HTTP/")) {
    retryAfter->clear();
  } else if (startsWithIgnoreCase(line, "Retry-After:")) {
    line.remove_prefix(std::string_view("Retry-After:").size());
    // Only the digits of a delay in seconds are kept: no allocation, so nothing can throw.
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) {
      line.remove_prefix(1);
    }
    size_t digits = 0;
    while (digits < line.size() && digits < 9 &&
           std::isdigit(static_cast<unsigned char>(line[digits]))) {
      ++digits;
    }
    retryAfter->clear();
    retryAfter->append(line.data(), digits);
  }
  return size * count;
}

const char* contentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
  }
  return "application/merge-patch+json";
}

std::string metadataField(const nlohmann::json& obj, const char* field) {
  auto meta = obj.find("metadata");
  if (meta == obj.end() || !meta->is_object()) {
    return {};
  }
  auto value = meta->find(field);
  return value != meta->end() && value->is_string() ? value->get<std::string>() : std::string();
}

void requireName(const std::string& name, const char* call) {
  if (name.empty()) {
    throw ApiError(ApiErrorKind::kBadRequest, 0, "", std::string(call) + ": object name is empty");
  }
}

// Writes may only be resent when the server certainly never saw them.
bool nothingSent(CURLcode result) {
  return result == CURLE_COULDNT_CONNECT || result == CURLE_COULDNT_RESOLVE_HOST ||
         result == CURLE_COULDNT_RESOLVE_PROXY;
}

}  // namespace

struct KubeClient::Impl {
  KubeConfig config;
  KubeClientOptions opts;
  std::string baseUrl;    // config.server, with the host swapped for tls-server-name if set
  std::string connectTo;  // routes the tls-server-name host to the real server
  HandlePool pool;

  Impl(KubeConfig cfg, KubeClientOptions o) : config(std::move(cfg)), opts(std::move(o)) {
    initCurlOnce();
    baseUrl = config.server;
    if (!config.tlsServerName.empty()) {
      routeThroughServerName();
    }
  }

  // libcurl has no separate SNI/verification name, so the URL names tls-server-name and
  // CURLOPT_CONNECT_TO sends the connection to the configured server.
  void routeThroughServerName() {
    CURLU* url = curl_url();
    std::unique_ptr<CURLU, void (*)(CURLU*)> guard(url, curl_url_cleanup);
    char* host = nullptr;
    char* port = nullptr;
    if (url == nullptr || curl_url_set(url, CURLUPART_URL, config.server.c_str(), 0) != CURLUE_OK ||
        curl_url_get(url, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(url, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
      curl_free(host);
      throw ApiError(ApiErrorKind::kBadRequest, 0, "",
                     "cannot parse the server URL " + config.server);
    }
    connectTo = config.tlsServerName + ":" + port + ":" + host + ":" + port;
    curl_free(host);
    curl_free(port);
    char* rewritten = nullptr;
    if (curl_url_set(url, CURLUPART_HOST, config.tlsServerName.c_str(), 0) != CURLUE_OK ||
        curl_url_get(url, CURLUPART_URL, &rewritten, 0) != CURLUE_OK) {
      throw ApiError(ApiErrorKind::kBadRequest, 0, "",
                     "invalid tls-server-name " + config.tlsServerName);
    }
    baseUrl = rewritten;
    curl_free(rewritten);
    while (!baseUrl.empty() && baseUrl.back() == '/') {
      baseUrl.pop_back();
    }
  }

  // Options every call shares: target, TLS, auth, timeouts. Returns the header list, which
  // must outlive the transfer.
  Slist configure(CURL* h, const std::string& url, const char* contentType,
                  std::chrono::milliseconds timeout, Slist& connectToList, char* errorBuffer) {
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errorBuffer);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    // One request at a time per handle: HTTP/2 multiplexing would buy nothing here.
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    // A timeout of 0 is none (a watch without timeoutSeconds); connecting stays bounded.
    const auto connect =
        timeout.count() > 0 ? std::min(opts.connectTimeout, timeout) : opts.connectTimeout;
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connect.count()));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, opts.userAgent.c_str());

    if (config.insecureSkipTlsVerify) {
      curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (!config.caData.empty()) {
      curl_blob ca{config.caData.data(), config.caData.size(), CURL_BLOB_COPY};
      curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca);
      // Trust that CA only, as client-go does: the blob replaces the default bundle file but
      // not the default CA directory (/etc/ssl/certs on Debian).
      curl_easy_setopt(h, CURLOPT_CAPATH, nullptr);
    }
    if (!config.clientCertData.empty()) {
      curl_blob cert{config.clientCertData.data(), config.clientCertData.size(), CURL_BLOB_COPY};
      curl_blob key{config.clientKeyData.data(), config.clientKeyData.size(), CURL_BLOB_COPY};
      curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
      curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
      curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
      curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
    }
    if (!connectTo.empty()) {
      append(connectToList, connectTo);
      curl_easy_setopt(h, CURLOPT_CONNECT_TO, connectToList.get());
    }

    Slist headers;
    append(headers, "Accept: application/json");
    append(headers, "Expect:");  // no 100-continue round trip before large bodies
    if (contentType != nullptr) {
      append(headers, std::string("Content-Type: ") + contentType);
    }
    if (auto token = config.bearerToken()) {
      append(headers, "Authorization: Bearer " + *token);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
    return headers;
  }

  // timeout: the whole try's, connecting included.
  Response performOnce(const Request& req, std::chrono::milliseconds timeout) {
    auto handle = pool.acquire();
    CURL* h = handle.get();
    char errorBuffer[CURL_ERROR_SIZE] = {};
    Slist connectToList;
    std::string url = baseUrl + req.path;
    Slist headers = configure(h, url, req.body ? req.contentType : nullptr, timeout, connectToList,
                              errorBuffer);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");  // lists can be large; let them compress
    BodyReader reader{req.body ? std::string_view(*req.body) : std::string_view(), 0};
    if (req.body) {
      // Streamed rather than CURLOPT_POSTFIELDS: libcurl silently resends a request whose
      // reused connection died before any response byte, and only a body it has to rewind
      // lets us refuse that resend of a write the server may have applied.
      curl_easy_setopt(h, CURLOPT_POST, 1L);
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body->size()));
      curl_easy_setopt(h, CURLOPT_READFUNCTION, BodyReader::read);
      curl_easy_setopt(h, CURLOPT_READDATA, &reader);
      curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, BodyReader::refuseRewind);
    }
    if (std::string_view(req.method) != "GET" && std::string_view(req.method) != "POST") {
      curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method);
    }

    Response resp;
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, appendBody);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp.body);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, captureRetryAfter);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &resp.retryAfter);
    resp.result = curl_easy_perform(h);
    if (resp.result == CURLE_OK) {
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp.status);
    } else {
      resp.error = transportError(req.method, req.path, resp.result, errorBuffer);
    }
    return resp;
  }

  ApiError transportError(const char* method, const std::string& path, CURLcode result,
                          const char* errorBuffer) const {
    auto kind =
        result == CURLE_OPERATION_TIMEDOUT ? ApiErrorKind::kTimeout : ApiErrorKind::kTransport;
    const char* detail = errorBuffer[0] != '\0' ? errorBuffer : curl_easy_strerror(result);
    return ApiError(kind, 0, "", std::string(method) + " " + config.server + path + ": " + detail);
  }

  std::chrono::milliseconds backoff(int attempt, const ApiError& error) const {
    if (error.retryAfter()) {
      return std::min<std::chrono::milliseconds>(*error.retryAfter(), opts.maxRetryDelay);
    }
    const Backoff retries{opts.retryBaseDelay, 2.0, opts.maxRetryDelay, 0.5};
    return std::chrono::duration_cast<std::chrono::milliseconds>(retries.next(attempt));
  }

  nlohmann::json call(const Request& req) {
    for (int attempt = 0;; ++attempt) {
      const auto left = RequestDeadline::remaining();
      if (left && left->count() <= 0) {
        throw ApiError(ApiErrorKind::kTimeout, 0, "",
                       std::string(req.method) + " " + config.server + req.path +
                           ": not sent: the caller's deadline has passed");
      }
      Response resp =
          performOnce(req, left ? std::min(opts.requestTimeout, *left) : opts.requestTimeout);
      bool retriable = false;
      std::optional<ApiError> error;
      if (resp.result != CURLE_OK) {
        error = std::move(resp.error);
        retriable = req.read || nothingSent(resp.result);
      } else if (resp.status >= 200 && resp.status < 300) {
        return parseBody(req, resp);
      } else {
        error = ApiError::fromResponse(static_cast<int>(resp.status), resp.body, resp.retryAfter);
        retriable = resp.status == 429 || (req.read && error->isRetriable());
      }
      if (!retriable || attempt >= opts.maxRetries) {
        throw *error;
      }
      auto delay = backoff(attempt, *error);
      if (const auto now = RequestDeadline::remaining(); now && *now <= delay) {
        throw *error;  // the retry could not start in time
      }
      if (log::v(4)) {
        log::info("API request failed, retrying", {{"method", req.method},
                                                   {"path", req.path},
                                                   {"error", error->what()},
                                                   {"retry", attempt + 1},
                                                   {"maxRetries", opts.maxRetries},
                                                   {"retryInMs", delay.count()}});
      }
      std::this_thread::sleep_for(delay);
    }
  }

  nlohmann::json parseBody(const Request& req, const Response& resp) const {
    if (resp.body.empty()) {
      return nullptr;
    }
    auto parsed = nlohmann::json::parse(resp.body, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) {
      throw ApiError(ApiErrorKind::kOther, static_cast<int>(resp.status), "",
                     std::string(req.method) + " " + req.path + ": response is not JSON");
    }
    return parsed;
  }

  std::string writePath(std::string path) const {
    return path + Query().add("fieldManager", opts.fieldManager).str();
  }

  void watch(const Resource& res, const std::string& ns, const WatchOptions& wopts,
             const std::function<bool(const WatchEvent&)>& onEvent, const std::atomic<bool>* stop);
};

KubeClient::KubeClient(KubeConfig config, KubeClientOptions opts)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(opts))) {}

KubeClient::~KubeClient() = default;

const KubeConfig& KubeClient::config() const {
  return impl_->config;
}

nlohmann::json KubeClient::get(const Resource& res, const std::string& ns,
                               const std::string& name) {
  requireName(name, "get");
  return impl_->call({.method = "GET", .path = res.path(ns, name), .read = true});
}

nlohmann::json KubeClient::list(const Resource& res, const std::string& ns,
                                const ListOptions& opts) {
  Query query;
  query.add("labelSelector", opts.labelSelector)
      .add("fieldSelector", opts.fieldSelector)
      .add("limit", opts.limit > 0 ? std::to_string(opts.limit) : "")
      .add("continue", opts.continueToken)
      .add("resourceVersion", opts.resourceVersion);
  return impl_->call({.method = "GET", .path = res.path(ns) + query.str(), .read = true});
}

nlohmann::json KubeClient::create(const Resource& res, const std::string& ns,
                                  const nlohmann::json& obj) {
  std::string target = ns.empty() ? metadataField(obj, "namespace") : ns;
  return impl_->call(
      {.method = "POST", .path = impl_->writePath(res.path(target)), .body = encodeBody(obj)});
}

nlohmann::json KubeClient::update(const Resource& res, const std::string& ns,
                                  const nlohmann::json& obj) {
  std::string name = metadataField(obj, "name");
  requireName(name, "update");
  std::string target = ns.empty() ? metadataField(obj, "namespace") : ns;
  return impl_->call(
      {.method = "PUT", .path = impl_->writePath(res.path(target, name)), .body = encodeBody(obj)});
}

nlohmann::json KubeClient::updateStatus(const Resource& res, const std::string& ns,
                                        const nlohmann::json& obj) {
  std::string name = metadataField(obj, "name");
  requireName(name, "updateStatus");
  std::string target = ns.empty() ? metadataField(obj, "namespace") : ns;
  return impl_->call({.method = "PUT",
                      .path = impl_->writePath(res.path(target, name, "status")),
                      .body = encodeBody(obj)});
}

nlohmann::json KubeClient::patch(const Resource& res, const std::string& ns,
                                 const std::string& name, PatchType type,
                                 const nlohmann::json& patch, const std::string& subresource) {
  requireName(name, "patch");
  return impl_->call({.method = "PATCH",
                      .path = impl_->writePath(res.path(ns, name, subresource)),
                      .body = encodeBody(patch),
                      .contentType = contentType(type)});
}

void KubeClient::remove(const Resource& res, const std::string& ns, const std::string& name,
                        const DeleteOptions& opts) {
  requireName(name, "remove");
  // Always with a body, even without options: only a request with a body is protected from
  // libcurl's silent resend (see performOnce).
  nlohmann::json body = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (opts.preconditionUid) {
    body["preconditions"]["uid"] = *opts.preconditionUid;
  }
  if (opts.preconditionResourceVersion) {
    body["preconditions"]["resourceVersion"] = *opts.preconditionResourceVersion;
  }
  if (opts.gracePeriodSeconds) {
    body["gracePeriodSeconds"] = *opts.gracePeriodSeconds;
  }
  impl_->call({.method = "DELETE", .path = res.path(ns, name), .body = encodeBody(body)});
}

void KubeClient::bindPod(const std::string& ns, const std::string& podName,
                         const std::string& podUid, const std::string& nodeName,
                         const std::map<std::string, std::string>& annotations) {
  requireName(podName, "bindPod");
  nlohmann::json metadata = {{"name", podName}, {"namespace", ns}};
  if (!podUid.empty()) {
    metadata["uid"] = podUid;  // the API server refuses the binding if the pod was replaced
  }
  if (!annotations.empty()) {
    metadata["annotations"] = annotations;
  }
  nlohmann::json binding = {
      {"apiVersion", "v1"},
      {"kind", "Binding"},
      {"metadata", std::move(metadata)},
      {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", nodeName}}},
  };
  impl_->call({.method = "POST",
               .path = impl_->writePath(resources::kPods.path(ns, podName, "binding")),
               .body = encodeBody(binding)});
}

void KubeClient::watch(const Resource& res, const std::string& ns, const WatchOptions& opts,
                       const std::function<bool(const WatchEvent&)>& onEvent,
                       const std::atomic<bool>* stop) {
  impl_->watch(res, ns, opts, onEvent, stop);
}

namespace {

// State shared with the curl callbacks of one watch. Callbacks never throw into libcurl: a
// failure is stashed in `failure`, the transfer aborted, and the exception rethrown afterwards.
struct WatchStream {
  CURL* handle;
  const std::function<bool(const WatchEvent&)>& onEvent;
  const std::atomic<bool>* stop;
  WatchDecoder decoder;
  long status = 0;
  std::string errorBody;
  std::string retryAfter;
  std::exception_ptr failure;
  bool finished = false;  // stopped by the flag or by onEvent: not an error

  WatchStream(CURL* h, const std::function<bool(const WatchEvent&)>& callback,
              const std::atomic<bool>* stopFlag)
      : handle(h),
        onEvent(callback),
        stop(stopFlag),
        decoder([this](WatchEvent&& event) { return deliver(std::move(event)); }) {}

  bool stopRequested() const { return stop != nullptr && stop->load(); }

  bool deliver(WatchEvent&& event) {
    if (stopRequested()) {
      return false;
    }
    if (event.type == WatchEventType::kError) {
      auto code = event.object.find("code");
      if (code != event.object.end() && code->is_number_integer() && *code == 410) {
        throw ApiError::fromResponse(410, event.object.dump(), "");
      }
    }
    return onEvent(event);
  }

  size_t write(const char* data, size_t size) {
    try {
      if (status == 0) {
        curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
      }
      if (status != 200) {
        errorBody.append(data,
                         std::min(size, kMaxErrorBody - std::min(kMaxErrorBody, errorBody.size())));
        return size;
      }
      if (stopRequested() || !decoder.feed(data, size)) {
        finished = true;
        return 0;  // aborts the transfer
      }
      return size;
    } catch (...) {
      failure = std::current_exception();
      return 0;
    }
  }

  static size_t onData(char* data, size_t size, size_t count, void* self) {
    return static_cast<WatchStream*>(self)->write(data, size * count);
  }
};

// A stream that cannot be decoded is reported like a broken connection: the caller re-watches.
[[noreturn]] void rethrowWatchFailure(std::exception_ptr failure, const std::string& path) {
  try {
    std::rethrow_exception(failure);
  } catch (const WatchDecodeError& e) {
    throw ApiError(ApiErrorKind::kTransport, 0, "", "GET " + path + ": " + e.what());
  }
}

// Drives one transfer through a multi handle so the stop flag is looked at every
// kWatchPollMs even while the connection is silent.
class MultiTransfer {
 public:
  explicit MultiTransfer(CURL* easy) : multi_(curl_multi_init()), easy_(easy) {
    if (multi_ == nullptr || curl_multi_add_handle(multi_, easy_) != CURLM_OK) {
      curl_multi_cleanup(multi_);
      throw ApiError(ApiErrorKind::kTransport, 0, "", "cannot set up a libcurl multi handle");
    }
  }
  MultiTransfer(const MultiTransfer&) = delete;
  MultiTransfer& operator=(const MultiTransfer&) = delete;
  ~MultiTransfer() {
    curl_multi_remove_handle(multi_, easy_);
    curl_multi_cleanup(multi_);
  }

  // Runs until the transfer ends (its result) or until stopRequested() (nullopt).
  template <typename StopFn>
  std::optional<CURLcode> run(const StopFn& stopRequested) {
    for (;;) {
      int running = 0;
      CURLMcode mc = curl_multi_perform(multi_, &running);
      if (mc != CURLM_OK) {
        throw ApiError(ApiErrorKind::kTransport, 0, "",
                       std::string("libcurl: ") + curl_multi_strerror(mc));
      }
      if (running == 0) {
        int pending = 0;
        while (CURLMsg* msg = curl_multi_info_read(multi_, &pending)) {
          if (msg->msg == CURLMSG_DONE && msg->easy_handle == easy_) {
            return msg->data.result;
          }
        }
        return CURLE_OK;
      }
      if (stopRequested()) {
        return std::nullopt;
      }
      mc = curl_multi_poll(multi_, nullptr, 0, kWatchPollMs, nullptr);
      if (mc != CURLM_OK) {
        throw ApiError(ApiErrorKind::kTransport, 0, "",
                       std::string("libcurl: ") + curl_multi_strerror(mc));
      }
    }
  }

 private:
  CURLM* multi_;
  CURL* easy_;
};

}  // namespace

void KubeClient::Impl::watch(const Resource& res, const std::string& ns, const WatchOptions& wopts,
                             const std::function<bool(const WatchEvent&)>& onEvent,
                             const std::atomic<bool>* stop) {
  if (stop != nullptr && stop->load()) {
    return;
  }
  Query query;
  query.add("watch", "true")
      .add("allowWatchBookmarks", wopts.allowWatchBookmarks ? "true" : "")
      .add("resourceVersion", wopts.resourceVersion)
      .add("timeoutSeconds", wopts.timeoutSeconds > 0 ? std::to_string(wopts.timeoutSeconds) : "")
      .add("labelSelector", wopts.labelSelector)
      .add("fieldSelector", wopts.fieldSelector);
  std::string path = res.path(ns) + query.str();

  // Declared before the handle, so they outlive its cleanup, which may still use them.
  char errorBuffer[CURL_ERROR_SIZE] = {};
  Slist connectToList;
  Slist headers;
  // A watch gets a handle of its own: adding a pooled handle to a multi handle would drop the
  // keep-alive connection it holds, and a watch's connection is rarely reusable afterwards.
  std::unique_ptr<CURL, void (*)(CURL*)> handle(curl_easy_init(), curl_easy_cleanup);
  if (handle == nullptr) {
    throw ApiError(ApiErrorKind::kTransport, 0, "", "curl_easy_init failed");
  }
  CURL* h = handle.get();
  // The server ends the watch after timeoutSeconds; the margin covers its late close.
  auto timeout = wopts.timeoutSeconds > 0
                     ? std::chrono::milliseconds(std::chrono::seconds(wopts.timeoutSeconds)) +
                           opts.requestTimeout
                     : std::chrono::milliseconds(0);
  headers = configure(h, baseUrl + path, nullptr, timeout, connectToList, errorBuffer);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, static_cast<long>(opts.watchIdleTimeout.count()));

  WatchStream stream(h, onEvent, stop);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, WatchStream::onData);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &stream);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, captureRetryAfter);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &stream.retryAfter);

  std::optional<CURLcode> result;
  {
    MultiTransfer transfer(h);
    result = transfer.run([&] { return stream.stopRequested(); });
  }
  if (stream.failure) {
    rethrowWatchFailure(stream.failure, path);
  }
  if (!result || stream.finished) {
    return;
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &stream.status);
  if (*result == CURLE_OPERATION_TIMEDOUT && stream.status == 200) {
    // An established watch that stayed silent past the idle timeout (API servers before 1.31
    // send no bookmarks for a resource nobody changes) or outlived its own timeout ends as
    // the server would have ended it: the caller resumes from its last resourceVersion.
    if (log::v(4)) {
      log::info("watch ended after a quiet spell",
                {{"path", path}, {"error", std::string(errorBuffer)}});
    }
    return;
  }
  if (*result != CURLE_OK) {
    throw transportError("GET", path, *result, errorBuffer);
  }
  if (stream.status != 200) {
    throw ApiError::fromResponse(static_cast<int>(stream.status), stream.errorBody,
                                 stream.retryAfter);
  }
  try {
    stream.decoder.finish();
  } catch (...) {
    rethrowWatchFailure(std::current_exception(), path);
  }
}

}  // namespace ker

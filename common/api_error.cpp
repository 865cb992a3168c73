#include "common/api_error.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <utility>

namespace ker {

namespace {

// Bodies that are not a Status (proxies, load balancers) are quoted this far at most.
constexpr size_t kMaxQuotedBody = 512;

std::optional<ApiErrorKind> kindFromReason(const std::string& reason) {
  static const std::pair<const char*, ApiErrorKind> kReasons[] = {
      {"NotFound", ApiErrorKind::kNotFound},
      {"AlreadyExists", ApiErrorKind::kAlreadyExists},
      {"Conflict", ApiErrorKind::kConflict},
      {"Gone", ApiErrorKind::kGone},
      {"Expired", ApiErrorKind::kGone},
      {"Forbidden", ApiErrorKind::kForbidden},
      {"Unauthorized", ApiErrorKind::kUnauthorized},
      {"TooManyRequests", ApiErrorKind::kTooManyRequests},
      {"Invalid", ApiErrorKind::kInvalid},
      {"BadRequest", ApiErrorKind::kBadRequest},
      {"Timeout", ApiErrorKind::kTimeout},
      {"ServerTimeout", ApiErrorKind::kServerError},
      {"InternalError", ApiErrorKind::kServerError},
      {"ServiceUnavailable", ApiErrorKind::kServerError},
  };
  for (const auto& [name, kind] : kReasons) {
    if (reason == name) {
      return kind;
    }
  }
  return std::nullopt;
}

ApiErrorKind kindFromStatus(int status) {
  switch (status) {
    case 400:
      return ApiErrorKind::kBadRequest;
    case 401:
      return ApiErrorKind::kUnauthorized;
    case 403:
      return ApiErrorKind::kForbidden;
    case 404:
      return ApiErrorKind::kNotFound;
    case 408:
    case 504:
      return ApiErrorKind::kTimeout;
    case 409:
      return ApiErrorKind::kConflict;
    case 410:
      return ApiErrorKind::kGone;
    case 422:
      return ApiErrorKind::kInvalid;
    case 429:
      return ApiErrorKind::kTooManyRequests;
    default:
      return status >= 500 && status <= 599 ? ApiErrorKind::kServerError : ApiErrorKind::kOther;
  }
}

std::optional<std::chrono::seconds> parseSeconds(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  // An HTTP-date form is legal too but never sent by the API server; it is ignored.
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return std::chrono::seconds(value);
}

// Cut at a UTF-8 character boundary so the message stays valid UTF-8 (it may end up in JSON).
std::string truncated(const std::string& body) {
  if (body.size() <= kMaxQuotedBody) {
    return body;
  }
  size_t end = kMaxQuotedBody;
  while (end > 0 && (static_cast<unsigned char>(body[end]) & 0xC0) == 0x80) {
    --end;
  }
  return body.substr(0, end) + "...";
}

std::string composeWhat(ApiErrorKind kind, int httpStatus, const std::string& message) {
  std::string what = toString(kind);
  if (httpStatus != 0) {
    what += " (HTTP " + std::to_string(httpStatus) + ")";
  }
  if (!message.empty()) {
    what += ": " + message;
  }
  return what;
}

}  // namespace

const char* toString(ApiErrorKind kind) {
  switch (kind) {
    case ApiErrorKind::kNotFound:
      return "NotFound";
    case ApiErrorKind::kConflict:
      return "Conflict";
    case ApiErrorKind::kAlreadyExists:
      return "AlreadyExists";
    case ApiErrorKind::kGone:
      return "Gone";
    case ApiErrorKind::kForbidden:
      return "Forbidden";
    case ApiErrorKind::kUnauthorized:
      return "Unauthorized";
    case ApiErrorKind::kTooManyRequests:
      return "TooManyRequests";
    case ApiErrorKind::kBadRequest:
      return "BadRequest";
    case ApiErrorKind::kInvalid:
      return "Invalid";
    case ApiErrorKind::kServerError:
      return "ServerError";
    case ApiErrorKind::kTimeout:
      return "Timeout";
    case ApiErrorKind::kTransport:
      return "Transport";
    case ApiErrorKind::kOther:
      return "Other";
  }
  return "Unknown";
}

ApiError::ApiError(ApiErrorKind kind, int httpStatus, std::string reason, std::string message,
                   std::optional<std::chrono::seconds> retryAfter, std::vector<std::string> causes)
    : std::runtime_error(composeWhat(kind, httpStatus, message)),
      kind_(kind),
      httpStatus_(httpStatus),
      reason_(std::move(reason)),
      retryAfter_(retryAfter),
      causes_(std::move(causes)) {}

bool ApiError::hasCause(std::string_view cause) const {
  return std::find(causes_.begin(), causes_.end(), cause) != causes_.end();
}

bool ApiError::isRetriable() const {
  switch (kind_) {
    case ApiErrorKind::kTooManyRequests:
    case ApiErrorKind::kTimeout:
    case ApiErrorKind::kTransport:
      return true;
    case ApiErrorKind::kServerError:
      return httpStatus_ != 501;  // Not Implemented will not change on retry
    default:
      return false;
  }
}

ApiError ApiError::fromResponse(int httpStatus, const std::string& body,
                                const std::string& retryAfterHeader) {
  std::string reason;
  std::string message;
  std::optional<std::chrono::seconds> retryAfter = parseSeconds(retryAfterHeader);
  std::vector<std::string> causes;

  // Whatever the body holds, a field of the wrong type reads as unset: the error being built
  // must not itself fail.
  auto text = [](const nlohmann::json& obj, const char* key) {
    auto it = obj.find(key);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto status = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (status.is_object() && text(status, "kind") == "Status") {
    reason = text(status, "reason");
    message = text(status, "message");
    auto details = status.find("details");
    if (details != status.end() && details->is_object()) {
      auto seconds = details->find("retryAfterSeconds");
      if (!retryAfter && seconds != details->end() && seconds->is_number_integer() &&
          *seconds >= 0) {
        retryAfter = std::chrono::seconds(seconds->get<int64_t>());
      }
      auto listed = details->find("causes");
      if (listed != details->end() && listed->is_array()) {
        for (const auto& c : *listed) {
          if (std::string cause = c.is_object() ? text(c, "reason") : ""; !cause.empty()) {
            causes.push_back(std::move(cause));
          }
        }
      }
    }
  }
  if (message.empty() && !body.empty()) {
    message = truncated(body);
  }

  ApiErrorKind kind = kindFromReason(reason).value_or(kindFromStatus(httpStatus));
  return ApiError(kind, httpStatus, std::move(reason), std::move(message), retryAfter,
                  std::move(causes));
}

}  // namespace ker

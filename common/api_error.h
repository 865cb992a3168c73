#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ker {

// Classification of a failed API call, mirroring k8s.io/apimachinery's StatusReason helpers.
enum class ApiErrorKind {
  kNotFound,
  kConflict,
  kAlreadyExists,
  kGone,  // resourceVersion too old (410): relist
  kForbidden,
  kUnauthorized,
  kTooManyRequests,
  kBadRequest,
  kInvalid,  // 422: rejected by validation
  kServerError,
  kTimeout,    // the call's deadline passed
  kTransport,  // connection failed, TLS error, ...
  kOther,
};

const char* toString(ApiErrorKind kind);

// The cause the API server gives for a create in a namespace being deleted (core/v1's
// NamespaceTerminatingCause): that write will never be taken.
inline constexpr std::string_view kNamespaceTerminatingCause = "NamespaceTerminating";

class ApiError : public std::runtime_error {
 public:
  ApiError(ApiErrorKind kind, int httpStatus, std::string reason, std::string message,
           std::optional<std::chrono::seconds> retryAfter = std::nullopt,
           std::vector<std::string> causes = {});

  ApiErrorKind kind() const { return kind_; }
  int httpStatus() const { return httpStatus_; }
  // The Status body's `reason` (e.g. "NotFound", "Conflict"), empty when none was sent.
  const std::string& reason() const { return reason_; }
  std::optional<std::chrono::seconds> retryAfter() const { return retryAfter_; }
  // The Status body's `details.causes[].reason`s, in order.
  const std::vector<std::string>& causes() const { return causes_; }
  // Whether the Status body's details name this cause (a `details.causes[].reason`), as
  // apimachinery's HasStatusCause asks.
  bool hasCause(std::string_view cause) const;

  bool isNotFound() const { return kind_ == ApiErrorKind::kNotFound; }
  bool isConflict() const { return kind_ == ApiErrorKind::kConflict; }
  bool isAlreadyExists() const { return kind_ == ApiErrorKind::kAlreadyExists; }
  bool isGone() const { return kind_ == ApiErrorKind::kGone; }
  // Worth retrying the same request later (throttling, server errors, transport failures).
  bool isRetriable() const;
  // The server answered with a client error (4xx): a write so refused was not applied. Any
  // other failure (timeout, dropped connection, 5xx) may have been.
  bool isRefused() const { return httpStatus_ >= 400 && httpStatus_ < 500; }

  // Builds an ApiError from an HTTP status, the response body (a metav1.Status when the
  // server sent one) and the Retry-After header value (empty when absent).
  static ApiError fromResponse(int httpStatus, const std::string& body,
                               const std::string& retryAfterHeader);

 private:
  ApiErrorKind kind_;
  int httpStatus_;
  std::string reason_;
  std::optional<std::chrono::seconds> retryAfter_;
  std::vector<std::string> causes_;
};

}  // namespace ker

#pragma once

#include <exception>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

#include "common/api_error.h"

namespace ker {

// What went wrong, as a code a caller decides on, and a message for people.
enum class StatusCode {
  kOk,
  kInvalid,             // the input is malformed or refused as such (400, 422, a bad selector)
  kNotFound,            // 404, or an object the call needs is gone
  kAlreadyExists,       // 409 AlreadyExists on a create
  kConflict,            // an optimistic-concurrency race was lost (409), or the state moved on
  kExpired,             // 410: the resourceVersion is too old; list again
  kForbidden,           // 401, 403
  kThrottled,           // 429, 408: turned away for now, not applied; worth another try
  kFailedPrecondition,  // the state does not allow it (no fit, the pod is being deleted)
  kUnavailable,         // 5xx, no connection: may have been applied; worth another try
  kDeadlineExceeded,    // the call's time ran out: may have been applied; worth another try
  kInternal,            // anything else (501, an unexpected answer, a fault of ours)
};

const char* toString(StatusCode code);

// The outcome of an operation that can fail in an expected way: OK, or a code and a message.
// A default-constructed Status is OK. Functions return it (the value they make, if any,
// through an out-parameter or a small struct); nothing throws for an expected failure.
class [[nodiscard]] Status {
 public:
  Status() = default;

  static Status invalid(std::string message) { return {StatusCode::kInvalid, std::move(message)}; }
  static Status notFound(std::string message) {
    return {StatusCode::kNotFound, std::move(message)};
  }
  static Status conflict(std::string message) {
    return {StatusCode::kConflict, std::move(message)};
  }
  static Status failedPrecondition(std::string message) {
    return {StatusCode::kFailedPrecondition, std::move(message)};
  }
  static Status unavailable(std::string message) {
    return {StatusCode::kUnavailable, std::move(message)};
  }
  static Status deadlineExceeded(std::string message) {
    return {StatusCode::kDeadlineExceeded, std::move(message)};
  }
  static Status internal(std::string message) {
    return {StatusCode::kInternal, std::move(message)};
  }
  static Status withCode(StatusCode code, std::string message) {
    return {code, std::move(message)};
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  // The text users see (a bind's error, a status message): empty when OK.
  const std::string& message() const { return message_; }

  bool isNotFound() const { return code_ == StatusCode::kNotFound; }
  bool isConflict() const { return code_ == StatusCode::kConflict; }
  // Worth trying the same thing again later.
  bool isRetriable() const {
    return code_ == StatusCode::kThrottled || code_ == StatusCode::kUnavailable ||
           code_ == StatusCode::kDeadlineExceeded;
  }
  // The API server turned a request away, so a write so answered was not applied; after any
  // other failure (no answer, a timeout, a 5xx) it may have been.
  bool isRefused() const;

  // The same failure with what was being done put in front: "<context>: <message>".
  Status within(std::string_view context) const;

  // "OK", or the code and the message ("Conflict: ..."), for logs.
  std::string toString() const;

 private:
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// What a failed call means to the one who made it: the one reading of a Status that every retry
// or give-up decision starts from (what to do about each kind is the caller's).
enum class Failure {
  kNone,       // it succeeded
  kGone,       // 404: the object is not there
  kConflict,   // 409: it changed since it was read, or a precondition (its UID) failed
  kTransient,  // 429, 5xx, a timeout, no answer: the same call may succeed later
  kPermanent,  // anything else (400, 403, 422, ...): it would fail the same way again
};
Failure classify(const Status& status);

// Prints toString() (test failures, diagnostics).
std::ostream& operator<<(std::ostream& out, const Status& status);

// The one conversion from the API client's exceptions: its kind (and HTTP status, where the
// kind alone does not say whether the request was refused) as a code, its what() as the
// message. Retriable and refused mean what ApiError::isRetriable and isRefused mean.
Status statusFrom(const ApiError& e);
// Any exception: an ApiError as above, anything else kInternal with its what().
Status statusFrom(const std::exception& e);

// Runs one call to the API client and gives its ApiError back as a Status: where a layer
// crosses from the client's exceptions into values. Other exceptions (faults, not answers)
// pass through.
template <class F>
Status callApi(F&& call) {
  try {
    std::forward<F>(call)();
  } catch (const ApiError& e) {
    return statusFrom(e);
  }
  return {};
}

// Runs a call to the API client for which one kind of ApiError (`expected`, as
// &ApiError::isNotFound) is an answer rather than a failure: false then, true when the call
// succeeded. Any other ApiError goes on to the layer's boundary.
template <class F>
bool unlessApiError(bool (ApiError::*expected)() const, F&& call) {
  try {
    std::forward<F>(call)();
  } catch (const ApiError& e) {
    if ((e.*expected)()) {
      return false;
    }
    throw;
  }
  return true;
}

// A call for which 404 is an expected answer: the object is gone, or never was.
template <class F>
bool unlessNotFound(F&& call) {
  return unlessApiError(&ApiError::isNotFound, std::forward<F>(call));
}

// A create whose name may be taken (409 AlreadyExists).
template <class F>
bool unlessAlreadyExists(F&& call) {
  return unlessApiError(&ApiError::isAlreadyExists, std::forward<F>(call));
}

}  // namespace ker

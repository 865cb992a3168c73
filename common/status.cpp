#include "common/status.h"

namespace ker {

namespace {

StatusCode codeOf(const ApiError& e) {
  switch (e.kind()) {
    case ApiErrorKind::kNotFound:
      return StatusCode::kNotFound;
    case ApiErrorKind::kConflict:
      return StatusCode::kConflict;
    case ApiErrorKind::kAlreadyExists:
      return StatusCode::kAlreadyExists;
    case ApiErrorKind::kGone:
      return StatusCode::kExpired;
    case ApiErrorKind::kForbidden:
    case ApiErrorKind::kUnauthorized:
      return StatusCode::kForbidden;
    case ApiErrorKind::kTooManyRequests:
      return StatusCode::kThrottled;
    case ApiErrorKind::kBadRequest:
    case ApiErrorKind::kInvalid:
      return StatusCode::kInvalid;
    case ApiErrorKind::kServerError:
      return e.httpStatus() == 501 ? StatusCode::kInternal : StatusCode::kUnavailable;
    case ApiErrorKind::kTimeout:
      // 408: the server gave up waiting for the request, so it did not apply it.
      return e.httpStatus() == 408 ? StatusCode::kThrottled : StatusCode::kDeadlineExceeded;
    case ApiErrorKind::kTransport:
      return StatusCode::kUnavailable;
    case ApiErrorKind::kOther:
      break;
  }
  return e.isRefused() ? StatusCode::kInvalid : StatusCode::kInternal;
}

}  // namespace

const char* toString(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalid:
      return "Invalid";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kConflict:
      return "Conflict";
    case StatusCode::kExpired:
      return "Expired";
    case StatusCode::kForbidden:
      return "Forbidden";
    case StatusCode::kThrottled:
      return "Throttled";
    case StatusCode::kFailedPrecondition:
      return "FailedPrecondition";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kDeadlineExceeded:
      return "DeadlineExceeded";
    case StatusCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

bool Status::isRefused() const {
  switch (code_) {
    case StatusCode::kInvalid:
    case StatusCode::kNotFound:
    case StatusCode::kAlreadyExists:
    case StatusCode::kConflict:
    case StatusCode::kExpired:
    case StatusCode::kForbidden:
    case StatusCode::kThrottled:
      return true;
    default:
      return false;
  }
}

Status Status::within(std::string_view context) const {
  if (ok()) {
    return *this;
  }
  return {code_, std::string(context) + ": " + message_};
}

std::string Status::toString() const {
  if (ok()) {
    return "OK";
  }
  return std::string(ker::toString(code_)) + ": " + message_;
}

std::ostream& operator<<(std::ostream& out, const Status& status) {
  return out << status.toString();
}

Status statusFrom(const ApiError& e) {
  return Status::withCode(codeOf(e), e.what());
}

Failure classify(const Status& status) {
  if (status.ok()) {
    return Failure::kNone;
  }
  if (status.isNotFound()) {
    return Failure::kGone;
  }
  if (status.isConflict()) {
    return Failure::kConflict;
  }
  return status.isRetriable() ? Failure::kTransient : Failure::kPermanent;
}

Status statusFrom(const std::exception& e) {
  if (const auto* api = dynamic_cast<const ApiError*>(&e)) {
    return statusFrom(*api);
  }
  return Status::internal(e.what());
}

}  // namespace ker

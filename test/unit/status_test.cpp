#include "common/status.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace ker {
namespace {

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.toString(), "OK");
  EXPECT_FALSE(s.isRetriable());
}

TEST(Status, CarriesCodeAndMessage) {
  Status s = Status::invalid("key: must not be empty");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalid);
  EXPECT_EQ(s.message(), "key: must not be empty");
  EXPECT_EQ(s.toString(), "Invalid: key: must not be empty");
}

TEST(Status, WithinPutsTheContextFirstAndKeepsTheCode) {
  Status s = Status::conflict("device d1 was taken").within("bind");
  EXPECT_EQ(s.code(), StatusCode::kConflict);
  EXPECT_EQ(s.message(), "bind: device d1 was taken");
  EXPECT_TRUE(Status().within("bind").ok());
  EXPECT_EQ(Status().within("bind").message(), "");
}

// The kinds a status carries across, and whether each says "retry" and "not applied" exactly
// as the ApiError it came from did.
TEST(Status, FromApiErrorKeepsRetriableAndRefused) {
  const ApiError errors[] = {
      {ApiErrorKind::kNotFound, 404, "NotFound", "gone"},
      {ApiErrorKind::kConflict, 409, "Conflict", "stale"},
      {ApiErrorKind::kAlreadyExists, 409, "AlreadyExists", "exists"},
      {ApiErrorKind::kGone, 410, "Expired", "too old"},
      {ApiErrorKind::kForbidden, 403, "Forbidden", "no"},
      {ApiErrorKind::kUnauthorized, 401, "Unauthorized", "who"},
      {ApiErrorKind::kTooManyRequests, 429, "TooManyRequests", "slow down"},
      {ApiErrorKind::kBadRequest, 400, "BadRequest", "bad"},
      {ApiErrorKind::kInvalid, 422, "Invalid", "spec.x"},
      {ApiErrorKind::kServerError, 500, "InternalError", "etcd"},
      {ApiErrorKind::kServerError, 503, "ServiceUnavailable", "busy"},
      {ApiErrorKind::kServerError, 501, "", "not implemented"},
      {ApiErrorKind::kTimeout, 504, "Timeout", "slow"},
      {ApiErrorKind::kTimeout, 408, "", "request timeout"},
      {ApiErrorKind::kTimeout, 0, "", "deadline passed"},
      {ApiErrorKind::kTransport, 0, "", "connection reset"},
      {ApiErrorKind::kOther, 405, "", "method not allowed"},
      {ApiErrorKind::kOther, 302, "", "redirect"},
  };
  for (const ApiError& e : errors) {
    const Status s = statusFrom(e);
    SCOPED_TRACE(e.what());
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.message(), e.what());
    EXPECT_EQ(s.isRetriable(), e.isRetriable());
    EXPECT_EQ(s.isRefused(), e.isRefused());
    EXPECT_EQ(s.isNotFound(), e.isNotFound());
    EXPECT_EQ(s.isConflict(), e.isConflict());
  }
  EXPECT_EQ(statusFrom(ApiError(ApiErrorKind::kGone, 410, "Gone", "")).code(),
            StatusCode::kExpired);
  EXPECT_EQ(statusFrom(ApiError(ApiErrorKind::kTimeout, 0, "", "")).code(),
            StatusCode::kDeadlineExceeded);
}

TEST(Status, FromAnyException) {
  const std::exception& api = ApiError(ApiErrorKind::kConflict, 409, "Conflict", "stale");
  EXPECT_EQ(statusFrom(api).code(), StatusCode::kConflict);
  const Status other = statusFrom(std::runtime_error("boom"));
  EXPECT_EQ(other.code(), StatusCode::kInternal);
  EXPECT_EQ(other.message(), "boom");
}

TEST(Status, CallApiTurnsTheClientsExceptionIntoAValue) {
  int calls = 0;
  EXPECT_TRUE(callApi([&] { ++calls; }).ok());
  const Status s = callApi([&] {
    ++calls;
    throw ApiError(ApiErrorKind::kNotFound, 404, "NotFound", "pods \"p\" not found");
  });
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(s.isNotFound());
  EXPECT_EQ(s.message(), "NotFound (HTTP 404): pods \"p\" not found");
  // A fault that is no API answer is not dressed up as one.
  EXPECT_THROW((void)callApi([] { throw std::logic_error("bug"); }), std::logic_error);
}

}  // namespace
TEST(Status, FailuresAreGoneConflictTransientOrPermanent) {
  EXPECT_EQ(classify(Status()), Failure::kNone);
  EXPECT_EQ(classify(statusFrom(ApiError(ApiErrorKind::kNotFound, 404, "NotFound", ""))),
            Failure::kGone);
  EXPECT_EQ(classify(statusFrom(ApiError(ApiErrorKind::kConflict, 409, "Conflict", "uid"))),
            Failure::kConflict);
  for (const auto& e : {ApiError(ApiErrorKind::kTooManyRequests, 429, "TooManyRequests", ""),
                        ApiError(ApiErrorKind::kServerError, 503, "ServiceUnavailable", ""),
                        ApiError(ApiErrorKind::kTimeout, 0, "", "deadline"),
                        ApiError(ApiErrorKind::kTransport, 0, "", "reset")}) {
    EXPECT_EQ(classify(statusFrom(e)), Failure::kTransient) << e.what();
  }
  EXPECT_EQ(classify(statusFrom(ApiError(ApiErrorKind::kForbidden, 403, "Forbidden", ""))),
            Failure::kPermanent);
  EXPECT_EQ(classify(statusFrom(std::runtime_error("garbled"))), Failure::kPermanent);
}

}  // namespace ker

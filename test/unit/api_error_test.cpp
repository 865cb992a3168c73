#include "common/api_error.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>

namespace ker {
namespace {

std::string status(int code, const std::string& reason, const std::string& message) {
  return R"({"kind":"Status","apiVersion":"v1","status":"Failure","code":)" + std::to_string(code) +
         R"(,"reason":")" + reason + R"(","message":")" + message + "\"}";
}

struct Case {
  int httpStatus;
  std::string reason;
  ApiErrorKind kind;
};

// ctest names each case by its printed parameter; without this it prints the struct's bytes.
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.httpStatus << ' ' << (c.reason.empty() ? "(no reason)" : c.reason);
}

class ApiErrorKindTest : public testing::TestWithParam<Case> {};

TEST_P(ApiErrorKindTest, KindFromStatusAndReason) {
  const Case& c = GetParam();
  ApiError e = ApiError::fromResponse(c.httpStatus, status(c.httpStatus, c.reason, "msg"), "");
  EXPECT_EQ(e.kind(), c.kind) << toString(e.kind());
  EXPECT_EQ(e.httpStatus(), c.httpStatus);
  EXPECT_EQ(e.reason(), c.reason);
}

INSTANTIATE_TEST_SUITE_P(
    Statuses, ApiErrorKindTest,
    testing::Values(Case{404, "NotFound", ApiErrorKind::kNotFound},
                    Case{409, "Conflict", ApiErrorKind::kConflict},
                    Case{409, "AlreadyExists", ApiErrorKind::kAlreadyExists},
                    Case{410, "Expired", ApiErrorKind::kGone},
                    Case{410, "Gone", ApiErrorKind::kGone},
                    Case{403, "Forbidden", ApiErrorKind::kForbidden},
                    Case{401, "Unauthorized", ApiErrorKind::kUnauthorized},
                    Case{429, "TooManyRequests", ApiErrorKind::kTooManyRequests},
                    Case{422, "Invalid", ApiErrorKind::kInvalid},
                    Case{400, "BadRequest", ApiErrorKind::kBadRequest},
                    Case{500, "InternalError", ApiErrorKind::kServerError},
                    Case{504, "Timeout", ApiErrorKind::kTimeout},
                    // The status decides when the reason is unknown or missing.
                    Case{404, "", ApiErrorKind::kNotFound}, Case{409, "", ApiErrorKind::kConflict},
                    Case{410, "", ApiErrorKind::kGone}, Case{503, "", ApiErrorKind::kServerError},
                    Case{418, "Teapot", ApiErrorKind::kOther}));

TEST(ApiErrorTest, MessageComesFromTheStatus) {
  ApiError e = ApiError::fromResponse(404, status(404, "NotFound", "pods \\\"x\\\" not found"), "");
  EXPECT_STREQ(e.what(), "NotFound (HTTP 404): pods \"x\" not found");
  EXPECT_TRUE(e.isNotFound());
  EXPECT_FALSE(e.isRetriable());
}

TEST(ApiErrorTest, StatusWithoutReasonFallsBackToTheHttpStatus) {
  ApiError e = ApiError::fromResponse(409, R"({"kind":"Status","message":"busy"})", "");
  EXPECT_TRUE(e.isConflict());
  EXPECT_EQ(e.reason(), "");
  EXPECT_STREQ(e.what(), "Conflict (HTTP 409): busy");
}

TEST(ApiErrorTest, NonStatusBodyIsQuotedTruncated) {
  std::string body = std::string(510, 'a') + "日本語";  // the cut falls inside a character
  ApiError e = ApiError::fromResponse(502, body, "");
  EXPECT_EQ(e.kind(), ApiErrorKind::kServerError);
  std::string what = e.what();
  EXPECT_EQ(what, "ServerError (HTTP 502): " + std::string(510, 'a') + "...");
}

TEST(ApiErrorTest, EmptyBody) {
  ApiError e = ApiError::fromResponse(403, "", "");
  EXPECT_EQ(e.kind(), ApiErrorKind::kForbidden);
  EXPECT_STREQ(e.what(), "Forbidden (HTTP 403)");
}

TEST(ApiErrorTest, RetryAfterHeaderInSeconds) {
  ApiError e = ApiError::fromResponse(429, status(429, "TooManyRequests", "slow down"), " 3 ");
  EXPECT_EQ(e.kind(), ApiErrorKind::kTooManyRequests);
  EXPECT_EQ(e.retryAfter(), std::chrono::seconds(3));
  EXPECT_TRUE(e.isRetriable());
}

TEST(ApiErrorTest, RetryAfterFromStatusDetails) {
  ApiError e = ApiError::fromResponse(
      500,
      R"({"kind":"Status","code":500,"reason":"ServerTimeout","details":{"retryAfterSeconds":2}})",
      "");
  EXPECT_EQ(e.kind(), ApiErrorKind::kServerError);
  EXPECT_EQ(e.retryAfter(), std::chrono::seconds(2));
}

TEST(ApiErrorTest, CausesComeFromTheStatusDetails) {
  ApiError e = ApiError::fromResponse(
      403,
      R"({"kind":"Status","code":403,"reason":"Forbidden","details":{"causes":[)"
      R"({"reason":"FieldValueInvalid","field":"spec"},{"reason":"NamespaceTerminating"}]}})",
      "");
  EXPECT_EQ(e.kind(), ApiErrorKind::kForbidden);
  EXPECT_TRUE(e.hasCause(kNamespaceTerminatingCause));
  EXPECT_TRUE(e.hasCause("FieldValueInvalid"));
  EXPECT_FALSE(e.hasCause("FieldValueRequired"));
  EXPECT_FALSE(ApiError::fromResponse(403, status(403, "Forbidden", "m"), "")
                   .hasCause(kNamespaceTerminatingCause));
}

// A Status whose fields have the wrong types still makes an error (those fields unset): the
// error path must not itself throw.
TEST(ApiErrorTest, AStatusOfTheWrongShapeStillMakesAnError) {
  for (const char* body : {
           R"({"kind":"Status","reason":5,"message":["m"]})",
           R"({"kind":7})",
           R"({"kind":"Status","reason":"Forbidden","details":{"causes":{"reason":"x"}}})",
           R"({"kind":"Status","reason":"Forbidden","details":{"causes":[3,{"reason":4},null]}})",
           R"({"kind":"Status","details":{"retryAfterSeconds":"2"}})",
       }) {
    SCOPED_TRACE(body);
    ApiError e = ApiError::fromResponse(403, body, "");
    EXPECT_EQ(e.kind(), ApiErrorKind::kForbidden);
    EXPECT_FALSE(e.hasCause("x"));
    EXPECT_FALSE(e.retryAfter());
  }
}

TEST(ApiErrorTest, UnparsableRetryAfterIsIgnored) {
  EXPECT_FALSE(ApiError::fromResponse(429, "", "Wed, 21 Oct 2015 07:28:00 GMT").retryAfter());
  EXPECT_FALSE(ApiError::fromResponse(429, "", "-1").retryAfter());
  EXPECT_FALSE(ApiError::fromResponse(429, "", "").retryAfter());
}

TEST(ApiErrorTest, Retriable) {
  EXPECT_TRUE(ApiError(ApiErrorKind::kTransport, 0, "", "refused").isRetriable());
  EXPECT_TRUE(ApiError(ApiErrorKind::kTimeout, 0, "", "deadline").isRetriable());
  EXPECT_TRUE(ApiError(ApiErrorKind::kServerError, 503, "", "").isRetriable());
  EXPECT_FALSE(ApiError(ApiErrorKind::kServerError, 501, "", "").isRetriable());
  EXPECT_FALSE(ApiError(ApiErrorKind::kInvalid, 422, "Invalid", "").isRetriable());
  EXPECT_FALSE(ApiError(ApiErrorKind::kGone, 410, "Expired", "").isRetriable());
}

TEST(ApiErrorTest, OnlyClientErrorsAreRefusals) {
  EXPECT_TRUE(ApiError(ApiErrorKind::kConflict, 409, "Conflict", "").isRefused());
  EXPECT_TRUE(ApiError(ApiErrorKind::kTooManyRequests, 429, "", "").isRefused());
  EXPECT_FALSE(ApiError(ApiErrorKind::kTransport, 0, "", "reset").isRefused());
  EXPECT_FALSE(ApiError(ApiErrorKind::kTimeout, 0, "", "deadline").isRefused());
  EXPECT_FALSE(ApiError(ApiErrorKind::kServerError, 500, "", "").isRefused());
}

TEST(ApiErrorTest, TransportErrorWhatHasNoHttpStatus) {
  ApiError e(ApiErrorKind::kTransport, 0, "", "GET https://h/api: Connection refused");
  EXPECT_STREQ(e.what(), "Transport: GET https://h/api: Connection refused");
}

TEST(ApiErrorTest, EveryKindHasAName) {
  for (auto kind : {ApiErrorKind::kNotFound, ApiErrorKind::kConflict, ApiErrorKind::kAlreadyExists,
                    ApiErrorKind::kGone, ApiErrorKind::kForbidden, ApiErrorKind::kUnauthorized,
                    ApiErrorKind::kTooManyRequests, ApiErrorKind::kBadRequest,
                    ApiErrorKind::kInvalid, ApiErrorKind::kServerError, ApiErrorKind::kTimeout,
                    ApiErrorKind::kTransport, ApiErrorKind::kOther}) {
    EXPECT_STRNE(toString(kind), "Unknown");
  }
  EXPECT_STREQ(toString(ApiErrorKind::kAlreadyExists), "AlreadyExists");
}

}  // namespace
}  // namespace ker

#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ker::nri {

// The gRPC status codes ttrpc carries in a Response (google.rpc.Code); only those this layer
// sends or tests for are named.
enum class RpcCode : int32_t {
  kOk = 0,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
};

// The outcome of an operation of this library: ok, or what went wrong and a message. Errors
// are values here, never exceptions, because a broken peer is an expected event on a socket.
class Status {
 public:
  enum class Code {
    kOk,
    kCorruption,  // bytes that are not the protocol: the connection cannot continue
    kTooLarge,    // a message over the size limit
    kIoError,     // the socket failed
    kClosed,      // the peer closed the connection
    kTimedOut,
    kRpcError,    // the peer answered with a non-OK ttrpc status (see rpcCode())
    kNotAllowed,  // a call the current state forbids
    kInvalidArgument,
  };

  Status() = default;
  static Status ok() { return Status(); }
  static Status corruption(std::string_view msg) { return Status(Code::kCorruption, msg); }
  static Status tooLarge(std::string_view msg) { return Status(Code::kTooLarge, msg); }
  static Status ioError(std::string_view msg) { return Status(Code::kIoError, msg); }
  static Status closed(std::string_view msg) { return Status(Code::kClosed, msg); }
  static Status timedOut(std::string_view msg) { return Status(Code::kTimedOut, msg); }
  static Status notAllowed(std::string_view msg) { return Status(Code::kNotAllowed, msg); }
  static Status invalidArgument(std::string_view msg) {
    return Status(Code::kInvalidArgument, msg);
  }
  static Status rpcError(RpcCode rpcCode, std::string_view msg);

  bool isOk() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  // For kRpcError, the peer's code; kOk when the status is ok, kUnknown for the other errors.
  RpcCode rpcCode() const { return rpcCode_; }
  const std::string& message() const { return message_; }
  // "ok", or the kind of error and its message, for logs.
  std::string toString() const;

 private:
  Status(Code code, std::string_view msg)
      : code_(code), rpcCode_(RpcCode::kUnknown), message_(msg) {}

  Code code_ = Code::kOk;
  RpcCode rpcCode_ = RpcCode::kOk;
  std::string message_;
};

}  // namespace ker::nri

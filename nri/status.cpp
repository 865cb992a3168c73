#include "nri/status.h"

namespace ker::nri {

Status Status::rpcError(RpcCode rpcCode, std::string_view msg) {
  Status s(Code::kRpcError, msg);
  s.rpcCode_ = rpcCode;
  return s;
}

std::string Status::toString() const {
  const char* kind = "ok";
  switch (code_) {
    case Code::kOk:
      return "ok";
    case Code::kCorruption:
      kind = "corruption";
      break;
    case Code::kTooLarge:
      kind = "too large";
      break;
    case Code::kIoError:
      kind = "I/O error";
      break;
    case Code::kClosed:
      kind = "closed";
      break;
    case Code::kTimedOut:
      kind = "timed out";
      break;
    case Code::kRpcError:
      return "rpc error (code " + std::to_string(static_cast<int32_t>(rpcCode_)) + "): " + message_;
    case Code::kNotAllowed:
      kind = "not allowed";
      break;
    case Code::kInvalidArgument:
      kind = "invalid argument";
      break;
  }
  return std::string(kind) + ": " + message_;
}

}  // namespace ker::nri

#include "nri/session.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "nri/proto/ttrpc.pb.h"

namespace ker::nri {
namespace {

int remainingMillis(std::chrono::steady_clock::time_point deadline) {
  auto left =
      std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
}

std::string errnoText(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

}  // namespace

Session::Session(int fd, RequestHandler* handler, Options options)
    : fd_(fd),
      handler_(handler),
      options_(options),
      serverIn_(options.maxMessageDataBytes),
      clientIn_(options.maxMessageDataBytes),
      readBuffer_(std::max<size_t>(options.readChunkBytes, 1)) {
  // Non-blocking, so that a write to a runtime that stopped reading obeys writeTimeout.
  int flags = fcntl(fd_, F_GETFL);
  if (flags < 0 || fcntl(fd_, F_SETFL, flags | O_NONBLOCK) < 0) {
    broken_ = Status::ioError(errnoText("fcntl O_NONBLOCK"));
  }
}

Session::~Session() {
  if (fd_ >= 0) {
    close(fd_);
  }
}

Status Session::fail(Status status) {
  if (broken_.isOk()) {
    broken_ = status;
  }
  return broken_;
}

Status Session::call(std::string_view service, std::string_view method, std::string_view request,
                     std::string* response, std::chrono::milliseconds timeout) {
  if (!broken_.isOk()) {
    return broken_;
  }
  if (inHandler_) {
    // A nested call would serve further requests from inside this handler.
    return Status::notAllowed("call() from inside a request handler");
  }
  auto deadline = Clock::now() + timeout;
  ker::ttrpc::Request req;
  req.set_service(std::string(service));
  req.set_method(std::string(method));
  req.set_payload(std::string(request));
  req.set_timeout_nano(std::chrono::nanoseconds(timeout).count());
  std::string message;
  uint32_t streamId = nextStreamId_;
  Status s = appendMessage(streamId, kMessageTypeRequest, 0, req.SerializeAsString(), &message,
                           options_.maxMessageDataBytes);
  if (!s.isOk()) {
    return s;
  }
  // Client streams are odd and increasing; a wrap would reuse IDs, so the session ends first.
  if (nextStreamId_ > UINT32_MAX - 2) {
    return fail(Status::notAllowed("ttrpc stream IDs exhausted"));
  }
  nextStreamId_ += 2;
  awaitedStreamId_ = streamId;
  awaitedDone_ = false;
  s = writeFrames(kRuntimeServiceConn, message);
  while (s.isOk() && !awaitedDone_) {
    if (Clock::now() >= deadline) {
      s = Status::timedOut(std::string(method) + ": no response from the runtime in " +
                           std::to_string(timeout.count()) + " ms");
      break;
    }
    s = pump(deadline);
  }
  awaitedStreamId_ = 0;  // a late response is dropped
  if (!s.isOk()) {
    return s;
  }
  if (awaitedStatus_.isOk()) {
    *response = std::move(awaitedPayload_);
  }
  return awaitedStatus_;
}

Status Session::serve(std::chrono::milliseconds timeout) {
  if (!broken_.isOk()) {
    return broken_;
  }
  if (inHandler_) {
    return Status::notAllowed("serve() from inside a request handler");
  }
  return pump(Clock::now() + timeout);
}

Status Session::hangUp(std::chrono::milliseconds timeout) {
  Status s = awaitPeerClose(timeout);
  fail(Status::closed("hung up"));
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
  return s;
}

Status Session::awaitPeerClose(std::chrono::milliseconds timeout) {
  if (broken_.code() == Status::Code::kClosed) {
    return Status::ok();
  }
  if (!broken_.isOk()) {
    return broken_;
  }
  if (inHandler_) {
    return Status::notAllowed("hangUp() from inside a request handler");
  }
  if (shutdown(fd_, SHUT_WR) != 0) {
    return Status::ioError(errnoText("shutdown"));
  }
  const auto deadline = Clock::now() + timeout;
  const auto late = [&] {
    return Status::timedOut("the runtime did not close its end of the connection in " +
                            std::to_string(timeout.count()) + " ms");
  };
  for (;;) {
    // A runtime that keeps writing keeps poll ready: the deadline ends the wait all the same.
    if (Clock::now() >= deadline) {
      return late();
    }
    pollfd p{.fd = fd_, .events = POLLIN};
    int ready = poll(&p, 1, remainingMillis(deadline));
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready < 0) {
      return Status::ioError(errnoText("poll"));
    }
    if (ready == 0) {
      return late();
    }
    ssize_t n = read(fd_, readBuffer_.data(), readBuffer_.size());
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) {
      continue;
    }
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {
      return Status::ok();
    }
    if (n < 0) {
      return Status::ioError(errnoText("read"));
    }
  }
}

bool Session::midMessage() const {
  return mux_.midFrame() || serverIn_.midMessage() || clientIn_.midMessage();
}

Status Session::pump(Clock::time_point deadline) {
  pollfd p{.fd = fd_, .events = POLLIN};
  int ready;
  do {
    ready = poll(&p, 1, remainingMillis(deadline));
  } while (ready < 0 && errno == EINTR);
  if (ready < 0) {
    return fail(Status::ioError(errnoText("poll")));
  }
  if (ready == 0) {
    return Status::ok();
  }
  ssize_t n;
  do {
    n = read(fd_, readBuffer_.data(), readBuffer_.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return Status::ok();
    }
    return fail(Status::ioError(errnoText("read")));
  }
  if (n == 0) {
    return fail(Status::closed(midMessage() ? "the runtime closed the connection mid-frame"
                                            : "the runtime closed the connection"));
  }
  mux_.feed(std::string_view(readBuffer_.data(), static_cast<size_t>(n)));
  for (;;) {
    MuxFrame frame;
    bool got = false;
    Status s = mux_.next(&frame, &got);
    if (!s.isOk()) {
      return fail(s);
    }
    if (!got) {
      break;
    }
    if (frame.conn == kPluginServiceConn) {
      serverIn_.feed(frame.payload);
    } else if (frame.conn == kRuntimeServiceConn) {
      clientIn_.feed(frame.payload);
    } else {
      ++droppedFrames_;
    }
  }
  Message message;
  for (;;) {
    auto kind = clientIn_.next(&message);
    if (kind == MessageDecoder::Result::kNeedMore) {
      break;
    }
    handleClientMessage(message, kind);
  }
  for (;;) {
    auto kind = serverIn_.next(&message);
    if (kind == MessageDecoder::Result::kNeedMore) {
      break;
    }
    Status s = handleServerMessage(message, kind);
    if (!s.isOk()) {
      return s;
    }
  }
  return Status::ok();
}

void Session::handleClientMessage(const Message& message, MessageDecoder::Result kind) {
  // Anything but the response to the waiting call (a late one, stream data) is dropped.
  if (awaitedStreamId_ == 0 || message.header.streamId != awaitedStreamId_ ||
      message.header.type != kMessageTypeResponse) {
    return;
  }
  awaitedDone_ = true;
  awaitedPayload_.clear();
  if (kind == MessageDecoder::Result::kOversized) {
    awaitedStatus_ = Status::tooLarge("response of " + std::to_string(message.header.length) +
                                      " bytes exceeds the limit");
    return;
  }
  ker::ttrpc::Response resp;
  if (!resp.ParseFromString(message.data)) {
    awaitedStatus_ = Status::corruption("undecodable ttrpc response");
    return;
  }
  if (resp.has_status() && resp.status().code() != 0) {
    awaitedStatus_ =
        Status::rpcError(static_cast<RpcCode>(resp.status().code()), resp.status().message());
    return;
  }
  awaitedStatus_ = Status::ok();
  awaitedPayload_ = std::move(*resp.mutable_payload());
}

Status Session::handleServerMessage(const Message& message, MessageDecoder::Result kind) {
  const MessageHeader& h = message.header;
  // The checks and codes of upstream's ttrpc server, so the runtime sees the same errors.
  if (kind == MessageDecoder::Result::kOversized) {
    return reply(h.streamId, RpcCode::kResourceExhausted,
                 "message length " + std::to_string(h.length) + " exceeds maximum message size",
                 {});
  }
  if (h.streamId % 2 != 1) {
    return reply(h.streamId, RpcCode::kInvalidArgument,
                 "StreamID must be odd for client initiated streams", {});
  }
  if (h.type == kMessageTypeData) {
    // Every method here is unary, so no stream is open for data.
    return reply(h.streamId, RpcCode::kInvalidArgument, "StreamID is no longer active", {});
  }
  if (h.type != kMessageTypeRequest) {
    return Status::ok();
  }
  if (h.streamId <= lastServedStreamId_) {
    return reply(h.streamId, RpcCode::kInvalidArgument,
                 "StreamID cannot be re-used and must increment", {});
  }
  lastServedStreamId_ = h.streamId;
  ker::ttrpc::Request req;
  if (!req.ParseFromString(message.data)) {
    return reply(h.streamId, RpcCode::kInvalidArgument, "unmarshal request error", {});
  }
  IncomingRequest in{.service = req.service(),
                     .method = req.method(),
                     .payload = req.payload(),
                     .timeout = std::chrono::nanoseconds(req.timeout_nano())};
  std::string response;
  ++servedRequests_;
  inHandler_ = true;
  Status s = handler_->handle(in, &response);
  inHandler_ = false;
  if (s.isOk()) {
    return reply(h.streamId, RpcCode::kOk, {}, response);
  }
  if (s.code() == Status::Code::kRpcError) {
    return reply(h.streamId, s.rpcCode(), s.message(), {});
  }
  return reply(h.streamId, RpcCode::kInternal, s.toString(), {});
}

Status Session::reply(uint32_t streamId, RpcCode code, std::string_view message,
                      std::string_view payload) {
  ker::ttrpc::Response resp;
  // Upstream leaves the status out of a successful response, so an empty reply is 0 bytes.
  if (code != RpcCode::kOk) {
    resp.mutable_status()->set_code(static_cast<int32_t>(code));
    resp.mutable_status()->set_message(std::string(message));
  }
  resp.set_payload(std::string(payload));
  std::string out;
  Status s = appendMessage(streamId, kMessageTypeResponse, 0, resp.SerializeAsString(), &out,
                           options_.maxMessageDataBytes);
  if (s.code() == Status::Code::kTooLarge) {
    // Upstream would drop the connection; refusing the one request is kinder.
    out.clear();
    ker::ttrpc::Response tooLarge;
    tooLarge.mutable_status()->set_code(static_cast<int32_t>(RpcCode::kResourceExhausted));
    tooLarge.mutable_status()->set_message(s.message());
    s = appendMessage(streamId, kMessageTypeResponse, 0, tooLarge.SerializeAsString(), &out,
                      options_.maxMessageDataBytes);
  }
  if (!s.isOk()) {
    return fail(s);
  }
  return writeFrames(kPluginServiceConn, out);
}

Status Session::writeFrames(uint32_t conn, std::string_view data) {
  std::string frames;
  appendMuxFrames(conn, data, &frames);
  auto deadline = Clock::now() + options_.writeTimeout;
  size_t done = 0;
  while (done < frames.size()) {
    ssize_t n = send(fd_, frames.data() + done, frames.size() - done, MSG_NOSIGNAL);
    if (n >= 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR) {
      continue;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return fail(errno == EPIPE || errno == ECONNRESET ? Status::closed(errnoText("send"))
                                                        : Status::ioError(errnoText("send")));
    }
    pollfd p{.fd = fd_, .events = POLLOUT};
    int ready = poll(&p, 1, remainingMillis(deadline));
    if (ready == 0) {
      // Part of a frame may be out: the stream cannot be continued.
      return fail(Status::timedOut("the runtime did not take " +
                                   std::to_string(frames.size() - done) + " bytes in " +
                                   std::to_string(options_.writeTimeout.count()) + " ms"));
    }
    if (ready < 0 && errno != EINTR) {
      return fail(Status::ioError(errnoText("poll")));
    }
  }
  return Status::ok();
}

}  // namespace ker::nri

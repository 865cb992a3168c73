#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "nri/mux.h"
#include "nri/proto/ttrpc.pb.h"
#include "nri/ttrpc_message.h"

namespace ker::nri::testing {

// The runtime's end of a socketpair, driven by hand from the test thread: the Session is
// synchronous, so what the runtime "says" can be written before the plugin waits for it.
class FakeRuntime {
 public:
  // Returns the plugin's end; the runtime keeps the other.
  int connect() {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      throw std::runtime_error("socketpair");
    }
    fd_ = fds[0];
    return fds[1];
  }
  ~FakeRuntime() { closeNow(); }

  // Takes the runtime's end of a connection accepted on a listening socket instead.
  void adopt(int fd) {
    closeNow();
    fd_ = fd;
    mux_ = MuxDecoder();
    decoders_.clear();
  }
  // Whether the plugin closed its end within `timeout`, reading (and dropping) what it writes
  // meanwhile.
  bool closedByPlugin(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{.fd = fd_, .events = POLLIN};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        return false;
      }
      char buf[4096];
      if (read(fd_, buf, sizeof buf) <= 0) {
        return true;
      }
    }
  }

  void closeNow() {
    if (fd_ >= 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  // Whether the plugin closed its socket altogether, not only its writing side: a write fails.
  bool fullyClosedByPlugin() {
    return send(fd_, "", 1, MSG_NOSIGNAL) < 0 && (errno == EPIPE || errno == ECONNRESET);
  }
  // The plugin reads end-of-file but may still write.
  void closeForWriting() { shutdown(fd_, SHUT_WR); }
  int fd() const { return fd_; }

  void sendRaw(const std::string& bytes) {
    // send, not write: a plugin that closed must fail the test, not kill it with SIGPIPE.
    if (send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(bytes.size())) {
      throw std::runtime_error("short write");
    }
  }
  void sendMessage(uint32_t conn, uint32_t stream, uint8_t type, const std::string& data,
                   uint8_t flags = 0) {
    std::string msg;
    if (!appendMessage(stream, type, flags, data, &msg).isOk()) {
      throw std::runtime_error("appendMessage");
    }
    std::string frames;
    appendMuxFrames(conn, msg, &frames);
    sendRaw(frames);
  }
  // A request of the runtime to the plugin service.
  void sendRequest(uint32_t stream, const std::string& method, const std::string& payload,
                   const std::string& service = "nri.pkg.api.v1alpha1.Plugin") {
    ker::ttrpc::Request req;
    req.set_service(service);
    req.set_method(method);
    req.set_payload(payload);
    req.set_timeout_nano(2'000'000'000);
    sendMessage(kPluginServiceConn, stream, kMessageTypeRequest, req.SerializeAsString());
  }
  // The runtime's answer to the plugin's call on stream `stream`.
  void sendResponse(uint32_t stream, const std::string& payload, int32_t code = 0,
                    const std::string& message = "") {
    ker::ttrpc::Response resp;
    if (code != 0) {
      resp.mutable_status()->set_code(code);
      resp.mutable_status()->set_message(message);
    }
    resp.set_payload(payload);
    sendMessage(kRuntimeServiceConn, stream, kMessageTypeResponse, resp.SerializeAsString());
  }

  // The next message the plugin wrote on `conn`, waiting up to `timeout`; nullopt if none.
  std::optional<Message> receive(uint32_t conn,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(1)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      Message m;
      if (decoders_[conn].next(&m) == MessageDecoder::Result::kMessage) {
        return m;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{.fd = fd_, .events = POLLIN};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        return std::nullopt;
      }
      char buf[65536];
      ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) {
        return std::nullopt;
      }
      mux_.feed(std::string_view(buf, static_cast<size_t>(n)));
      MuxFrame f;
      bool ready = false;
      while (mux_.next(&f, &ready).isOk() && ready) {
        maxFrame_ = std::max(maxFrame_, f.payload.size());
        decoders_[f.conn].feed(f.payload);
      }
    }
  }
  // The plugin's response on the plugin-service connection.
  std::optional<ker::ttrpc::Response> receiveResponse(uint32_t* stream = nullptr) {
    auto m = receive(kPluginServiceConn);
    if (!m || m->header.type != kMessageTypeResponse) {
      return std::nullopt;
    }
    if (stream != nullptr) {
      *stream = m->header.streamId;
    }
    ker::ttrpc::Response resp;
    if (!resp.ParseFromString(m->data)) {
      return std::nullopt;
    }
    return resp;
  }
  size_t largestFrameSeen() const { return maxFrame_; }

 private:
  int fd_ = -1;
  MuxDecoder mux_;
  std::map<uint32_t, MessageDecoder> decoders_;
  size_t maxFrame_ = 0;
};

}  // namespace ker::nri::testing

#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nri/mux.h"
#include "nri/status.h"
#include "nri/ttrpc_message.h"

namespace ker::nri {

// One request of the runtime to the plugin (a ttrpc Request on the plugin-service connection).
struct IncomingRequest {
  std::string_view service;
  std::string_view method;
  std::string_view payload;  // the serialized request message
  // The runtime's own deadline for this call (its plugin_request_timeout, 2 s by default);
  // zero when it sent none. Past it the runtime gives up on the plugin.
  std::chrono::nanoseconds timeout{0};
};

// Serves the plugin service. Called on the thread that drives the Session.
class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // Returns ok with the serialized response in *response, or an rpcError whose code and
  // message the runtime receives (a refused container creation, say). Any other error
  // status goes back as an Internal error with its text.
  virtual Status handle(const IncomingRequest& request, std::string* response) = 0;
};

// The plugin's end of an NRI connection, synchronous and single-threaded: a ttrpc client on
// the runtime-service connection and a ttrpc server on the plugin-service connection, over
// one connected unix stream socket. Every wait has a deadline; a peer that stalls or closes
// mid-frame ends the wait with an error instead of a hang.
class Session {
 public:
  struct Options {
    // How long a reply may wait for the socket to take it.
    std::chrono::milliseconds writeTimeout{2000};
    size_t maxMessageDataBytes = kMaxMessageDataBytes;
    size_t readChunkBytes = 64 * 1024;
  };

  // Takes ownership of fd (made non-blocking, closed by the destructor). handler must outlive
  // the session.
  Session(int fd, RequestHandler* handler, Options options);
  Session(int fd, RequestHandler* handler) : Session(fd, handler, Options{}) {}
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Calls `method` of `service` on the runtime and waits up to `timeout` for its response.
  // Requests the runtime sends meanwhile are served, because it may ask before it answers
  // (containerd sends Configure as soon as it has accepted RegisterPlugin). A non-OK answer
  // is kRpcError with the runtime's code and message. Not allowed from inside the handler.
  Status call(std::string_view service, std::string_view method, std::string_view request,
              std::string* response, std::chrono::milliseconds timeout);

  // Waits up to `timeout` for the runtime, then serves every request that has arrived. Ok when
  // the time passed without traffic too, so a caller can check for its own shutdown between
  // calls; kClosed once the runtime closed the connection.
  Status serve(std::chrono::milliseconds timeout);

  // Ends the session from this side: stops writing, so the runtime reads the end of the
  // connection, then reads (dropping what comes, which can no longer be answered) until the
  // runtime closes its end too, for at most `timeout`, and closes the socket. containerd
  // closes its end when it reads the end of the connection, and marks the plugin closed just
  // after that, on another of its threads. Ok when the runtime closed its end; timedOut when it
  // did not in time; the session's earlier error. The socket is closed either way.
  Status hangUp(std::chrono::milliseconds timeout);

  // The first error that ended the session (corruption, I/O error, closed), or ok. Once set,
  // call() and serve() return it without touching the socket.
  const Status& broken() const { return broken_; }
  // Frames on connection IDs neither side uses: dropped, as upstream's mux drops them.
  uint64_t droppedFrames() const { return droppedFrames_; }
  // Requests of the runtime answered so far, and whether part of a frame or message has been
  // read and the rest not yet: together they tell a caller that wants to close whether the
  // runtime is still talking.
  uint64_t servedRequests() const { return servedRequests_; }
  bool midMessage() const;

 private:
  using Clock = std::chrono::steady_clock;

  // hangUp's wait, before the socket is closed.
  Status awaitPeerClose(std::chrono::milliseconds timeout);
  // Reads what the socket has (waiting until deadline) and handles every complete message.
  Status pump(Clock::time_point deadline);
  Status handleServerMessage(const Message& message, MessageDecoder::Result kind);
  void handleClientMessage(const Message& message, MessageDecoder::Result kind);
  Status reply(uint32_t streamId, RpcCode code, std::string_view message, std::string_view payload);
  Status writeFrames(uint32_t conn, std::string_view data);
  Status fail(Status status);

  int fd_;
  RequestHandler* handler_;
  Options options_;
  MuxDecoder mux_;
  MessageDecoder serverIn_;  // kPluginServiceConn: requests from the runtime
  MessageDecoder clientIn_;  // kRuntimeServiceConn: responses to our calls
  std::vector<char> readBuffer_;
  uint32_t nextStreamId_ = 1;
  uint32_t lastServedStreamId_ = 0;
  bool inHandler_ = false;
  // The call waiting for its response, and that response once it came.
  uint32_t awaitedStreamId_ = 0;
  bool awaitedDone_ = false;
  Status awaitedStatus_;
  std::string awaitedPayload_;
  Status broken_;
  uint64_t droppedFrames_ = 0;
  uint64_t servedRequests_ = 0;
};

}  // namespace ker::nri

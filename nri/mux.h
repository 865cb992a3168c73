#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "nri/status.h"

namespace ker::nri {

// NRI's connection multiplexer (containerd/nri pkg/net/multiplex): several byte streams share
// one socket as frames of an 8-byte header, the connection ID then the payload length (both
// big-endian uint32), followed by the payload. There is no handshake: each side opens an ID
// and assumes the other did too. ID 0 is reserved.

inline constexpr size_t kMuxHeaderBytes = 8;
// The plugin serves the Plugin service on this connection; the runtime is its ttrpc client.
inline constexpr uint32_t kPluginServiceConn = 1;
// The runtime serves the Runtime service (RegisterPlugin, ...) here; the plugin is the client.
inline constexpr uint32_t kRuntimeServiceConn = 2;
// Upstream never writes a frame larger than one full ttrpc message (header + 4 MiB).
inline constexpr size_t kMaxMuxPayloadBytes = 10 + (size_t{4} << 20);
// Frame size this side writes. A Go peer reads each frame into its ttrpc bufio.Reader's
// 4096-byte buffer whenever that buffer is empty, and the mux fails the read (ENOMEM) when a
// frame does not fit, so larger frames are not safe to send even though upstream accepts
// them in its own framing.
inline constexpr size_t kMuxWriteChunkBytes = 4096;

struct MuxFrame {
  uint32_t conn = 0;
  std::string payload;
};

// Appends the frames that carry `data` on connection `conn` to *out, each with at most
// `chunk` payload bytes (one empty frame for empty data, as upstream writes it).
void appendMuxFrames(uint32_t conn, std::string_view data, std::string* out,
                     size_t chunk = kMuxWriteChunkBytes);

// Incremental, I/O-free decoder of the frames of one socket. Bytes may arrive in any pieces.
class MuxDecoder {
 public:
  explicit MuxDecoder(size_t maxPayloadBytes = kMaxMuxPayloadBytes);

  void feed(std::string_view bytes);
  // Sets *ready and fills *frame when a whole frame is buffered; clears *ready when more bytes
  // are needed. A frame on the reserved ID 0 or longer than the limit is corruption, and final:
  // the stream cannot be resynchronized, so every later call returns the same error. The
  // length is checked before any payload is buffered.
  Status next(MuxFrame* frame, bool* ready);
  // Bytes of an incomplete frame are buffered: a peer closing now closed mid-frame.
  bool midFrame() const { return pos_ < buffer_.size(); }

 private:
  size_t maxPayloadBytes_;
  std::string buffer_;
  size_t pos_ = 0;  // buffer_[0, pos_) is decoded already
  Status failed_;
};

}  // namespace ker::nri

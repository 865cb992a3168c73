#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "nri/status.h"

namespace ker::nri {

// ttrpc's framing (containerd/ttrpc channel.go, PROTOCOL.md): each message is a 10-byte header,
// data length and stream ID (big-endian uint32), type and flags (one byte each), then the data.
// Clients use odd stream IDs, increasing; a unary call is one Request and one Response on the
// same stream.

inline constexpr size_t kMessageHeaderBytes = 10;
inline constexpr size_t kMaxMessageDataBytes = size_t{4} << 20;

inline constexpr uint8_t kMessageTypeRequest = 1;
inline constexpr uint8_t kMessageTypeResponse = 2;
inline constexpr uint8_t kMessageTypeData = 3;

inline constexpr uint8_t kFlagRemoteClosed = 0x1;
inline constexpr uint8_t kFlagRemoteOpen = 0x2;
inline constexpr uint8_t kFlagNoData = 0x4;

struct MessageHeader {
  uint32_t length = 0;
  uint32_t streamId = 0;
  uint8_t type = 0;  // raw: upstream ignores types it does not know, and so must a reader
  uint8_t flags = 0;
};

struct Message {
  MessageHeader header;
  std::string data;
};

// Appends one message to *out. Data over maxDataBytes is refused with kTooLarge, as upstream's
// sender refuses it, and nothing is appended.
Status appendMessage(uint32_t streamId, uint8_t type, uint8_t flags, std::string_view data,
                     std::string* out, size_t maxDataBytes = kMaxMessageDataBytes);

// Incremental, I/O-free decoder of the messages of one byte stream (one mux connection).
class MessageDecoder {
 public:
  enum class Result {
    kNeedMore,
    kMessage,
    // A header announced more data than the limit. *out holds the header (so the stream can be
    // answered, as upstream answers RESOURCE_EXHAUSTED) and no data; the announced bytes are
    // skipped as they arrive, never buffered, and decoding resumes after them.
    kOversized,
  };

  explicit MessageDecoder(size_t maxDataBytes = kMaxMessageDataBytes);

  void feed(std::string_view bytes);
  Result next(Message* out);
  // Bytes of an incomplete message (or of an oversized one still being skipped) are pending.
  bool midMessage() const { return skip_ > 0 || pos_ < buffer_.size(); }

 private:
  size_t maxDataBytes_;
  std::string buffer_;
  size_t pos_ = 0;
  size_t skip_ = 0;  // bytes of an oversized message yet to discard
};

}  // namespace ker::nri

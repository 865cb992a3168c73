#pragma once

#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>

#include "common/api_client.h"

namespace ker {

// A watch stream that cannot be decoded (malformed JSON, unknown event type, oversize event).
// The stream is corrupt after this; the watch must be abandoned and restarted.
class WatchDecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Incremental, I/O-free decoder of a Kubernetes watch response body: newline-delimited JSON
// objects {"type": ..., "object": ...}. Bytes may be fed in arbitrary pieces (mid-line,
// mid-UTF-8, several events at once). Every complete event is handed to the sink in order.
class WatchDecoder {
 public:
  // Returns false to stop: no further event is delivered, and feed() returns false from then on.
  using Sink = std::function<bool(WatchEvent&&)>;

  static constexpr size_t kDefaultMaxEventBytes = size_t{64} << 20;

  explicit WatchDecoder(Sink sink, size_t maxEventBytes = kDefaultMaxEventBytes);

  // Decodes what is complete in data. Returns false once the sink asked to stop. Throws
  // WatchDecodeError on a malformed or oversize event, and whatever the sink throws.
  bool feed(const char* data, size_t size);
  // End of stream: a final event lacking its newline is still decoded; a truncated one throws.
  bool finish();

 private:
  bool decodeLine(size_t begin, size_t end);

  Sink sink_;
  size_t maxEventBytes_;
  std::string buffer_;
  size_t consumed_ = 0;  // buffer_[0, consumed_) is decoded already
  size_t scanned_ = 0;   // buffer_[consumed_, scanned_) holds no newline: never searched twice
  bool stopped_ = false;
};

// Parses one watch event object; throws WatchDecodeError when it is not one.
WatchEvent parseWatchEvent(nlohmann::json&& line);

}  // namespace ker

#include "nri/mux.h"

#include <algorithm>

#include "nri/bytes.h"

namespace ker::nri {

void appendMuxFrames(uint32_t conn, std::string_view data, std::string* out, size_t chunk) {
  chunk = std::max<size_t>(chunk, 1);
  size_t pos = 0;
  do {
    size_t n = std::min(chunk, data.size() - pos);
    appendBigEndian32(conn, out);
    appendBigEndian32(static_cast<uint32_t>(n), out);
    out->append(data.substr(pos, n));
    pos += n;
  } while (pos < data.size());
}

MuxDecoder::MuxDecoder(size_t maxPayloadBytes) : maxPayloadBytes_(maxPayloadBytes) {}

void MuxDecoder::feed(std::string_view bytes) {
  // Drop what is decoded before growing, so the buffer holds at most one frame plus one read.
  if (pos_ > 0 && (pos_ == buffer_.size() || pos_ >= buffer_.size() / 2)) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
  buffer_.append(bytes);
}

Status MuxDecoder::next(MuxFrame* frame, bool* ready) {
  *ready = false;
  if (!failed_.isOk()) {
    return failed_;
  }
  size_t avail = buffer_.size() - pos_;
  if (avail < kMuxHeaderBytes) {
    return Status::ok();
  }
  const char* p = buffer_.data() + pos_;
  uint32_t conn = readBigEndian32(p);
  uint32_t length = readBigEndian32(p + 4);
  if (conn == 0) {
    failed_ = Status::corruption("mux frame on reserved connection 0");
    return failed_;
  }
  if (length > maxPayloadBytes_) {
    failed_ = Status::corruption("mux frame of " + std::to_string(length) +
                                 " bytes exceeds the limit of " + std::to_string(maxPayloadBytes_));
    return failed_;
  }
  if (avail < kMuxHeaderBytes + length) {
    return Status::ok();
  }
  frame->conn = conn;
  frame->payload.assign(p + kMuxHeaderBytes, length);
  pos_ += kMuxHeaderBytes + length;
  *ready = true;
  return Status::ok();
}

}  // namespace ker::nri

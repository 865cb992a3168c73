#include "nri/ttrpc_message.h"

#include <algorithm>

#include "nri/bytes.h"

namespace ker::nri {

Status appendMessage(uint32_t streamId, uint8_t type, uint8_t flags, std::string_view data,
                     std::string* out, size_t maxDataBytes) {
  if (data.size() > maxDataBytes) {
    return Status::tooLarge("ttrpc message of " + std::to_string(data.size()) +
                            " bytes exceeds the limit of " + std::to_string(maxDataBytes));
  }
  appendBigEndian32(static_cast<uint32_t>(data.size()), out);
  appendBigEndian32(streamId, out);
  out->push_back(static_cast<char>(type));
  out->push_back(static_cast<char>(flags));
  out->append(data);
  return Status::ok();
}

MessageDecoder::MessageDecoder(size_t maxDataBytes) : maxDataBytes_(maxDataBytes) {}

void MessageDecoder::feed(std::string_view bytes) {
  size_t skipped = std::min(skip_, bytes.size());
  skip_ -= skipped;
  bytes.remove_prefix(skipped);
  if (pos_ > 0 && (pos_ == buffer_.size() || pos_ >= buffer_.size() / 2)) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
  buffer_.append(bytes);
}

MessageDecoder::Result MessageDecoder::next(Message* out) {
  if (skip_ > 0) {
    return Result::kNeedMore;
  }
  size_t avail = buffer_.size() - pos_;
  if (avail < kMessageHeaderBytes) {
    return Result::kNeedMore;
  }
  const char* p = buffer_.data() + pos_;
  MessageHeader header;
  header.length = readBigEndian32(p);
  header.streamId = readBigEndian32(p + 4);
  header.type = static_cast<uint8_t>(p[8]);
  header.flags = static_cast<uint8_t>(p[9]);
  if (header.length > maxDataBytes_) {
    pos_ += kMessageHeaderBytes;
    size_t buffered = std::min<size_t>(header.length, buffer_.size() - pos_);
    pos_ += buffered;
    skip_ = header.length - buffered;
    out->header = header;
    out->data.clear();
    return Result::kOversized;
  }
  if (avail < kMessageHeaderBytes + header.length) {
    return Result::kNeedMore;
  }
  out->header = header;
  out->data.assign(p + kMessageHeaderBytes, header.length);
  pos_ += kMessageHeaderBytes + header.length;
  return Result::kMessage;
}

}  // namespace ker::nri

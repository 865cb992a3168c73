#include "common/watch_decoder.h"

#include <utility>

namespace ker {

namespace {

// Quoted server-provided strings are cut to this length in error messages.
constexpr size_t kMaxQuoted = 64;

bool blank(const char* begin, const char* end) {
  for (const char* p = begin; p != end; ++p) {
    if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
      return false;
    }
  }
  return true;
}

std::string tooLarge(size_t limit) {
  return "watch event larger than " + std::to_string(limit) + " bytes";
}

}  // namespace

WatchEvent parseWatchEvent(nlohmann::json&& line) {
  if (!line.is_object()) {
    throw WatchDecodeError("watch event is not a JSON object");
  }
  auto type = line.find("type");
  if (type == line.end() || !type->is_string()) {
    throw WatchDecodeError("watch event has no type");
  }
  const auto& name = type->get_ref<const std::string&>();
  WatchEvent event{};
  if (name == "ADDED") {
    event.type = WatchEventType::kAdded;
  } else if (name == "MODIFIED") {
    event.type = WatchEventType::kModified;
  } else if (name == "DELETED") {
    event.type = WatchEventType::kDeleted;
  } else if (name == "BOOKMARK") {
    event.type = WatchEventType::kBookmark;
  } else if (name == "ERROR") {
    event.type = WatchEventType::kError;
  } else {
    throw WatchDecodeError("unknown watch event type \"" + name.substr(0, kMaxQuoted) + "\"");
  }
  auto object = line.find("object");
  if (object == line.end() || !object->is_object()) {
    throw WatchDecodeError("watch event " + name + " has no object");
  }
  event.object = std::move(*object);
  return event;
}

WatchDecoder::WatchDecoder(Sink sink, size_t maxEventBytes)
    : sink_(std::move(sink)), maxEventBytes_(maxEventBytes) {}

bool WatchDecoder::feed(const char* data, size_t size) {
  if (stopped_) {
    return false;
  }
  buffer_.append(data, size);
  for (;;) {
    size_t newline = buffer_.find('\n', scanned_);
    if (newline == std::string::npos) {
      break;
    }
    // Advanced before decoding so that an exception never replays a line on a later feed.
    size_t begin = consumed_;
    consumed_ = scanned_ = newline + 1;
    if (newline - begin > maxEventBytes_) {
      throw WatchDecodeError(tooLarge(maxEventBytes_));
    }
    if (!decodeLine(begin, newline)) {
      stopped_ = true;
      buffer_.clear();
      return false;
    }
  }
  buffer_.erase(0, consumed_);
  consumed_ = 0;
  scanned_ = buffer_.size();
  if (buffer_.size() > maxEventBytes_) {
    throw WatchDecodeError(tooLarge(maxEventBytes_));
  }
  return true;
}

bool WatchDecoder::finish() {
  if (stopped_) {
    return false;
  }
  size_t begin = consumed_;
  size_t end = buffer_.size();
  consumed_ = scanned_ = end;
  if (!nlohmann::json::accept(buffer_.begin() + begin, buffer_.end()) &&
      !blank(buffer_.data() + begin, buffer_.data() + end)) {
    throw WatchDecodeError("watch stream ended inside an event (" + std::to_string(end - begin) +
                           " bytes pending)");
  }
  bool keepGoing = decodeLine(begin, end);
  buffer_.clear();
  consumed_ = scanned_ = 0;
  stopped_ = !keepGoing;
  return keepGoing;
}

bool WatchDecoder::decodeLine(size_t begin, size_t end) {
  const char* first = buffer_.data() + begin;
  const char* last = buffer_.data() + end;
  if (blank(first, last)) {
    return true;
  }
  nlohmann::json line;
  try {
    line = nlohmann::json::parse(first, last);
  } catch (const nlohmann::json::parse_error& e) {
    throw WatchDecodeError(std::string("malformed watch event: ") + e.what());
  }
  return sink_(parseWatchEvent(std::move(line)));
}

}  // namespace ker

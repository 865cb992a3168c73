#include "common/watch_decoder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ker {
namespace {

struct Seen {
  WatchEventType type;
  std::string name;
  bool operator==(const Seen&) const = default;
};

// Decodes `stream` fed in the given pieces, then finishes.
std::vector<Seen> decode(const std::string& stream, const std::vector<size_t>& cuts) {
  std::vector<Seen> seen;
  WatchDecoder decoder([&](WatchEvent&& event) {
    seen.push_back({event.type, event.object.value("metadata", nlohmann::json::object())
                                    .value("name", event.object.value("reason", ""))});
    return true;
  });
  size_t from = 0;
  for (size_t cut : cuts) {
    decoder.feed(stream.data() + from, cut - from);
    from = cut;
  }
  decoder.feed(stream.data() + from, stream.size() - from);
  decoder.finish();
  return seen;
}

// Several events, non-ASCII names (multi-byte UTF-8 to split), a CRLF and a blank line.
const std::string kStream =
    R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"pod-ü-日本"}}})"
    "\n"
    R"({"type":"MODIFIED","object":{"kind":"Pod","metadata":{"name":"b","resourceVersion":"7"}}})"
    "\r\n\n"
    R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"name":"","resourceVersion":"9"}}})"
    "\n"
    R"({"type":"DELETED","object":{"kind":"Pod","metadata":{"name":"c"}}})"
    "\n"
    R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})"
    "\n";

const std::vector<Seen> kExpected = {
    {WatchEventType::kAdded, "pod-ü-日本"}, {WatchEventType::kModified, "b"},
    {WatchEventType::kBookmark, ""},        {WatchEventType::kDeleted, "c"},
    {WatchEventType::kError, "Expired"},
};

TEST(WatchDecoderTest, WholeStreamInOneChunk) {
  EXPECT_EQ(decode(kStream, {}), kExpected);
}

TEST(WatchDecoderTest, SplitAtEveryByteBoundary) {
  for (size_t cut = 0; cut <= kStream.size(); ++cut) {
    EXPECT_EQ(decode(kStream, {cut}), kExpected) << "split at " << cut;
  }
}

TEST(WatchDecoderTest, SplitAtEveryPairOfBoundaries) {
  for (size_t a = 0; a <= kStream.size(); a += 3) {
    for (size_t b = a; b <= kStream.size(); b += 5) {
      ASSERT_EQ(decode(kStream, {a, b}), kExpected) << "split at " << a << " and " << b;
    }
  }
}

TEST(WatchDecoderTest, OneByteAtATime) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < kStream.size(); ++i) {
    cuts.push_back(i);
  }
  EXPECT_EQ(decode(kStream, cuts), kExpected);
}

TEST(WatchDecoderTest, BookmarkKeepsItsObject) {
  std::vector<WatchEvent> events;
  WatchDecoder decoder([&](WatchEvent&& e) {
    events.push_back(std::move(e));
    return true;
  });
  std::string line =
      R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"12345"}}})"
      "\n";
  decoder.feed(line.data(), line.size());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, WatchEventType::kBookmark);
  EXPECT_EQ(events[0].object["metadata"]["resourceVersion"], "12345");
}

TEST(WatchDecoderTest, ErrorEventCarriesItsStatus) {
  std::vector<WatchEvent> events;
  WatchDecoder decoder([&](WatchEvent&& e) {
    events.push_back(std::move(e));
    return true;
  });
  std::string line = R"({"type":"ERROR","object":{"kind":"Status","status":"Failure","code":410,)"
                     R"j("reason":"Expired","message":"too old resource version: 1 (2)"}})j"
                     "\n";
  decoder.feed(line.data(), line.size());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, WatchEventType::kError);
  EXPECT_EQ(events[0].object["code"], 410);
  EXPECT_EQ(events[0].object["reason"], "Expired");
}

TEST(WatchDecoderTest, SinkStopsDecoding) {
  int delivered = 0;
  WatchDecoder decoder([&](WatchEvent&&) { return ++delivered < 2; });
  EXPECT_FALSE(decoder.feed(kStream.data(), kStream.size()));
  EXPECT_EQ(delivered, 2);
  EXPECT_FALSE(decoder.feed(kStream.data(), kStream.size()));
  EXPECT_FALSE(decoder.finish());
  EXPECT_EQ(delivered, 2);
}

TEST(WatchDecoderTest, SinkExceptionDoesNotReplayTheEvent) {
  std::vector<WatchEventType> types;
  bool fail = true;
  WatchDecoder decoder([&](WatchEvent&& e) {
    if (fail) {
      fail = false;
      throw std::runtime_error("sink failed");
    }
    types.push_back(e.type);
    return true;
  });
  EXPECT_THROW(decoder.feed(kStream.data(), kStream.size()), std::runtime_error);
  decoder.feed("", 0);
  EXPECT_EQ(types,
            (std::vector<WatchEventType>{WatchEventType::kModified, WatchEventType::kBookmark,
                                         WatchEventType::kDeleted, WatchEventType::kError}));
}

void expectDecodeError(const std::string& stream, const std::string& messagePart) {
  WatchDecoder decoder([](WatchEvent&&) { return true; });
  try {
    decoder.feed(stream.data(), stream.size());
    decoder.finish();
    ADD_FAILURE() << "no error for: " << stream;
  } catch (const WatchDecodeError& e) {
    EXPECT_NE(std::string(e.what()).find(messagePart), std::string::npos) << e.what();
  }
}

TEST(WatchDecoderTest, MalformedInputIsAnError) {
  expectDecodeError("{\"type\":\"ADDED\",\"object\":{\n", "malformed watch event");
  expectDecodeError("not json\n", "malformed watch event");
  expectDecodeError("[1,2]\n", "not a JSON object");
  expectDecodeError("{\"object\":{}}\n", "has no type");
  expectDecodeError("{\"type\":\"RENAMED\",\"object\":{}}\n",
                    "unknown watch event type \"RENAMED\"");
  expectDecodeError("{\"type\":\"ADDED\"}\n", "has no object");
  expectDecodeError("{\"type\":\"ADDED\",\"object\":\"x\"}\n", "has no object");
  // Invalid UTF-8 inside a string.
  expectDecodeError("{\"type\":\"ADDED\",\"object\":{\"a\":\"\xff\"}}\n", "malformed watch event");
}

TEST(WatchDecoderTest, TruncatedFinalEventIsAnError) {
  expectDecodeError(R"({"type":"ADDED","object":{"metadata":)", "ended inside an event");
}

TEST(WatchDecoderTest, FinalEventWithoutNewlineIsDecoded) {
  std::string stream = R"({"type":"ADDED","object":{"metadata":{"name":"last"}}})";
  EXPECT_EQ(decode(stream, {10}), (std::vector<Seen>{{WatchEventType::kAdded, "last"}}));
  EXPECT_TRUE(decode("  \r\n", {}).empty());
}

TEST(WatchDecoderTest, OversizeEventIsAnErrorNotUnboundedGrowth) {
  WatchDecoder decoder([](WatchEvent&&) { return true; }, 1024);
  std::string chunk(600, ' ');
  decoder.feed(chunk.data(), chunk.size());
  EXPECT_THROW(decoder.feed(chunk.data(), chunk.size()), WatchDecodeError);
}

TEST(WatchDecoderTest, OversizeCompleteLineIsAnError) {
  WatchDecoder decoder([](WatchEvent&&) { return true; }, 64);
  std::string line =
      R"({"type":"ADDED","object":{"metadata":{"name":")" + std::string(100, 'x') + "\"}}}\n";
  EXPECT_THROW(decoder.feed(line.data(), line.size()), WatchDecodeError);
}

TEST(WatchDecoderTest, EventsUpToTheLimitPass) {
  std::string line = R"({"type":"ADDED","object":{}})";
  int delivered = 0;
  WatchDecoder decoder(
      [&](WatchEvent&&) {
        ++delivered;
        return true;
      },
      line.size());
  std::string stream = line + "\n" + line + "\n";
  EXPECT_TRUE(decoder.feed(stream.data(), stream.size()));
  EXPECT_EQ(delivered, 2);
}

}  // namespace
}  // namespace ker

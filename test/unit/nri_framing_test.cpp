#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nri/mux.h"
#include "nri/ttrpc_message.h"

namespace ker::nri {
namespace {

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) {
    s.push_back(static_cast<char>(c));
  }
  return s;
}

// Decodes every frame of `stream` fed one byte at a time.
std::vector<MuxFrame> decodeBytewise(const std::string& stream, Status* status) {
  MuxDecoder decoder;
  std::vector<MuxFrame> frames;
  for (char c : stream) {
    decoder.feed(std::string_view(&c, 1));
    for (;;) {
      MuxFrame f;
      bool ready = false;
      *status = decoder.next(&f, &ready);
      if (!status->isOk() || !ready) {
        break;
      }
      frames.push_back(f);
    }
    if (!status->isOk()) {
      break;
    }
  }
  return frames;
}

// Upstream (pkg/net/multiplex/mux.go) writes PutUint32 BigEndian of the ConnID, then of the
// length, then the payload.
TEST(NriMux, EncodesHeaderBigEndianIdThenLength) {
  std::string out;
  appendMuxFrames(kRuntimeServiceConn, "abc", &out);
  EXPECT_EQ(out, bytes({0, 0, 0, 2, 0, 0, 0, 3}) + "abc");
  out.clear();
  appendMuxFrames(0x01020304, std::string(0x0105, 'x'), &out, 1 << 16);
  EXPECT_EQ(out.substr(0, 8), bytes({1, 2, 3, 4, 0, 0, 1, 5}));
}

TEST(NriMux, EmptyDataIsOneEmptyFrame) {
  std::string out;
  appendMuxFrames(kPluginServiceConn, "", &out);
  EXPECT_EQ(out, bytes({0, 0, 0, 1, 0, 0, 0, 0}));
}

TEST(NriMux, SplitsLargeDataIntoChunksTheGoReaderAccepts) {
  std::string data(2 * kMuxWriteChunkBytes + 7, 'd');
  std::string out;
  appendMuxFrames(kPluginServiceConn, data, &out);
  Status s;
  auto frames = decodeBytewise(out, &s);
  ASSERT_TRUE(s.isOk()) << s.toString();
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].payload.size(), kMuxWriteChunkBytes);
  EXPECT_EQ(frames[1].payload.size(), kMuxWriteChunkBytes);
  EXPECT_EQ(frames[2].payload.size(), 7u);
  EXPECT_EQ(frames[0].payload + frames[1].payload + frames[2].payload, data);
}

TEST(NriMux, DecodesFramesSplitAnywhere) {
  std::string stream;
  appendMuxFrames(1, "first", &stream);
  appendMuxFrames(2, "", &stream);
  appendMuxFrames(7, "third", &stream);
  Status s;
  auto frames = decodeBytewise(stream, &s);
  ASSERT_TRUE(s.isOk());
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].conn, 1u);
  EXPECT_EQ(frames[0].payload, "first");
  EXPECT_EQ(frames[1].conn, 2u);
  EXPECT_EQ(frames[1].payload, "");
  // The decoder passes unknown IDs on; the session decides to drop them.
  EXPECT_EQ(frames[2].conn, 7u);
}

TEST(NriMux, TruncatedFrameWaitsAndIsReportedMidFrame) {
  std::string stream;
  appendMuxFrames(1, "payload", &stream);
  MuxDecoder decoder;
  decoder.feed(std::string_view(stream).substr(0, stream.size() - 1));
  MuxFrame f;
  bool ready = true;
  EXPECT_TRUE(decoder.next(&f, &ready).isOk());
  EXPECT_FALSE(ready);
  EXPECT_TRUE(decoder.midFrame());
  decoder.feed(std::string_view(stream).substr(stream.size() - 1));
  EXPECT_TRUE(decoder.next(&f, &ready).isOk());
  EXPECT_TRUE(ready);
  EXPECT_FALSE(decoder.midFrame());
}

TEST(NriMux, OversizedLengthIsCorruptionBeforeAnyPayload) {
  MuxDecoder decoder;
  // 0xffffffff bytes announced; only the header is ever given.
  decoder.feed(bytes({0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff}));
  MuxFrame f;
  bool ready = true;
  Status s = decoder.next(&f, &ready);
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(s.message().find("exceeds"), std::string::npos) << s.message();
  EXPECT_FALSE(ready);
  // Final: more bytes do not revive it.
  decoder.feed("more");
  EXPECT_EQ(decoder.next(&f, &ready).code(), Status::Code::kCorruption);
}

TEST(NriMux, LimitIsUpstreamsOneFullTtrpcMessage) {
  EXPECT_EQ(kMaxMuxPayloadBytes, kMessageHeaderBytes + kMaxMessageDataBytes);
  MuxDecoder decoder;
  std::string header;
  header += bytes({0, 0, 0, 1});
  uint32_t atLimit = static_cast<uint32_t>(kMaxMuxPayloadBytes);
  header += bytes({int(atLimit >> 24), int(atLimit >> 16 & 0xff), int(atLimit >> 8 & 0xff),
                   int(atLimit & 0xff)});
  decoder.feed(header);
  MuxFrame f;
  bool ready = true;
  EXPECT_TRUE(decoder.next(&f, &ready).isOk());  // at the limit: waits for its payload
  EXPECT_FALSE(ready);
}

TEST(NriMux, ReservedConnectionZeroIsCorruption) {
  MuxDecoder decoder;
  decoder.feed(bytes({0, 0, 0, 0, 0, 0, 0, 0}));
  MuxFrame f;
  bool ready = true;
  EXPECT_EQ(decoder.next(&f, &ready).code(), Status::Code::kCorruption);
}

// ttrpc channel.go: BigEndian length, BigEndian stream ID, type byte, flags byte, data.
TEST(NriTtrpc, EncodesTheTenByteHeader) {
  std::string out;
  ASSERT_TRUE(appendMessage(0x0305, kMessageTypeRequest, 0, "hello", &out).isOk());
  EXPECT_EQ(out, bytes({0, 0, 0, 5, 0, 0, 3, 5, 1, 0}) + "hello");
  out.clear();
  ASSERT_TRUE(appendMessage(2, kMessageTypeData, kFlagRemoteClosed | kFlagNoData, "", &out).isOk());
  EXPECT_EQ(out, bytes({0, 0, 0, 0, 0, 0, 0, 2, 3, 5}));
}

TEST(NriTtrpc, RefusesToEncodeOverTheLimit) {
  std::string out;
  Status s = appendMessage(1, kMessageTypeResponse, 0, std::string(17, 'x'), &out, 16);
  EXPECT_EQ(s.code(), Status::Code::kTooLarge);
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(appendMessage(1, kMessageTypeResponse, 0, std::string(16, 'x'), &out, 16).isOk());
}

TEST(NriTtrpc, DecodesMessagesSplitAnywhereWithUnknownTypesPassedOn) {
  std::string stream;
  ASSERT_TRUE(appendMessage(1, kMessageTypeRequest, 0, "req", &stream).isOk());
  ASSERT_TRUE(appendMessage(3, 0x7f, 0x80, "", &stream).isOk());
  ASSERT_TRUE(appendMessage(5, kMessageTypeResponse, 0, std::string(5000, 'r'), &stream).isOk());
  MessageDecoder decoder;
  std::vector<Message> got;
  for (size_t i = 0; i < stream.size(); i += 3) {
    decoder.feed(std::string_view(stream).substr(i, 3));
    Message m;
    while (decoder.next(&m) == MessageDecoder::Result::kMessage) {
      got.push_back(m);
    }
  }
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].header.streamId, 1u);
  EXPECT_EQ(got[0].header.type, kMessageTypeRequest);
  EXPECT_EQ(got[0].data, "req");
  EXPECT_EQ(got[1].header.type, 0x7f);
  EXPECT_EQ(got[1].header.flags, 0x80);
  EXPECT_EQ(got[2].data.size(), 5000u);
  EXPECT_FALSE(decoder.midMessage());
}

TEST(NriTtrpc, OversizedMessageIsSkippedWithoutBufferingThenDecodingResumes) {
  const size_t limit = 64;
  std::string stream;
  ASSERT_TRUE(appendMessage(7, kMessageTypeRequest, 0, std::string(1000, 'o'), &stream).isOk());
  ASSERT_TRUE(appendMessage(9, kMessageTypeRequest, 0, "after", &stream).isOk());
  MessageDecoder decoder(limit);
  std::vector<std::pair<MessageDecoder::Result, Message>> got;
  for (size_t i = 0; i < stream.size(); i += 100) {
    decoder.feed(std::string_view(stream).substr(i, 100));
    Message m;
    for (auto r = decoder.next(&m); r != MessageDecoder::Result::kNeedMore; r = decoder.next(&m)) {
      got.emplace_back(r, m);
    }
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].first, MessageDecoder::Result::kOversized);
  EXPECT_EQ(got[0].second.header.streamId, 7u);
  EXPECT_EQ(got[0].second.header.length, 1000u);
  EXPECT_TRUE(got[0].second.data.empty());
  EXPECT_EQ(got[1].first, MessageDecoder::Result::kMessage);
  EXPECT_EQ(got[1].second.data, "after");
}

TEST(NriTtrpc, HugeAnnouncedLengthAllocatesNothing) {
  MessageDecoder decoder;
  decoder.feed(bytes({0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 1, 0}));
  Message m;
  EXPECT_EQ(decoder.next(&m), MessageDecoder::Result::kOversized);
  EXPECT_TRUE(decoder.midMessage());  // still skipping what the header announced
  decoder.feed(std::string(4096, 'g'));
  EXPECT_EQ(decoder.next(&m), MessageDecoder::Result::kNeedMore);
}

TEST(NriTtrpc, TruncatedMessageWaits) {
  std::string stream;
  ASSERT_TRUE(appendMessage(1, kMessageTypeRequest, 0, "abcdef", &stream).isOk());
  MessageDecoder decoder;
  decoder.feed(std::string_view(stream).substr(0, 12));
  Message m;
  EXPECT_EQ(decoder.next(&m), MessageDecoder::Result::kNeedMore);
  EXPECT_TRUE(decoder.midMessage());
}

}  // namespace
}  // namespace ker::nri

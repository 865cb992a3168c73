#include "scheduler/wire/json_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "scheduler/wire/extender_wire.h"

namespace ker {
namespace {

using nlohmann::json;

bool readerAccepts(const std::string& text) {
  try {
    JsonReader r(text, 64);
    r.skip();
    r.finish();
    return true;
  } catch (const WireError&) {
    return false;
  }
}

// The reader stands in for nlohmann::json::parse on the hot path, so it must accept and
// refuse exactly the same documents.
TEST(JsonReader, AcceptsWhatNlohmannAccepts) {
  const std::string docs[] = {"{}",
                              "[]",
                              "\"\"",
                              "0",
                              "-0",
                              "01",
                              "1.",
                              ".5",
                              "-",
                              "1e",
                              "1e+",
                              "1E-2",
                              "1.5e3",
                              "-12",
                              "1e999",
                              "-1e400",
                              "1e308",
                              "18446744073709551616",
                              "184467440737095516160000000000",
                              std::string(400, '9'),
                              "true",
                              "false",
                              "null",
                              "tru",
                              "nul",
                              "nulls",
                              "[1,]",
                              "[,1]",
                              "{\"a\":1,}",
                              "{\"a\" 1}",
                              "{1:2}",
                              "{\"a\":1 \"b\":2}",
                              " [ 1 , 2 ]\n",
                              "[1] x",
                              "",
                              " ",
                              "\"\\u0041\"",
                              "\"\\ud83d\\ude00\"",
                              "\"\\ud800\"",
                              "\"\\udc00\"",
                              "\"\\ud800\\u0041\"",
                              "\"\\ud800x\"",
                              "\"\\u12\"",
                              "\"\\uZZZZ\"",
                              "\"\\x\"",
                              "\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"",
                              "\"a\tb\"",
                              "\"a\x01\"",
                              "\"\x7f\"",
                              "\"\xc3\xa9\"",
                              "\"\xc0\xaf\"",
                              "\"\xc2\"",
                              "\"\xed\xa0\x80\"",
                              "\"\xef\xbf\xbf\"",
                              "\"\xf0\x9f\x98\x80\"",
                              "\"\xf4\x8f\xbf\xbf\"",
                              "\"\xf4\x90\x80\x80\"",
                              "\"\xf8\x88\x80\x80\x80\"",
                              "\"\xff\"",
                              "\"unterminated",
                              "\xEF\xBB\xBF{}",
                              "{\"a\":{\"b\":[1,{\"c\":null}]}}",
                              "[\"a\",]",
                              "{\"a\":}",
                              "[1 2]",
                              "{\"a\":1}{}",
                              "\"\\u0000\"",
                              "-01",
                              "-.1",
                              "1.e5",
                              "[true,false,null]"};
  for (const auto& doc : docs) {
    EXPECT_EQ(readerAccepts(doc), json::accept(doc)) << "document: " << doc;
  }
}

TEST(JsonReader, DecodesStringsAsNlohmannDoes) {
  const std::string docs[] = {"\"plain\"",
                              "\"\\u0041\\u00e9\\u4e2d\"",
                              "\"\\ud83d\\ude00\"",
                              "\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"",
                              "\"\xc3\xa9\xf0\x9f\x98\x80\"",
                              "\"\\u0000x\""};
  for (const auto& doc : docs) {
    JsonReader r(doc, 64);
    EXPECT_EQ(r.readString(), json::parse(doc).get<std::string>()) << doc;
  }
}

TEST(JsonReader, WalksObjectsAndSkipsValuesToTheirExactBytes) {
  const std::string doc = R"( {"a" : [1, {"x":"}"}] , "b\u0063":"s", "d":{} } )";
  JsonReader r(doc, 64);
  ASSERT_EQ(r.peek(), JsonReader::Kind::kObject);
  r.openObject();
  std::string key;
  ASSERT_TRUE(r.next(key));
  EXPECT_EQ(key, "a");
  EXPECT_EQ(r.skip(), R"([1, {"x":"}"}])");
  ASSERT_TRUE(r.next(key));
  EXPECT_EQ(key, "bc");
  EXPECT_EQ(r.readString(), "s");
  ASSERT_TRUE(r.next(key));
  EXPECT_EQ(key, "d");
  r.openObject();
  EXPECT_FALSE(r.next(key));
  EXPECT_FALSE(r.next(key));
  r.finish();
}

// An array's elements read as the NodeNames loop reads them (plainStrings, next() for what it
// leaves) or by next() alone: the same strings in the same order, or the same error.
std::string readArray(const std::string& doc, bool plainFirst) {
  std::string out;
  try {
    JsonReader r(doc, 64);
    r.openArray();
    std::string scratch;
    auto element = [&] {
      out += r.peek() == JsonReader::Kind::kString
                 ? "[" + std::string(r.readStringView(scratch)) + "]"
                 : "<" + std::string(r.skip()) + ">";
    };
    while (plainFirst) {
      std::vector<std::string_view> views;
      const bool closed = r.plainStrings(views);
      for (const auto v : views) {
        out += "[" + std::string(v) + "]";
      }
      if (closed || !r.next()) {
        break;
      }
      element();
    }
    while (!plainFirst && r.next()) {
      element();
    }
    r.finish();
  } catch (const WireError& e) {
    out += std::string(" error: ") + e.what();
  }
  return out;
}

TEST(JsonReader, PlainStringsReadAsNextAndReadStringViewDo) {
  const std::string docs[] = {"[]",
                              " [ ] ",
                              R"(["a","b"])",
                              " [ \"a\" ,\n\t\"b\" ] ",
                              R"(["a",1,"b",null,"c"])",
                              R"([1,"a"])",
                              R"(["\u0041x","b"])",
                              "[\"\xc3\xa9\",\"b\"]",
                              "[\"\xc3\",\"b\"]",
                              "[\"ctl\x01\"]",
                              R"(["a",])",
                              R"(["a" "b"])",
                              R"(["a")",
                              R"(["a)",
                              R"(["a\"b","c"])",
                              R"(["a"] x)"};
  for (const auto& doc : docs) {
    EXPECT_EQ(readArray(doc, true), readArray(doc, false)) << doc;
  }
  // Only plain strings: plainStrings reads them all and closes the array.
  JsonReader r(R"(["node-1", "node-2"])", 64);
  r.openArray();
  std::vector<std::string_view> views;
  EXPECT_TRUE(r.plainStrings(views));
  EXPECT_EQ(views, (std::vector<std::string_view>{"node-1", "node-2"}));
  r.finish();
}

TEST(JsonReader, BoundsNesting) {
  auto nested = [](int n) { return std::string(n, '[') + std::string(n, ']'); };
  EXPECT_TRUE(readerAccepts(nested(64)));
  try {
    JsonReader(nested(65), 64).skip();
    ADD_FAILURE() << "65 levels accepted";
  } catch (const WireError& e) {
    EXPECT_NE(std::string(e.what()).find("nested deeper than 64 levels"), std::string::npos);
  }
}

TEST(AppendJsonString, EscapesAsNlohmannDump) {
  const std::string strings[] = {"",
                                 "node-a",
                                 "say \"hi\"",
                                 "back\\slash",
                                 "tab\there",
                                 std::string("nul\0byte", 8),
                                 "\x01\x1f\x7f",
                                 "caf\xc3\xa9",
                                 "\xf0\x9f\x98\x80 <&>",
                                 "line\nbreak\r\n"};
  for (const auto& s : strings) {
    std::string out;
    appendJsonString(out, s);
    EXPECT_EQ(out, json(s).dump()) << s;
    EXPECT_EQ(json::parse(out).get<std::string>(), s);
  }
}

TEST(AppendJsonString, ReplacesInvalidUtf8) {
  std::string out;
  appendJsonString(out,
                   "a\xff"
                   "b\xc3");
  EXPECT_EQ(out,
            "\"a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD\"");
  EXPECT_TRUE(json::accept(out));
}

}  // namespace
}  // namespace ker

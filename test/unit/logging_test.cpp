#include "common/logging.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <regex>
#include <sstream>
#include <thread>
#include <vector>

namespace ker::log {
namespace {

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) {
    out.push_back(l);
  }
  return out;
}

// Each test points the process-wide logger at its own stream and restores stderr after.
class LoggingTest : public ::testing::Test {
 protected:
  void TearDown() override { init(Format::kText, 0); }
  std::ostringstream out;
};

TEST_F(LoggingTest, ParseFormat) {
  EXPECT_EQ(parseFormat("text"), Format::kText);
  EXPECT_EQ(parseFormat("json"), Format::kJson);
  EXPECT_EQ(parseFormat("JSON"), std::nullopt);
  EXPECT_EQ(parseFormat(""), std::nullopt);
}

TEST_F(LoggingTest, JsonLinesCarryFieldsAndEscape) {
  init(Format::kJson, 0, &out);
  info("bound \"pod\"\nnext", {{"pod", "ns/p"}, {"count", 3}, {"ok", true}, {"msg", "clash"}});
  warn("careful");
  error("bad", {{"err", "x\ty"}});

  auto ls = lines(out.str());
  ASSERT_EQ(ls.size(), 3u) << out.str();
  auto first = nlohmann::json::parse(ls[0]);
  EXPECT_EQ(first["level"], "info");
  EXPECT_EQ(first["msg"], "bound \"pod\"\nnext");
  EXPECT_EQ(first["pod"], "ns/p");
  EXPECT_EQ(first["count"], 3);
  EXPECT_EQ(first["ok"], true);
  EXPECT_TRUE(std::regex_match(first["ts"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)")))
      << first["ts"];
  // ts, level and msg come first, in that order.
  EXPECT_EQ(ls[0].rfind("{\"ts\":", 0), 0u) << ls[0];
  EXPECT_LT(ls[0].find("\"level\""), ls[0].find("\"msg\""));
  EXPECT_EQ(nlohmann::json::parse(ls[1])["level"], "warning");
  auto third = nlohmann::json::parse(ls[2]);
  EXPECT_EQ(third["level"], "error");
  EXPECT_EQ(third["err"], "x\ty");
}

TEST_F(LoggingTest, JsonSurvivesInvalidUtf8) {
  init(Format::kJson, 0, &out);
  info(std::string("bad \xff byte"), {{"v", std::string("\xc3")}});
  auto ls = lines(out.str());
  ASSERT_EQ(ls.size(), 1u);
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(ls[0])) << ls[0];
  EXPECT_EQ(j["v"].get<std::string>(), "\xEF\xBF\xBD");  // U+FFFD, the replacement character
}

TEST_F(LoggingTest, TextLinesAreKlogLike) {
  init(Format::kText, 0, &out);
  info("synced", {{"informer", "pods"}, {"items", 12}});
  error("multi\nline", {{"value", "a\"b\nc"}});

  auto ls = lines(out.str());
  ASSERT_EQ(ls.size(), 2u) << out.str();
  EXPECT_TRUE(std::regex_match(
      ls[0], std::regex(R"(I\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+\] synced informer="pods" items=12)")))
      << ls[0];
  // Newlines are escaped so one record is always one line.
  EXPECT_EQ(ls[1].front(), 'E');
  EXPECT_NE(ls[1].find(R"(] multi\nline value="a\"b\nc")"), std::string::npos) << ls[1];
}

TEST_F(LoggingTest, VerbosityGatesVLevels) {
  init(Format::kText, 2, &out);
  EXPECT_EQ(verbosity(), 2);
  EXPECT_TRUE(v(0));
  EXPECT_TRUE(v(2));
  EXPECT_FALSE(v(3));
  EXPECT_FALSE(spdlog::default_logger()->should_log(spdlog::level::debug));
  init(Format::kText, 4, &out);
  EXPECT_TRUE(spdlog::default_logger()->should_log(spdlog::level::debug));
  EXPECT_FALSE(spdlog::default_logger()->should_log(spdlog::level::trace));
}

TEST_F(LoggingTest, SpdlogCallsShareTheFormat) {
  init(Format::kJson, 0, &out);
  spdlog::info("from spdlog {}", 7);
  auto ls = lines(out.str());
  ASSERT_EQ(ls.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(ls[0])["msg"], "from spdlog 7");
}

TEST_F(LoggingTest, ConcurrentWritersNeverInterleave) {
  init(Format::kJson, 0, &out);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) {
        info("tick", {{"thread", t}, {"i", i}});
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  auto ls = lines(out.str());
  ASSERT_EQ(ls.size(), 800u);
  for (const auto& l : ls) {
    auto j = nlohmann::json::parse(l);
    ASSERT_EQ(j["msg"], "tick");
    ASSERT_TRUE(j.contains("thread") && j.contains("i")) << l;
  }
}

}  // namespace
}  // namespace ker::log

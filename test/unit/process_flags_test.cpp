#include "common/process_flags.h"

#include <gtest/gtest.h>

#include "common/flag_checks.h"
#include "flag_args.h"

namespace ker {
namespace {

using std::chrono::milliseconds;

TEST(FlagChecks, NameTheFlagTheRuleAndTheValue) {
  EXPECT_TRUE(checkFlagRange("n", 1, 1, 3).ok());
  EXPECT_TRUE(checkFlagRange("n", 3, 1, 3).ok());
  EXPECT_EQ(checkFlagRange("http-threads", 0, 1, 1024).message(),
            "--http-threads must be 1 to 1024, got 0");
  EXPECT_EQ(checkFlagRange("n", 4, 1, 3).code(), StatusCode::kInvalid);
  EXPECT_TRUE(checkFlagAtLeast("n", 1, 1).ok());
  EXPECT_EQ(checkFlagAtLeast("max-body-bytes", 0, 1).message(),
            "--max-body-bytes must be at least 1, got 0");
  EXPECT_TRUE(checkFlagPositive("d", milliseconds(1)).ok());
  EXPECT_EQ(checkFlagPositive("bind-deadline", milliseconds(0)).message(),
            "--bind-deadline must be positive, got 0s");
  for (const char* fine : {"", "0", ":8080", "127.0.0.1:80", "[::1]:9"}) {
    EXPECT_TRUE(checkFlagBindAddress("a", fine).ok()) << fine;
  }
  EXPECT_EQ(checkFlagBindAddress("metrics-bind-address", "8080").message(),
            "--metrics-bind-address must be host:port, :port, or 0 for none, got \"8080\"");
  EXPECT_EQ(checkFlagBindAddress("a", "h:99999").code(), StatusCode::kInvalid);
}

TEST(LogFlags, DefaultsAreLogSettings) {
  FlagSet flags("p", "");
  const LogFlags log(flags);
  ASSERT_EQ(parseArgs(flags, {}).status, FlagParseResult::kOk);
  LogSettings got{log::Format::kJson, 7};
  ASSERT_TRUE(log.settings(got).ok());
  EXPECT_EQ(got.format, LogSettings{}.format);
  EXPECT_EQ(got.verbosity, LogSettings{}.verbosity);
  EXPECT_NE(flags.usage().find("--log-format string   text or json (default \"text\")"),
            std::string::npos)
      << flags.usage();
}

TEST(LogFlags, ParsesFormatAndVerbosity) {
  FlagSet flags("p", "");
  const LogFlags log(flags);
  ASSERT_EQ(parseArgs(flags, {"--log-format=json", "--v=4"}).status, FlagParseResult::kOk);
  LogSettings got;
  ASSERT_TRUE(log.settings(got).ok());
  EXPECT_EQ(got.format, log::Format::kJson);
  EXPECT_EQ(got.verbosity, 4);
}

TEST(LogFlags, BadValuesNameTheirFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{"--log-format=xml"}, "--log-format must be text or json, got \"xml\""},
           {{"--v=-1"}, "--v must be 0 to 99, got -1"},
           {{"--v=100"}, "--v must be 0 to 99, got 100"},
       }) {
    FlagSet flags("p", "");
    const LogFlags log(flags);
    ASSERT_EQ(parseArgs(flags, c.args).status, FlagParseResult::kOk) << c.args[0];
    LogSettings got;
    const Status s = log.settings(got);
    EXPECT_EQ(s.code(), StatusCode::kInvalid) << c.args[0];
    EXPECT_EQ(s.message(), c.message);
  }
}

TEST(LogFormat, NamesRoundTrip) {
  for (log::Format f : {log::Format::kText, log::Format::kJson}) {
    EXPECT_EQ(log::parseFormat(log::formatName(f)), f);
  }
  EXPECT_EQ(log::parseFormat("JSON"), std::nullopt);
}

}  // namespace
}  // namespace ker

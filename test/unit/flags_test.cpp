#include "common/flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ker {
namespace {

using std::chrono::milliseconds;

FlagParseResult parseArgs(FlagSet& fs, std::vector<std::string> args) {
  std::vector<const char*> argv = {"prog"};
  for (const auto& a : args) {
    argv.push_back(a.c_str());
  }
  return fs.parse(static_cast<int>(argv.size()), argv.data());
}

TEST(ParseDuration, AcceptsGoStyleDurations) {
  EXPECT_EQ(parseDuration("30s"), milliseconds(30000));
  EXPECT_EQ(parseDuration("2m"), milliseconds(120000));
  EXPECT_EQ(parseDuration("1h30m"), milliseconds(5400000));
  EXPECT_EQ(parseDuration("1.5s"), milliseconds(1500));
  EXPECT_EQ(parseDuration("250ms"), milliseconds(250));
  EXPECT_EQ(parseDuration("1m30s500ms"), milliseconds(90500));
  EXPECT_EQ(parseDuration("0"), milliseconds(0));
}

TEST(ParseDuration, RejectsMalformedText) {
  for (const char* bad : {"", "30", "s", "10x", "1.2.3s", "-5s", "5 s", "m5"}) {
    EXPECT_EQ(parseDuration(bad), std::nullopt) << bad;
  }
}

TEST(FormatDuration, ShortestForm) {
  EXPECT_EQ(formatDuration(milliseconds(0)), "0s");
  EXPECT_EQ(formatDuration(milliseconds(250)), "250ms");
  EXPECT_EQ(formatDuration(milliseconds(1500)), "1.5s");
  EXPECT_EQ(formatDuration(milliseconds(120000)), "2m");
  EXPECT_EQ(formatDuration(milliseconds(5400000)), "1h30m");
  EXPECT_EQ(formatDuration(milliseconds(3600000 + 1)), "1h0.001s");
}

class FlagSetTest : public ::testing::Test {
 protected:
  FlagSet fs{"ker-test", "Does test things."};
  std::string* name = fs.addString("name", "default-name", "a name");
  int64_t* port = fs.addInt("port", 8443, "port to listen on");
  bool* leader = fs.addBool("leader-elect", true, "enable leader election");
  bool* verbose = fs.addBool("verbose", false, "chatty");
  double* qps = fs.addDouble("qps", 5.5, "queries per second");
  milliseconds* resync = fs.addDuration("resync", milliseconds(600000), "resync period");
};

TEST_F(FlagSetTest, DefaultsHoldWithoutArguments) {
  auto r = parseArgs(fs, {});
  EXPECT_EQ(r.status, FlagParseResult::kOk);
  EXPECT_EQ(r.exitCode(), 0);
  EXPECT_EQ(*name, "default-name");
  EXPECT_EQ(*port, 8443);
  EXPECT_TRUE(*leader);
  EXPECT_FALSE(*verbose);
  EXPECT_DOUBLE_EQ(*qps, 5.5);
  EXPECT_EQ(*resync, milliseconds(600000));
  EXPECT_FALSE(fs.isSet("port"));
}

TEST_F(FlagSetTest, ParsesBothValueForms) {
  auto r = parseArgs(fs, {"--name=x", "--port", "9000", "-qps=2.25", "--resync", "30s", "--verbose",
                          "--leader-elect=false"});
  ASSERT_EQ(r.status, FlagParseResult::kOk) << r.message;
  EXPECT_EQ(*name, "x");
  EXPECT_EQ(*port, 9000);
  EXPECT_DOUBLE_EQ(*qps, 2.25);
  EXPECT_EQ(*resync, milliseconds(30000));
  EXPECT_TRUE(*verbose);
  EXPECT_FALSE(*leader);
  EXPECT_TRUE(fs.isSet("port"));
  EXPECT_FALSE(fs.isSet("unknown"));
}

TEST_F(FlagSetTest, BoolNeverConsumesTheNextWordAndAStrayWordIsAnError) {
  auto r = parseArgs(fs, {"--verbose", "false"});
  ASSERT_EQ(r.status, FlagParseResult::kError);
  EXPECT_EQ(r.exitCode(), 2);
  EXPECT_NE(r.message.find("unexpected argument \"false\""), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("--flag=false"), std::string::npos) << r.message;

  r = parseArgs(fs, {"--verbose", "--", "--port=1"});
  ASSERT_EQ(r.status, FlagParseResult::kError);
  EXPECT_NE(r.message.find("unexpected argument \"--port=1\""), std::string::npos) << r.message;

  r = parseArgs(fs, {"--verbose", "--"});
  ASSERT_EQ(r.status, FlagParseResult::kOk);
  EXPECT_TRUE(*verbose);
  EXPECT_EQ(*port, 8443);
}

TEST_F(FlagSetTest, EmptyValueAndNegativeNumbers) {
  auto r = parseArgs(fs, {"--name=", "--port", "-1"});
  ASSERT_EQ(r.status, FlagParseResult::kOk);
  EXPECT_EQ(*name, "");
  EXPECT_EQ(*port, -1);
}

TEST_F(FlagSetTest, HelpReturnsAlignedUsage) {
  auto r = parseArgs(fs, {"--port=1", "--help"});
  ASSERT_EQ(r.status, FlagParseResult::kHelp);
  EXPECT_EQ(r.exitCode(), 0);
  EXPECT_EQ(r.message,
            "Usage: ker-test [flags]\n"
            "\n"
            "Does test things.\n"
            "\n"
            "Flags:\n"
            "  --name string       a name (default \"default-name\")\n"
            "  --port int          port to listen on (default 8443)\n"
            "  --leader-elect      enable leader election (default true)\n"
            "  --verbose           chatty\n"
            "  --qps float         queries per second (default 5.5)\n"
            "  --resync duration   resync period (default 10m)\n"
            "  --help              show this help and exit\n");
  EXPECT_EQ(parseArgs(fs, {"-h"}).status, FlagParseResult::kHelp);
}

TEST_F(FlagSetTest, UnknownFlagIsAnError) {
  auto r = parseArgs(fs, {"--nope=1"});
  EXPECT_EQ(r.status, FlagParseResult::kError);
  EXPECT_EQ(r.exitCode(), 2);
  EXPECT_NE(r.message.find("unknown flag --nope"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("--help"), std::string::npos);
}

TEST_F(FlagSetTest, BadValuesAreErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {{"--port=abc"}, "invalid value \"abc\" for --port: expected an integer"},
      {{"--port=99999999999999999999"}, "integer out of range"},
      {{"--port=12x"}, "expected an integer"},
      {{"--qps=fast"}, "expected a number"},
      {{"--resync=10"}, "expected a duration"},
      {{"--verbose=yes"}, "expected true or false"},
      {{"--port"}, "flag --port needs a value"},
  };
  for (const auto& c : cases) {
    auto r = parseArgs(fs, c.args);
    EXPECT_EQ(r.status, FlagParseResult::kError) << c.args[0];
    EXPECT_EQ(r.exitCode(), 2);
    EXPECT_NE(r.message.find(c.expect), std::string::npos) << r.message;
  }
}

TEST(FlagSet, AnAliasSetsItsFlag) {
  FlagSet fs("p", "");
  std::string* lease = fs.addString("lease-name", "mine", "Lease name");
  fs.addAlias("resource-name", "lease-name");
  EXPECT_EQ(fs.usage(),
            "Usage: p [flags]\n\nFlags:\n"
            "  --lease-name string   Lease name (also --resource-name) (default \"mine\")\n"
            "  --help                show this help and exit\n");
  ASSERT_EQ(parseArgs(fs, {"--resource-name=other"}).status, FlagParseResult::kOk);
  EXPECT_EQ(*lease, "other");
  EXPECT_TRUE(fs.isSet("lease-name"));
  const auto missing = parseArgs(fs, {"--resource-name"});
  EXPECT_EQ(missing.status, FlagParseResult::kError);
  EXPECT_NE(missing.message.find("flag --resource-name needs a value"), std::string::npos)
      << missing.message;
  EXPECT_THROW(fs.addAlias("lease-name", "lease-name"), std::logic_error);
  EXPECT_THROW(fs.addAlias("x", "undeclared"), std::logic_error);
  EXPECT_THROW(fs.addString("resource-name", "", ""), std::logic_error);
}

TEST(FlagSet, DeclarationErrorsThrow) {
  FlagSet fs("p", "");
  fs.addInt("a", 1, "");
  EXPECT_THROW(fs.addString("a", "", ""), std::logic_error);
  EXPECT_THROW(fs.addBool("help", false, ""), std::logic_error);
  EXPECT_THROW(fs.addBool("bad name", false, ""), std::logic_error);
  EXPECT_THROW(fs.addBool("", false, ""), std::logic_error);
}

}  // namespace
}  // namespace ker

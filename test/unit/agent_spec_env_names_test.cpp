#include <gtest/gtest.h>

#include "agent/spec_env_names.h"

namespace ker::agent {
namespace {

// Each container's env names, init and ephemeral containers too; entries of the wrong shape (a
// value without a name, a name that is not a string, a list that is not one) are skipped.
TEST(SpecEnvNamesTest, EachContainersEnvNamesAreReadAndOddEntriesSkipped) {
  const nlohmann::json spec = {
      {"initContainers", {{{"name", "init"}, {"env", {{{"name", "A"}, {"value", "1"}}}}}}},
      {"containers",
       {{{"name", "main"},
         {"env", {{{"name", "B"}}, {{"value", "no name"}}, {{"name", 7}}, "C", {{"name", "D"}}}}},
        {{"name", "sidecar"}, {"env", "not a list"}},
        {{"name", 5}, {"env", {{{"name", "E"}}}}},
        "not a container"}},
      {"ephemeralContainers", {{{"name", "debug"}, {"env", {{{"name", "F"}}}}}}}};
  const auto names = readSpecEnvNames(spec);
  EXPECT_EQ(names, (std::map<std::string, std::vector<std::string>>{
                       {"init", {"A"}}, {"main", {"B", "D"}}, {"debug", {"F"}}}));
  EXPECT_TRUE(readSpecEnvNames(nlohmann::json::array()).empty());
  EXPECT_TRUE(readSpecEnvNames({{"containers", 3}}).empty());
}

}  // namespace
}  // namespace ker::agent

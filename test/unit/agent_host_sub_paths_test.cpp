#include <gtest/gtest.h>

#include "agent/host_sub_paths.h"

namespace ker::agent {
namespace {

using json = nlohmann::json;

TEST(HostSubPathsTest, EachSubPathOfAHostPathVolumeIsJoinedToItsPath) {
  const json spec = {
      {"volumes",
       {{{"name", "root"}, {"hostPath", {{"path", "/"}}}},
        {{"name", "dev"}, {"hostPath", {{"path", "/dev/"}, {"type", "Directory"}}}},
        {{"name", "scratch"}, {"emptyDir", json::object()}}}},
      {"initContainers",
       {{{"name", "init"}, {"volumeMounts", {{{"name", "dev"}, {"subPath", "nvidia0"}}}}}}},
      {"containers",
       {{{"name", "main"},
         {"volumeMounts",
          {{{"name", "root"}, {"subPath", "dev"}},
           {{"name", "dev"}, {"mountPath", "/whole"}},
           {{"name", "dev"}, {"subPathExpr", "$(WHICH)"}},
           {{"name", "scratch"}, {"subPath", "x"}},
           "not a mount"}}},
        {{"name", "plain"}}}},
      {"ephemeralContainers",
       {{{"name", "debug"}, {"volumeMounts", {{{"name", "root"}, {"subPath", "dev/dri"}}}}}}}};
  const auto got = readHostSubPaths(spec);
  EXPECT_EQ(got, (std::map<std::string, std::vector<std::string>>{
                     {"init", {"/dev/nvidia0"}},
                     {"main", {"/dev", "/dev"}},  // the subPathExpr counts as the whole volume
                     {"debug", {"/dev/dri"}}}));
  EXPECT_TRUE(readHostSubPaths(json::array()).empty());
  EXPECT_TRUE(readHostSubPaths({{"volumes", "x"}, {"containers", 3}}).empty());
}

}  // namespace
}  // namespace ker::agent

// The folders' layering: common/ (the Kubernetes client and Kubernetes' own kinds, nothing of
// devices) at the bottom, model/ (the project's kinds and rules) above it, nri/ on its own, and the
// three binaries' folders beside each other on top, none including another's. A change that reaches
// across fails here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

namespace ker {
namespace {

namespace fs = std::filesystem;

// Which folders each folder's sources may include from.
const std::map<std::string, std::set<std::string>> kMayInclude = {
    {"common", {"common"}},
    {"model", {"common", "model"}},
    {"nri", {"nri"}},
    {"scheduler", {"common", "model", "scheduler"}},
    {"controller", {"common", "model", "controller"}},
    {"agent", {"common", "model", "nri", "agent"}},
};

TEST(Layering, NoFolderIncludesOneAboveOrBesideIt) {
  const fs::path root = KER_SOURCE_DIR;
  const std::regex include(R"re(^\s*#\s*include\s+"([a-z_]+)/)re");
  size_t files = 0;
  for (const auto& [folder, allowed] : kMayInclude) {
    ASSERT_TRUE(fs::is_directory(root / folder)) << folder;
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".h" && ext != ".cpp") {
        continue;
      }
      ++files;
      std::ifstream in(entry.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        std::smatch m;
        if (std::regex_search(line, m, include) && allowed.count(m[1]) == 0) {
          ADD_FAILURE() << fs::relative(entry.path(), root).string() << ":" << n << " includes "
                        << m[1] << "/, which " << folder << "/ may not";
        }
      }
    }
  }
  EXPECT_GT(files, 100u);
}

// The Kubernetes library below the model knows nothing of this project's kinds: a type, a
// resource or the API group named in common/ belongs in model/.
TEST(Layering, CommonNamesNoneOfTheProjectsKinds) {
  const fs::path root = KER_SOURCE_DIR;
  const std::regex kind(R"re(ExtendedResource|extendedresource\.io|kApiVersion|kGroup\b)re");
  size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root / "common")) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".h" && ext != ".cpp") {
      continue;
    }
    ++files;
    std::ifstream in(entry.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (std::regex_search(line, kind)) {
        ADD_FAILURE() << fs::relative(entry.path(), root).string() << ":" << n << ": " << line;
      }
    }
  }
  EXPECT_GT(files, 20u);
}

}  // namespace
}  // namespace ker

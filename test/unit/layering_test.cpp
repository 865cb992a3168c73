// The folders' layering: common/ (the Kubernetes client and Kubernetes' own kinds, nothing of
// devices) at the bottom, model/ (the project's kinds and rules) above it, nri/ on its own, and the
// three binaries' folders beside each other on top, none including another's. The extender is
// itself in layers: wire/ and cache/ at its bottom, fit/ above cache/, preemption/ and bind/ beside
// each other above those, and scheduler/ itself (the verbs' decisions and the wiring) on top. A
// change that reaches across fails here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>

namespace ker {
namespace {

namespace fs = std::filesystem;

// Which folders each folder's sources may include from (a folder's own subfolders are listed
// apart, and a source includes from the folder that holds the header).
const std::map<std::string, std::set<std::string>> kMayInclude = {
    {"common", {"common"}},
    {"model", {"common", "model"}},
    {"nri", {"nri", "nri/proto"}},
    {"scheduler/wire", {"common", "model", "scheduler/wire"}},
    {"scheduler/cache", {"common", "model", "scheduler/cache"}},
    {"scheduler/fit", {"common", "model", "scheduler/cache", "scheduler/fit"}},
    {"scheduler/preemption",
     {"common", "model", "scheduler/wire", "scheduler/cache", "scheduler/fit",
      "scheduler/preemption"}},
    {"scheduler/bind",
     {"common", "model", "scheduler/wire", "scheduler/cache", "scheduler/fit", "scheduler/bind"}},
    {"scheduler",
     {"common", "model", "scheduler/wire", "scheduler/cache", "scheduler/fit",
      "scheduler/preemption", "scheduler/bind", "scheduler"}},
    {"controller", {"common", "model", "controller"}},
    {"agent", {"common", "model", "nri", "nri/proto", "agent"}},
};

// Calls fn(path relative to the source root, line number, line) for each line of the C++ sources
// directly in the folder (not its subfolders); returns how many files it read.
size_t forEachSourceLine(
    const std::string& folder,
    const std::function<void(const std::string&, int, const std::string&)>& fn) {
  const fs::path root = KER_SOURCE_DIR;
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(root / folder)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".h" && ext != ".cpp") {
      continue;
    }
    ++files;
    std::ifstream in(entry.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      fn(fs::relative(entry.path(), root).string(), n, line);
    }
  }
  return files;
}

TEST(Layering, NoFolderIncludesOneAboveOrBesideIt) {
  const std::regex include(R"re(^\s*#\s*include\s+"([^"]+)/[^/"]+")re");
  size_t files = 0;
  for (const auto& [folder, allowed] : kMayInclude) {
    ASSERT_TRUE(fs::is_directory(fs::path(KER_SOURCE_DIR) / folder)) << folder;
    files +=
        forEachSourceLine(folder, [&](const std::string& file, int n, const std::string& line) {
          std::smatch m;
          if (std::regex_search(line, m, include) && allowed.count(m[1]) == 0) {
            ADD_FAILURE() << file << ":" << n << " includes " << m[1] << "/, which " << folder
                          << "/ may not";
          }
        });
  }
  EXPECT_GT(files, 100u);
}

// Every folder holding sources has its layer above, so none escapes the check.
TEST(Layering, EveryFolderOfSourcesHasItsLayer) {
  const fs::path root = KER_SOURCE_DIR;
  for (const char* top : {"common", "model", "nri", "scheduler", "controller", "agent"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      const std::string ext = entry.path().extension().string();
      if (ext == ".h" || ext == ".cpp") {
        const std::string folder = fs::relative(entry.path().parent_path(), root).string();
        EXPECT_EQ(kMayInclude.count(folder), 1u) << folder << "/ has no layer";
      }
    }
  }
}

// The Kubernetes library below the model knows nothing of this project's kinds: a type, a
// resource or the API group named in common/ belongs in model/.
TEST(Layering, CommonNamesNoneOfTheProjectsKinds) {
  const std::regex kind(R"re(ExtendedResource|extendedresource\.io|kApiVersion|kGroup\b)re");
  const size_t files =
      forEachSourceLine("common", [&](const std::string& file, int n, const std::string& line) {
        if (std::regex_search(line, kind)) {
          ADD_FAILURE() << file << ":" << n << ": " << line;
        }
      });
  EXPECT_GT(files, 20u);
}

}  // namespace
}  // namespace ker

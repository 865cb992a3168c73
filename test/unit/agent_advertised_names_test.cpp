// The node agent's record of the extended resource names it advertised (AdvertisedNames): what
// a restarted agent reads back, and what it makes of a missing, unreadable or garbled file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/advertised_names.h"
#include "test/unit/temp_dir.h"

namespace ker::agent {
namespace {

namespace fs = std::filesystem;

std::string readAll(std::istream& in) {
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class AdvertisedNamesTest : public ::testing::Test {
 protected:
  void write(const std::string& text) const {
    std::ofstream(dir_ + "/advertised-names.json") << text;
  }

  testing::TempDir tmp_{"ker-advertised-names"};
  const std::string dir_ = tmp_.path();
};

TEST_F(AdvertisedNamesTest, WhatIsStoredIsLoadedBack) {
  const AdvertisedNames names(dir_ + "/state");  // the folder is made at the first store
  ASSERT_TRUE(names.store({"example.com/gpu", "example.com/k80"}).ok());
  EXPECT_EQ(names.path(), dir_ + "/state/advertised-names.json");
  std::set<std::string> got = {"stale"};
  ASSERT_TRUE(AdvertisedNames(dir_ + "/state").load(got).ok());
  EXPECT_EQ(got, (std::set<std::string>{"example.com/gpu", "example.com/k80"}));
  ASSERT_TRUE(names.store({}).ok());
  ASSERT_TRUE(names.load(got).ok());
  EXPECT_TRUE(got.empty());
}

TEST_F(AdvertisedNamesTest, NoFileIsNothingAdvertised) {
  std::set<std::string> got = {"stale"};
  EXPECT_TRUE(AdvertisedNames(dir_).load(got).ok());
  EXPECT_TRUE(got.empty());
  EXPECT_TRUE(AdvertisedNames(dir_ + "/not-made-yet").load(got).ok());
}

// Not the agent's record: nothing of it is trusted, and the status says which file and why.
TEST_F(AdvertisedNamesTest, AGarbledFileIsEmptyAndSaysWhy) {
  const AdvertisedNames names(dir_);
  const std::string file = dir_ + "/advertised-names.json";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "not JSON"},
      {R"({"extendedResourceNames": ["example.com/gpu")", "not JSON"},
      {R"(["example.com/gpu"])", "no array \"extendedResourceNames\""},
      {R"({"extendedResourceNames": "example.com/gpu"})", "no array \"extendedResourceNames\""},
      {R"({"extendedResourceNames": ["example.com/gpu", 3]})", "not an extended resource name: 3"},
      // Never the agent's to remove: not an extended resource.
      {R"({"extendedResourceNames": ["example.com/gpu", "cpu"]})",
       "not an extended resource name: \"cpu\""},
  };
  for (const auto& [text, why] : cases) {
    write(text);
    std::set<std::string> got = {"stale"};
    const Status st = names.load(got);
    EXPECT_EQ(st.code(), StatusCode::kInvalid) << text;
    EXPECT_EQ(st.message(), file + " is not the agent's record of advertised names: " + why);
    EXPECT_TRUE(got.empty()) << text;
  }
}

TEST_F(AdvertisedNamesTest, AnUnreadableFileIsEmptyAndSaysWhy) {
  fs::create_directories(dir_ + "/advertised-names.json");  // a folder where the file should be
  std::set<std::string> got = {"stale"};
  const Status st = AdvertisedNames(dir_).load(got);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find(dir_ + "/advertised-names.json"), std::string::npos) << st;
  EXPECT_TRUE(got.empty());
}

// The file is replaced, never rewritten in place: a reader holding the old one reads it whole,
// the next open reads the new one, and no temporary file is left.
TEST_F(AdvertisedNamesTest, AStoreReplacesTheFileAtomically) {
  const AdvertisedNames names(dir_);
  ASSERT_TRUE(names.store({"example.com/a"}).ok());
  std::ifstream old(names.path());  // opened, not read yet
  ASSERT_TRUE(names.store({"example.com/b", "example.com/c"}).ok());
  EXPECT_EQ(readAll(old), "{\"extendedResourceNames\":[\"example.com/a\"]}\n");
  std::ifstream now(names.path());
  EXPECT_EQ(readAll(now), "{\"extendedResourceNames\":[\"example.com/b\",\"example.com/c\"]}\n");
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    files.push_back(entry.path().filename());
  }
  EXPECT_EQ(files, std::vector<std::string>{"advertised-names.json"});
}

// A store that cannot write says so and leaves the old record as it was.
TEST_F(AdvertisedNamesTest, AFailedStoreLeavesTheOldRecord) {
  const AdvertisedNames names(dir_);
  ASSERT_TRUE(names.store({"example.com/a"}).ok());
  // The temporary file's place is taken by a folder: it cannot be created.
  fs::create_directories(names.path() + ".tmp/x");
  const Status st = names.store({"example.com/b"});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find(names.path() + ".tmp"), std::string::npos) << st;
  std::set<std::string> got;
  ASSERT_TRUE(names.load(got).ok());
  EXPECT_EQ(got, std::set<std::string>{"example.com/a"});

  std::ofstream(dir_ + "/file") << "";
  EXPECT_FALSE(AdvertisedNames(dir_ + "/file").store({"example.com/a"}).ok())
      << "its folder is a file";
}

}  // namespace
}  // namespace ker::agent

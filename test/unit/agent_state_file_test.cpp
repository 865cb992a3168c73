// The agent's whole-file reader (its node file, the files of its state folder) and the atomic
// write of a state file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "agent/state_file.h"

namespace ker::agent {
namespace {

class StateFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ker-state-file-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

// A missing file is no text and no error; a file up to the limit is read whole; one beyond it
// is an error that names the limit, whatever it holds.
TEST_F(StateFileTest, AFileIsReadWholeUpToItsLimit) {
  const std::string path = (dir_ / "f").string();
  std::optional<std::string> text = "stale";
  ASSERT_TRUE(readWholeFile(path, 4, text).ok());
  EXPECT_FALSE(text.has_value());

  std::ofstream(path) << "four";
  ASSERT_TRUE(readWholeFile(path, 4, text).ok());
  EXPECT_EQ(text, "four");

  std::ofstream(path) << "five!";
  const Status st = readWholeFile(path, 4, text);
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
  EXPECT_EQ(st.message(), path + " is larger than 4 bytes");
  EXPECT_FALSE(text.has_value());

  std::filesystem::remove(path);
  std::filesystem::create_directory(path);
  EXPECT_EQ(readWholeFile(path, 4, text).code(), StatusCode::kInternal) << "a folder";
}

// A state file written is read back from the path stateFilePath names, and replaced whole.
TEST_F(StateFileTest, AWrittenFileIsReadBackWhereItsPathSays) {
  const std::string folder = (dir_ / "state").string();
  ASSERT_TRUE(writeStateFile(folder, "kept.yaml", "first").ok());
  ASSERT_TRUE(writeStateFile(folder, "kept.yaml", "second").ok());
  std::optional<std::string> text;
  ASSERT_TRUE(readWholeFile(stateFilePath(folder, "kept.yaml"), 1024, text).ok());
  EXPECT_EQ(text, "second");
  EXPECT_FALSE(std::filesystem::exists(stateFilePath(folder, "kept.yaml") + ".tmp"));
}

}  // namespace
}  // namespace ker::agent

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "agent/device_probe.h"

namespace ker::agent {
namespace {

namespace fs = std::filesystem;

// A host root with /dev/gpu0 (a plain file stands in for the node), /dev/char/195:0 -> ../gpu0,
// /dev/gpus -> . (a folder link), and /dev/abs -> /dev/gpu0 (absolute: from the agent's own
// container it names the container's /dev, not the host's).
class DeviceProbeResolveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("ker-probe-" + std::to_string(::getpid()));
    fs::create_directories(root_ / "dev/char");
    std::ofstream(root_ / "dev/gpu0") << "";
    fs::create_symlink("../gpu0", root_ / "dev/char/195:0");
    fs::create_symlink(".", root_ / "dev/gpus");
    fs::create_symlink("/dev/gpu0", root_ / "dev/abs");
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(DeviceProbeResolveTest, AMountSourceIsTheHostPathItsSymlinksName) {
  DeviceProbe probe(root_.string());
  EXPECT_EQ(probe.resolve("/dev/char/195:0"), "/dev/gpu0");
  EXPECT_EQ(probe.resolve("/dev/gpus"), "/dev");
  EXPECT_EQ(probe.resolve("/dev/gpus/gpu0"), "/dev/gpu0");
  EXPECT_EQ(probe.resolve("/dev/gpu0"), "/dev/gpu0");
  EXPECT_EQ(probe.resolve("/"), "/");
  EXPECT_EQ(probe.resolve("/var/lib/absent"), "/var/lib/absent") << "not seen: as given";
  EXPECT_EQ(probe.resolve("/dev/abs"), "/dev/abs") << "leaves the host root: as given";
}

}  // namespace
}  // namespace ker::agent

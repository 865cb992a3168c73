#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "agent/container_stopper.h"

namespace ker::agent {
namespace {

namespace fs = std::filesystem;

// A child process standing in for a container's first process, and a /proc of our own that
// gives it the cgroup file the runtime would.
class ContainerStopperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    proc_ = fs::temp_directory_path() / ("ker-stopper-" + std::to_string(::getpid()));
    child_ = ::fork();
    ASSERT_GE(child_, 0);
    if (child_ == 0) {
      ::pause();
      ::_exit(0);
    }
    fs::create_directories(proc_ / std::to_string(child_));
    std::ofstream(proc_ / std::to_string(child_) / "cgroup")
        << "4:memory:/kubepods/besteffort/poduid-1/ctr-abc\n"
        << "3:devices:/kubepods/besteffort/poduid-1/ctr-abc\n";
  }
  void TearDown() override {
    if (child_ > 0 && !reaped_) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
    fs::remove_all(proc_);
  }
  // The signal that ended the child, or 0 while it still runs (after a short wait).
  int endedBy() {
    int status = 0;
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(child_, &status, WNOHANG) == child_) {
        reaped_ = true;
        return WIFSIGNALED(status) ? WTERMSIG(status) : -1;
      }
      ::usleep(10'000);
    }
    return 0;
  }

  fs::path proc_;
  pid_t child_ = -1;
  bool reaped_ = false;
};

TEST_F(ContainerStopperTest, KillsTheProcessOfTheContainer) {
  ContainerStopper stopper(proc_.string());
  Status s = stopper.stop(static_cast<uint32_t>(child_), "ctr-abc");
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(endedBy(), SIGKILL);
}

// A PID the container no longer has (reused by another process) is left alone.
TEST_F(ContainerStopperTest, LeavesAProcessOfAnotherContainerAlone) {
  ContainerStopper stopper(proc_.string());
  EXPECT_TRUE(stopper.stop(static_cast<uint32_t>(child_), "ctr-other").isNotFound());
  EXPECT_EQ(endedBy(), 0);
}

TEST_F(ContainerStopperTest, AGoneProcessIsNotFound) {
  ContainerStopper stopper(proc_.string());
  ::kill(child_, SIGKILL);
  ASSERT_EQ(endedBy(), SIGKILL);
  EXPECT_TRUE(stopper.stop(static_cast<uint32_t>(child_), "ctr-abc").isNotFound());
  EXPECT_TRUE(stopper.stop(0, "ctr-abc").isNotFound());
}

}  // namespace
}  // namespace ker::agent

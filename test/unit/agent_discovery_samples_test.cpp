// The discovery commands config/ ships print what the node agent reads (devicesFromCommand),
// run as the agent runs them (runCommand).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "agent/command_runner.h"
#include "agent/discovery.h"

namespace ker::agent {
namespace {

const std::string kSamples =
    std::string(KER_TESTDATA_DIR) + "/../../../config/node-agent/discovery";

class DiscoverySamplesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ker-discovery-samples.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::vector<DeviceSpec> discover(const std::vector<std::string>& argv,
                                   const std::map<std::string, std::string>& env) {
    CommandResult r = runCommand(argv, env, {.stderrToOutput = false});
    EXPECT_TRUE(r.succeeded()) << r.describe("sample", std::chrono::seconds(5)) << r.output;
    DiscoverySource source;
    source.rawResourceName = "nvidia.com/gpu";
    return devicesFromCommand(source, r.output, "node-1");
  }

  std::string dir_;
};

TEST_F(DiscoverySamplesTest, NvidiaSmiListsEachGpuWithItsMemoryAsAQuantity) {
  const std::string smi = dir_ + "/nvidia-smi";
  std::ofstream(smi) << "#!/bin/sh\n"
                        "echo 'GPU-7d3c0b1a-0000-0000-0000-000000000000, NVIDIA A100-SXM4-40GB, "
                        "40960, 00000000:3B:00.0, 0'\n"
                        "echo 'GPU-9f00aa11-0000-0000-0000-000000000001, NVIDIA A100-SXM4-80GB, "
                        "81920, 00000000:86:00.0, 1'\n";
  std::filesystem::permissions(smi, std::filesystem::perms::owner_all);
  // The host's sysfs knows GPU 0's NUMA node, not GPU 1's (-1).
  std::filesystem::create_directories(dir_ + "/sys/bus/pci/devices/0000:3b:00.0");
  std::filesystem::create_directories(dir_ + "/sys/bus/pci/devices/0000:86:00.0");
  std::ofstream(dir_ + "/sys/bus/pci/devices/0000:3b:00.0/numa_node") << "1\n";
  std::ofstream(dir_ + "/sys/bus/pci/devices/0000:86:00.0/numa_node") << "-1\n";
  auto found = discover({"/bin/sh", kSamples + "/nvidia-smi.sh"},
                        {{"NVIDIA_SMI", smi}, {"EXTENDED_RESOURCE_HOST_ROOT", dir_}});
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].name, "node-1-gpu-7d3c0b1a-0000-0000-0000-000000000000");
  EXPECT_EQ(found[0].properties,
            (std::map<std::string, std::string>{{"index", "0"},
                                                {"memory", "40960Mi"},
                                                {"model", "NVIDIA A100-SXM4-40GB"},
                                                {"numaNode", "1"},
                                                {"pciBusID", "00000000:3B:00.0"}}));
  EXPECT_EQ(found[1].properties.count("numaNode"), 0u);
  ASSERT_EQ(found[1].deviceNodes.size(), 2u);
  EXPECT_EQ(found[1].deviceNodes[0].path, "/dev/nvidia1");
  EXPECT_EQ(found[1].cdiDevice, "nvidia.com/gpu=GPU-9f00aa11-0000-0000-0000-000000000001");
}

TEST_F(DiscoverySamplesTest, DevScanListsTheVendorsCharacterDevices) {
  std::filesystem::create_directories(dir_ + "/dev");
  // Symbolic links to /dev/null stand in for the vendor's character devices.
  std::filesystem::create_symlink("/dev/null", dir_ + "/dev/accel0");
  std::filesystem::create_symlink("/dev/null", dir_ + "/dev/accel1");
  std::ofstream(dir_ + "/dev/accel-notes");  // a regular file: not a device
  auto found = discover({"/bin/sh", kSamples + "/dev-scan.sh", "accel"},
                        {{"EXTENDED_RESOURCE_HOST_ROOT", dir_}});
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].deviceID, "accel0");
  EXPECT_EQ(found[1].deviceNodes[0].path, "/dev/accel1");
  EXPECT_TRUE(discover({"/bin/sh", kSamples + "/dev-scan.sh", "nothing"},
                       {{"EXTENDED_RESOURCE_HOST_ROOT", dir_}})
                  .empty());
}

// tools/gpu-node-check runs only where a GPU and the toolkit are; elsewhere it says why not
// and succeeds.
TEST_F(DiscoverySamplesTest, TheGpuNodeCheckSkipsCleanlyWithoutAGpu) {
  const std::string check = kSamples + "/../../../tools/gpu-node-check";
  CommandResult none = runCommand({check}, {{"NVIDIA_SMI", dir_ + "/missing"}}, {});
  EXPECT_TRUE(none.succeeded()) << none.output;
  EXPECT_EQ(none.output, "gpu-node-check: skipped: no nvidia-smi here (no NVIDIA driver)\n");
  const std::string smi = dir_ + "/nvidia-smi";
  std::ofstream(smi) << "#!/bin/sh\necho 'No devices were found'\n";
  std::filesystem::permissions(smi, std::filesystem::perms::owner_all);
  CommandResult empty = runCommand({check}, {{"NVIDIA_SMI", smi}}, {});
  EXPECT_TRUE(empty.succeeded()) << empty.output;
  EXPECT_EQ(empty.output, "gpu-node-check: skipped: nvidia-smi lists no GPU\n");
}

}  // namespace
}  // namespace ker::agent

#include <gtest/gtest.h>

#include <stdexcept>

#include "agent/discovery.h"

namespace ker::agent {
namespace {

DiscoverySource cdiSource() {
  DiscoverySource s;
  s.rawResourceName = "nvidia.com/gpu";
  s.properties = {{"vendor", "nvidia"}};
  s.cdiKind = "nvidia.com/gpu";
  s.excludeNames = {"all"};
  return s;
}

DiscoverySource commandSource() {
  DiscoverySource s;
  s.rawResourceName = "example.com/fpga";
  s.properties = {{"source", "scan"}};
  s.command = {"/usr/local/bin/scan"};
  return s;
}

std::string errorOf(const std::string& output) {
  try {
    devicesFromCommand(commandSource(), output, "node-1");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Discovery, AFoundDevicesNameIsItsNodeAndItsIdAsAnObjectName) {
  EXPECT_EQ(discoveredName("node-1", "GPU-7D3C_ab"), "node-1-gpu-7d3c-ab");
  EXPECT_EQ(discoveredName("node-1", "0"), "node-1-0");
  EXPECT_EQ(discoveredName("node-1", "0000:3b:00.0"), "node-1-0000-3b-00.0");
  EXPECT_EQ(discoveredName("node-1", ""), "");  // ends with '-'
  EXPECT_EQ(discoveredName("node-1", std::string(300, 'a')), "");
}

TEST(Discovery, ACdiSourceFindsItsKindsDevicesButTheAggregates) {
  std::vector<CdiSpec> specs = {
      {"nvidia.com/gpu", {"GPU-A", "GPU-B", "all"}, {{"GPU-A", {"/dev/nvidia0"}}}},
      {"example.com/fpga", {"f0"}, {}},
      {"nvidia.com/gpu", {"GPU-C"}, {}},
  };
  auto found = devicesFromCdi(cdiSource(), specs, "node-1");
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].name, "node-1-gpu-a");
  EXPECT_EQ(found[0].deviceID, "GPU-A");
  EXPECT_EQ(found[0].cdiDevice, "nvidia.com/gpu=GPU-A");
  EXPECT_EQ(found[0].rawResourceName, "nvidia.com/gpu");
  EXPECT_EQ(found[0].properties, (std::map<std::string, std::string>{{"vendor", "nvidia"}}));
  ASSERT_EQ(found[0].deviceNodes.size(), 1u);
  EXPECT_EQ(found[0].deviceNodes[0].path, "/dev/nvidia0");
  EXPECT_TRUE(found[1].deviceNodes.empty());
  EXPECT_EQ(found[2].cdiDevice, "nvidia.com/gpu=GPU-C");
}

TEST(Discovery, ACommandsOutputListsItsDevices) {
  auto found = devicesFromCommand(commandSource(), R"({"devices": [
      {"id": "fpga-0", "properties": {"memory": "8Gi", "source": "own"},
       "deviceNodes": ["/dev/fpga0"], "cdiDevice": "example.com/fpga=0"},
      {"id": "fpga-1"}]})",
                                  "node-1");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].name, "node-1-fpga-0");
  EXPECT_EQ(found[0].properties,
            (std::map<std::string, std::string>{{"memory", "8Gi"}, {"source", "own"}}));
  ASSERT_EQ(found[0].deviceNodes.size(), 1u);
  EXPECT_EQ(found[0].deviceNodes[0].path, "/dev/fpga0");
  EXPECT_EQ(found[0].cdiDevice, "example.com/fpga=0");
  EXPECT_EQ(found[1].properties, (std::map<std::string, std::string>{{"source", "scan"}}));
  EXPECT_TRUE(devicesFromCommand(commandSource(), R"({"devices": []})", "node-1").empty());
}

TEST(Discovery, OutputThatIsNotAListOfDevicesIsRefusedNamingTheField) {
  EXPECT_EQ(errorOf("nvidia-smi: not found"), "output: not a JSON object");
  EXPECT_EQ(errorOf("[]"), "output: not a JSON object");
  EXPECT_EQ(errorOf("{}"), "devices: required, a list");
  EXPECT_EQ(errorOf(R"({"devices": [3]})"), "devices[0]: expected an object");
  EXPECT_EQ(errorOf(R"({"devices": [{"id": ""}]})"), "devices[0].id: required, a non-empty string");
  EXPECT_EQ(errorOf(R"({"devices": [{"id": "a", "properties": {"m": 8}}]})"),
            "devices[0].properties.m: expected a string");
  EXPECT_EQ(errorOf(R"({"devices": [{"id": "a", "deviceNodes": ["/etc/passwd"]}]})"),
            "devices[0].deviceNodes: \"/etc/passwd\" is not a path under /dev/");
  EXPECT_EQ(errorOf(R"({"devices": [{"id": "a", "deviceNodes": ["/dev/../etc/shadow"]}]})"),
            "devices[0].deviceNodes: \"/dev/../etc/shadow\" is not a path under /dev/");
  EXPECT_EQ(errorOf(R"({"devices": [{"id": "a", "cdiDevice": "gpu"}]})"),
            "devices[0].cdiDevice: \"gpu\" is not vendor/class=name");
}

TEST(Discovery, TheFilesOwnDevicesWinAndNamesStayUnique) {
  NodeFile file;
  DeviceSpec listed;
  listed.name = "node-1-fpga-0";
  listed.deviceID = "by-hand";
  file.devices = {listed};
  auto found = devicesFromCommand(
      commandSource(), R"({"devices": [{"id": "fpga-0"}, {"id": "fpga-1"}, {"id": "FPGA-1"}]})",
      "node-1");
  DeviceSpec nameless;
  nameless.deviceID = "???";
  found.push_back(nameless);
  std::vector<std::string> problems;
  NodeFile out = withDiscovered(file, found, problems);
  ASSERT_EQ(out.devices.size(), 2u);
  EXPECT_EQ(out.devices[0].deviceID, "by-hand");
  EXPECT_EQ(out.devices[1].deviceID, "fpga-1");
  EXPECT_EQ(problems,
            (std::vector<std::string>{"device node-1-fpga-0 (ID fpga-0) is already listed",
                                      "device node-1-fpga-1 (ID FPGA-1) is already listed",
                                      "device ID \"???\" makes no valid object name"}));
}

// A found device the file lists under another name (its ID within its resource, or its CDI
// name) is that entry, not a second device.
TEST(Discovery, AFoundDeviceTheFileListsUnderAnotherNameIsLeftOut) {
  NodeFile file;
  file.devices = {
      DeviceSpec{.name = "my-fpga", .rawResourceName = "example.com/fpga", .deviceID = "fpga-0"},
      DeviceSpec{.name = "my-gpu",
                 .rawResourceName = "nvidia.com/gpu",
                 .deviceID = "GPU-0",
                 .cdiDevice = "nvidia.com/gpu=0"}};
  auto found = devicesFromCommand(
      commandSource(),
      R"({"devices": [{"id": "fpga-0"}, {"id": "fpga-1"}, {"id": "x", "cdiDevice": "nvidia.com/gpu=0"}]})",
      "node-1");
  std::vector<std::string> problems;
  NodeFile out = withDiscovered(file, found, problems);
  ASSERT_EQ(out.devices.size(), 3u);
  EXPECT_EQ(out.devices[2].name, "node-1-fpga-1");
  EXPECT_EQ(problems, (std::vector<std::string>{
                          "device node-1-fpga-0 is already listed as my-fpga, both being "
                          "id:example.com/fpga=fpga-0",
                          "device node-1-x is already listed as my-gpu, both being "
                          "cdi:nvidia.com/gpu=0"}));
}

}  // namespace
}  // namespace ker::agent

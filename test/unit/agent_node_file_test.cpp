#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "agent/node_file.h"

namespace ker::agent {
namespace {

const char* kSample = R"(
resources:
  - rawResourceName: nvidia.com/gpu
    envName: NVIDIA_VISIBLE_DEVICES
devices:
  - name: node-1-gpu0
    rawResourceName: nvidia.com/gpu
    deviceID: GPU-0
    properties: {type: k80, memory: 12Gi}
    deviceNodes:
      - path: /dev/nvidia0
      - path: /dev/nvidiactl
        permissions: rwm
    env: {GPU_SLOT: "0"}
    mounts:
      - hostPath: /usr/lib/nvidia
        containerPath: /usr/local/nvidia
    cdiDevice: nvidia.com/gpu=GPU-0
  - name: node-1-fpga0
    rawResourceName: example.com/fpga
    deviceID: "7"
    healthCheck:
      command: [/usr/bin/fpga-check, --slot, "7"]
      timeoutSeconds: 2
    mounts:
      - hostPath: /opt/fpga
        containerPath: /opt/fpga
        readOnly: false
)";

TEST(NodeFileTest, ParsesEveryField) {
  NodeFile f = parseNodeFile(kSample);
  ASSERT_EQ(f.devices.size(), 2u);
  const DeviceSpec& gpu = f.devices[0];
  EXPECT_EQ(gpu.name, "node-1-gpu0");
  EXPECT_EQ(gpu.rawResourceName, "nvidia.com/gpu");
  EXPECT_EQ(gpu.deviceID, "GPU-0");
  EXPECT_EQ(gpu.properties,
            (std::map<std::string, std::string>{{"memory", "12Gi"}, {"type", "k80"}}));
  ASSERT_EQ(gpu.deviceNodes.size(), 2u);
  EXPECT_EQ(gpu.deviceNodes[0], (DeviceNode{"/dev/nvidia0", "rw"}));
  EXPECT_EQ(gpu.deviceNodes[1], (DeviceNode{"/dev/nvidiactl", "rwm"}));
  EXPECT_EQ(gpu.env.at("GPU_SLOT"), "0");
  ASSERT_EQ(gpu.mounts.size(), 1u);
  EXPECT_EQ(gpu.mounts[0], (DeviceMount{"/usr/lib/nvidia", "/usr/local/nvidia", true}));
  EXPECT_FALSE(f.devices[1].mounts[0].readOnly);
  EXPECT_EQ(f.devices[1].deviceID, "7");
  EXPECT_FALSE(gpu.healthCheck);
  EXPECT_EQ(gpu.cdiDevice, "nvidia.com/gpu=GPU-0");
  EXPECT_EQ(f.devices[1].cdiDevice, "");
  ASSERT_TRUE(f.devices[1].healthCheck);
  EXPECT_EQ(f.devices[1].healthCheck->command,
            (std::vector<std::string>{"/usr/bin/fpga-check", "--slot", "7"}));
  EXPECT_EQ(f.devices[1].healthCheck->timeout, std::chrono::seconds(2));
  EXPECT_EQ(f.find("node-1-fpga0"), &f.devices[1]);
  EXPECT_EQ(f.find("missing"), nullptr);
}

// The samples users start from stay valid.
TEST(NodeFileTest, TheSamplesInConfigParse) {
  for (const char* name : {"node-devices.yaml", "make-run-node-1.yaml"}) {
    std::ifstream in(std::string(KER_TESTDATA_DIR) + "/../../../config/node-agent/" + name);
    ASSERT_TRUE(in) << name;
    std::stringstream text;
    text << in.rdbuf();
    NodeFile f;
    ASSERT_NO_THROW(f = parseNodeFile(text.str())) << name;
    EXPECT_EQ(f.devices.size(), 2u) << name;
  }
}

TEST(NodeFileTest, EnvNamesDefaultFromTheResourceName) {
  NodeFile f = parseNodeFile(kSample);
  EXPECT_EQ(f.envNameFor("nvidia.com/gpu"), "NVIDIA_VISIBLE_DEVICES");
  EXPECT_EQ(f.envNameFor("example.com/fpga"), "EXTENDED_RESOURCE_EXAMPLE_COM_FPGA");
  EXPECT_EQ(defaultEnvName("a-b.c/d_e"), "EXTENDED_RESOURCE_A_B_C_D_E");
}

TEST(NodeFileTest, AnEmptyFileIsANodeWithoutDevices) {
  EXPECT_TRUE(parseNodeFile("").devices.empty());
  EXPECT_TRUE(parseNodeFile("devices: []\n").devices.empty());
  EXPECT_TRUE(parseNodeFile("# nothing here\n").devices.empty());
}

std::string errorOf(const std::string& text) {
  try {
    parseNodeFile(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

std::string device(const std::string& extra) {
  return "devices:\n  - name: d0\n    rawResourceName: r\n    deviceID: x\n" + extra;
}

TEST(NodeFileTest, RejectsWhatItCannotUseNamingTheField) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const Case cases[] = {
      {"devices: [", "not valid YAML"},
      {"- a\n- b\n", "expected a mapping"},
      {"devcies: []\n", "devcies: unknown field"},
      {"devices: {a: 1}\n", "devices: expected a list"},
      {"devices:\n  - rawResourceName: r\n    deviceID: x\n", "devices[0].name: required"},
      {"devices:\n  - name: Bad_Name\n    rawResourceName: r\n    deviceID: x\n",
       "devices[0].name: must be a valid object name"},
      {"devices:\n  - name: d0\n    deviceID: x\n", "devices[0].rawResourceName: required"},
      {"devices:\n  - name: d0\n    rawResourceName: r\n    deviceID: \"\"\n",
       "devices[0].deviceID: must not be empty"},
      {device("  - name: d0\n    rawResourceName: r\n    deviceID: y\n"),
       "devices[1].name: \"d0\" is listed twice"},
      // One device under two names could reach two pods at once.
      {device("  - name: d1\n    rawResourceName: r\n    deviceID: x\n"),
       "devices[1]: is the same device as devices[0] (d0), both being id:r=x"},
      {device("    cdiDevice: v.io/c=0\n  - name: d1\n    rawResourceName: s\n    deviceID: y\n"
              "    cdiDevice: v.io/c=0\n"),
       "devices[1]: is the same device as devices[0] (d0), both being cdi:v.io/c=0"},
      {device("    deviceNodes:\n      - path: /tmp/x\n"),
       "devices[0].deviceNodes[0].path: must be an absolute path under /dev/"},
      {device("    deviceNodes:\n      - path: /dev/../etc/shadow\n"),
       "devices[0].deviceNodes[0].path"},
      {device("    deviceNodes:\n      - path: /dev/x\n        permissions: rwx\n"),
       "devices[0].deviceNodes[0].permissions"},
      {device("    deviceNodes:\n      - path: /dev/x\n        permissions: rr\n"),
       "devices[0].deviceNodes[0].permissions"},
      {device("    mounts:\n      - hostPath: relative\n        containerPath: /x\n"),
       "devices[0].mounts[0].hostPath"},
      {device("    mounts:\n      - hostPath: /x\n        containerPath: /\n"),
       "devices[0].mounts[0].containerPath"},
      {device("    mounts:\n      - hostPath: /x\n        containerPath: /y\n        readOnly: "
              "maybe\n"),
       "devices[0].mounts[0].readOnly: expected true or false"},
      {device("    env: {\"1BAD\": x}\n"), "devices[0].env.1BAD: not a valid environment"},
      {device("    env: {EXTENDED_RESOURCE_R: x}\n"),
       "devices[0].env.EXTENDED_RESOURCE_R: is the variable that lists the r device IDs"},
      {device("    properties: {a: [1, 2]}\n"), "devices[0].properties.a: expected a string"},
      {device("    colour: red\n"), "devices[0].colour: unknown field"},
      // A Latin-1 byte: every name and property goes to the API server, which takes only UTF-8.
      {device("    properties: {model: \"K80 \xe9"
              "dition\"}\n"),
       "node file: not valid UTF-8 at byte 90"},
      {"discover:\n  - rawResourceName: r\n", "discover[0]: needs exactly one of cdi and command"},
      {"discover:\n  - rawResourceName: r\n    cdi: {kind: a.com/b}\n    command: [x]\n",
       "discover[0]: needs exactly one of cdi and command"},
      {"discover:\n  - cdi: {kind: a.com/b}\n", "discover[0].rawResourceName: required"},
      {"discover:\n  - rawResourceName: r\n    cdi: {kind: gpu}\n",
       "discover[0].cdi.kind: kind \"gpu\" is not vendor/class"},
      {"discover:\n  - rawResourceName: r\n    command: [x]\n    timeoutSeconds: 0\n",
       "discover[0].timeoutSeconds: must be a whole number from 1 to 60"},
      {"discover:\n  - rawResourceName: r\n    cdi: {kind: a.com/b, kinds: x}\n",
       "discover[0].cdi.kinds: unknown field"},
      {device("    cdiDevice: nvidia.com/gpu\n"),
       "devices[0].cdiDevice: not a CDI device name: \"nvidia.com/gpu\" is not vendor/class=name"},
      {device("    cdiDevice: nvidia.com/gpu=GPU 0\n"),
       "devices[0].cdiDevice: not a CDI device name: device name \"GPU 0\" has ' '"},
      {device("    cdiDevice: 1vendor/gpu=0\n"),
       "devices[0].cdiDevice: not a CDI device name: vendor \"1vendor\" must start with a letter"},
      {device("    healthCheck: {}\n"), "devices[0].healthCheck.command: required"},
      {device("    healthCheck: {command: []}\n"), "devices[0].healthCheck.command: required"},
      {device("    healthCheck: {command: [x], timeoutSeconds: 0}\n"),
       "devices[0].healthCheck.timeoutSeconds: must be a whole number from 1 to 60"},
      {device("    healthCheck: {command: [x], timeoutSeconds: soon}\n"),
       "devices[0].healthCheck.timeoutSeconds"},
      {device("    healthCheck: {command: [[x]]}\n"),
       "devices[0].healthCheck.command[0]: expected a string"},
      {"resources:\n  - rawResourceName: r\n    envName: A\n  - rawResourceName: r\n    envName: "
       "B\n",
       "resources[1].rawResourceName: listed twice"},
      {"resources:\n  - rawResourceName: r\n    envName: \"A-B\"\n",
       "resources[0].envName: not a valid environment"},
  };
  for (const auto& c : cases) {
    const std::string err = errorOf(c.text);
    EXPECT_NE(err.find(c.expected), std::string::npos)
        << "input:\n"
        << c.text << "\nerror: " << (err.empty() ? "(none)" : err);
  }
}

// A deviceID identifies a device within its resource: another resource may use the same one.
TEST(NodeFileTest, DeviceIdsAreUniqueWithinAResource) {
  NodeFile f = parseNodeFile(device("  - name: d1\n    rawResourceName: s\n    deviceID: x\n"));
  EXPECT_EQ(f.devices.size(), 2u);
}

TEST(NodeFileTest, DiscoverSourcesAreRead) {
  NodeFile f = parseNodeFile(
      "discover:\n"
      "  - rawResourceName: nvidia.com/gpu\n"
      "    properties: {vendor: nvidia}\n"
      "    cdi: {kind: nvidia.com/gpu}\n"
      "  - rawResourceName: example.com/fpga\n"
      "    command: [/usr/local/bin/scan, --json]\n"
      "    timeoutSeconds: 3\n"
      "  - rawResourceName: nvidia.com/gpu\n"
      "    cdi: {kind: nvidia.com/gpu, exclude: [all, mig]}\n");
  ASSERT_EQ(f.discover.size(), 3u);
  EXPECT_EQ(f.discover[0].cdiKind, "nvidia.com/gpu");
  EXPECT_EQ(f.discover[0].excludeNames, (std::vector<std::string>{"all"}));
  EXPECT_EQ(f.discover[0].properties.at("vendor"), "nvidia");
  EXPECT_EQ(f.discover[1].command, (std::vector<std::string>{"/usr/local/bin/scan", "--json"}));
  EXPECT_EQ(f.discover[1].timeout, std::chrono::seconds(3));
  EXPECT_EQ(f.discover[2].excludeNames, (std::vector<std::string>{"all", "mig"}));
}

}  // namespace
}  // namespace ker::agent

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "agent/cdi_names.h"
#include "agent/cdi_specs.h"
#include "agent/device_probe.h"

namespace ker::agent {
namespace {

// As `nvidia-ctk cdi generate` writes a spec (trimmed): one device per GPU, an aggregate
// "all", and edits for every device.
const char* kVendorSpec = R"(
cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
  - name: "0"
    containerEdits:
      deviceNodes: [{path: /dev/nvidia0}]
  - name: GPU-7d3c0b1a-0000-0000-0000-000000000000
    containerEdits:
      deviceNodes: [{path: /dev/nvidia0}]
  - name: all
    containerEdits:
      deviceNodes: [{path: /dev/nvidia0}, {path: /dev/nvidia1}]
  - name: elsewhere
    containerEdits:
      deviceNodes: [{path: /dev/nvidia2, hostPath: /opt/stand-in/nvidia2}, {path: /dev/nvidia3, hostPath: /dev/nvidia3}]
containerEdits:
  env: [NVIDIA_VISIBLE_DEVICES=void]
  deviceNodes: [{path: /dev/nvidiactl}]
  mounts:
    - {hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.550, containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.550, options: [ro, nosuid, nodev, bind]}
)";

TEST(CdiNames, FollowTheSpecification) {
  EXPECT_EQ(cdiQualifiedNameProblem("nvidia.com/gpu=GPU-7d3c:0"), "");
  EXPECT_EQ(cdiQualifiedNameProblem("vendor.example/class_1=0"), "");
  EXPECT_EQ(cdiQualifiedNameProblem("nvidia.com/gpu"),
            "\"nvidia.com/gpu\" is not vendor/class=name");
  EXPECT_EQ(cdiQualifiedNameProblem("nvidia.com=0"), "kind \"nvidia.com\" is not vendor/class");
  EXPECT_EQ(cdiQualifiedNameProblem("nvidia.com/gpu="), "device name is empty");
  EXPECT_EQ(cdiQualifiedNameProblem("nvidia.com/gpu-=0"),
            "class \"gpu-\" must end with a letter or digit");
  EXPECT_EQ(cdiQualifiedNameProblem("nvidia.com/gpu=a/b"),
            "device name \"a/b\" has '/', not a letter, digit or one of _-.:");
  EXPECT_EQ(cdiQualifiedNameProblem("_x/gpu=0"), "vendor \"_x\" must start with a letter");
}

TEST(CdiSpecs, AVendorsSpecDefinesItsDevicesUnderItsKind) {
  CdiSpec spec = parseCdiSpec(kVendorSpec);
  EXPECT_EQ(spec.kind, "nvidia.com/gpu");
  EXPECT_EQ(spec.devices, (std::vector<std::string>{"0", "GPU-7d3c0b1a-0000-0000-0000-000000000000",
                                                    "all", "elsewhere"}));
  // The device nodes the host has at the container's path: those the agent can check.
  EXPECT_EQ(spec.deviceNodes.at("0"), (std::vector<std::string>{"/dev/nvidia0"}));
  EXPECT_EQ(spec.deviceNodes.at("elsewhere"), (std::vector<std::string>{"/dev/nvidia3"}));
  // JSON is read as well, as the runtime does.
  CdiSpec json = parseCdiSpec(
      R"({"cdiVersion": "0.6.0", "kind": "example.com/fpga", "devices": [{"name": "f0"}]})");
  EXPECT_EQ(json.devices, (std::vector<std::string>{"f0"}));
}

TEST(CdiSpecs, WhatIsNotASpecIsRefusedNamingTheField) {
  struct Case {
    const char* text;
    const char* expected;
  };
  for (const Case& c : {
           Case{"kind: a.com/b\ndevices: []\n", "cdiVersion: required, a string"},
           Case{"cdiVersion: 0.5.0\ndevices: []\n", "kind: required, a string"},
           Case{"cdiVersion: 0.5.0\nkind: gpu\ndevices: []\n", "kind: kind \"gpu\" is not"},
           Case{"cdiVersion: 0.5.0\nkind: a.com/b\n", "devices: required, a list"},
           Case{"cdiVersion: 0.5.0\nkind: a.com/b\ndevices: [{name: \"x y\"}]\n",
                "devices[0].name: device name \"x y\""},
           Case{"cdiVersion: 0.5.0\nkind: a.com/b\ndevices: [7]\n", "devices[0]: expected"},
           Case{"[", "not YAML or JSON"},
           Case{"- a\n", "expected a mapping"},
       }) {
    try {
      parseCdiSpec(c.text);
      ADD_FAILURE() << "parsed: " << c.text;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(c.expected), std::string::npos)
          << e.what() << " lacks " << c.expected;
    }
  }
}

// Edits of a shape the runtime will refuse (not a mapping, not a list) are the runtime's to
// refuse: the device is defined, with no device node for the agent to guard, and nothing throws
// but std::invalid_argument.
TEST(CdiSpecs, EditsOfAnotherShapeDefineTheDeviceWithoutNodes) {
  for (const char* edits :
       {"containerEdits: 7", "containerEdits: [a]", "containerEdits: {deviceNodes: 5}",
        "containerEdits: {deviceNodes: [7]}"}) {
    const std::string text =
        std::string("cdiVersion: 0.5.0\nkind: a.com/b\ndevices:\n  - name: x\n    ") + edits + "\n";
    try {
      const CdiSpec spec = parseCdiSpec(text);
      EXPECT_EQ(spec.devices, std::vector<std::string>{"x"}) << edits;
      EXPECT_TRUE(spec.deviceNodes.empty()) << edits;
    } catch (const std::invalid_argument& e) {
      ADD_FAILURE() << edits << ": " << e.what();
    }
  }
}

TEST(CdiSpecs, TheDirectoriesJsonAndYamlFilesDefineTheDevices) {
  char tmpl[] = "/tmp/ker-cdi-test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  std::filesystem::create_directories(root + "/etc/cdi");
  std::filesystem::create_directories(root + "/var/run/cdi");
  std::ofstream(root + "/etc/cdi/nvidia.yaml") << kVendorSpec;
  std::ofstream(root + "/var/run/cdi/fpga.json")
      << R"({"cdiVersion": "0.6.0", "kind": "example.com/fpga", "devices": [{"name": "f0"}]})";
  std::ofstream(root + "/var/run/cdi/notes.txt") << "not a spec";
  std::ofstream(root + "/var/run/cdi/broken.yaml") << "cdiVersion: 0.5.0\n";

  CdiDevices found = readCdiSpecDirs(root, {"/etc/cdi", "/var/run/cdi", "/missing"});
  EXPECT_EQ(found.names,
            (std::set<std::string>{"example.com/fpga=f0", "nvidia.com/gpu=0",
                                   "nvidia.com/gpu=GPU-7d3c0b1a-0000-0000-0000-000000000000",
                                   "nvidia.com/gpu=all", "nvidia.com/gpu=elsewhere"}));
  ASSERT_EQ(found.problems.size(), 1u);
  EXPECT_EQ(found.problems[0], "/var/run/cdi/broken.yaml: kind: required, a string");
  std::filesystem::remove_all(root);
}

// A device whose CDI name the specs no longer define (the vendor's spec was removed or
// regenerated without it) is unhealthy, as one whose device node went is.
TEST(CdiSpecs, ADeviceMissingFromTheSpecsIsUnhealthy) {
  char tmpl[] = "/tmp/ker-cdi-probe.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  std::filesystem::create_directories(root + "/etc/cdi");
  DeviceProbe probe(root, {"/etc/cdi"});
  DeviceSpec gpu;
  gpu.name = "gpu0";
  gpu.cdiDevice = "nvidia.com/gpu=GPU-7d3c0b1a-0000-0000-0000-000000000000";
  HealthObservation seen = probe.check(gpu, probe.cdiDevices().names);
  EXPECT_FALSE(seen.healthy);
  EXPECT_EQ(seen.problem,
            "CDI device nvidia.com/gpu=GPU-7d3c0b1a-0000-0000-0000-000000000000 is in no spec "
            "under /etc/cdi");
  std::ofstream(root + "/etc/cdi/nvidia.yaml") << kVendorSpec;
  EXPECT_TRUE(probe.check(gpu, probe.cdiDevices().names).healthy);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace ker::agent

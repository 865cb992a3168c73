#include <gtest/gtest.h>

#include <map>
#include <set>

#include "bench/cluster.h"
#include "common/label_selector.h"
#include "common/node_selector.h"
#include "model/objects.h"

namespace ker::bench {
namespace {

// The bench's figures hold only if its objects are what it says: kubelet-sized Nodes, devices
// the extender accepts and places, and claims whose selectors pick what the bind stage expects.

TEST(BenchClusterTest, NodesAreKubeletSizedWithFiftyImages) {
  for (size_t i : {0u, 1u, 4999u}) {
    const auto node = kubeletNode(i);
    EXPECT_EQ(Node::fromJson(node).meta.name, nodeName(i));
    EXPECT_EQ(node["status"]["images"].size(), 50u);
    EXPECT_EQ(node["status"]["conditions"].size(), 4u);
    EXPECT_EQ(node["status"]["capacity"][kResource], "8");
    // About 7 KB as sent; the API server's metadata (managedFields, uid, timestamps) adds
    // nearly 1 KB, so the bench's Nodes stay within the 5-8 KB of a real GPU node.
    const size_t bytes = node.dump().size();
    EXPECT_GE(bytes, 5000u) << i;
    EXPECT_LE(bytes, 7400u) << i;
  }
  EXPECT_NE(kubeletNode(1).dump(), kubeletNode(2).dump());
  EXPECT_EQ(kubeletNode(7).dump(), kubeletNode(7).dump());  // byte-identical across runs
}

TEST(BenchClusterTest, DevicesAreValidAndPinnedToTheirOwnNode) {
  std::set<std::string> ids;
  for (size_t node : {0u, 9u, 123u}) {
    for (int d = 0; d < kDevicesPerNode; ++d) {
      const auto dev = ExtendedResource::fromJson(device(node, d));
      EXPECT_EQ(dev.invalid, "") << dev.meta.name;
      EXPECT_EQ(dev.meta.name, deviceName(node, d));
      EXPECT_EQ(dev.rawResourceName, kResource);
      EXPECT_TRUE(matches(dev.nodeAffinity, nodeName(node), {}));
      EXPECT_FALSE(matches(dev.nodeAffinity, nodeName(node + 1), {}));
      EXPECT_TRUE(ids.insert(dev.deviceID).second) << dev.deviceID;
    }
  }
}

TEST(BenchClusterTest, EveryTenthNodeHoldsNoK80) {
  auto k80s = [](size_t node) {
    int n = 0;
    for (int d = 0; d < kDevicesPerNode; ++d) {
      n += ExtendedResource::fromJson(device(node, d)).properties.at("type") == "k80" ? 1 : 0;
    }
    return n;
  };
  EXPECT_EQ(k80s(0), 4);
  EXPECT_EQ(k80s(8), 4);
  EXPECT_EQ(k80s(9), 0);
  EXPECT_EQ(k80s(19), 0);
}

TEST(BenchClusterTest, EachNumaNodeHoldsHalfTheK80sAndHalfTheP100s) {
  std::map<std::string, std::multiset<std::string>> numa;
  for (int d = 0; d < kDevicesPerNode; ++d) {
    const auto dev = ExtendedResource::fromJson(device(0, d));
    numa[dev.properties.at("numaNode")].insert(dev.properties.at("type"));
  }
  const std::multiset<std::string> half = {"k80", "k80", "p100", "p100"};
  EXPECT_EQ(numa, (std::map<std::string, std::multiset<std::string>>{{"0", half}, {"1", half}}));
}

TEST(BenchClusterTest, ClaimSelectorsPickTheirTypes) {
  const auto k80 = ExtendedResourceClaim::fromJson(claim("ns", "a", 1, "k80"));
  const auto any = ExtendedResourceClaim::fromJson(claim("ns", "b", 2, ""));
  ASSERT_EQ(k80.invalid, "");
  ASSERT_EQ(any.invalid, "");
  EXPECT_EQ(any.extendedResourceNum, 2);
  EXPECT_EQ(any.rawResourceName, kResource);
  const auto k80Device = ExtendedResource::fromJson(device(0, 0));
  const auto p100Device = ExtendedResource::fromJson(device(0, 7));
  EXPECT_TRUE(matches(k80.metadataRequirements, k80Device.properties));
  EXPECT_FALSE(matches(k80.metadataRequirements, p100Device.properties));
  EXPECT_TRUE(matches(any.metadataRequirements, k80Device.properties));
  EXPECT_TRUE(matches(any.metadataRequirements, p100Device.properties));
}

TEST(BenchClusterTest, PodsNameTheirClaimsForTheExtendersScheduler) {
  const auto p = Pod::fromJson(pod("ns", "bind-0001", {"bind-0001-a", "bind-0001-b"}));
  EXPECT_EQ(p.invalid, "");
  EXPECT_EQ(p.schedulerName, "extended-resource-scheduler");
  EXPECT_EQ(p.claims, (std::vector<std::string>{"bind-0001-a", "bind-0001-b"}));
}

}  // namespace
}  // namespace ker::bench

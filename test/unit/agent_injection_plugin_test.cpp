#include <gtest/gtest.h>

#include "agent/injection_plugin.h"

namespace ker::agent {
namespace {

class FakeClaims : public ClaimSource {
 public:
  Result get(const std::string& ns, const std::string& name, const std::string&) override {
    ++calls;
    auto it = claims.find(objectKey(ns, name));
    if (it == claims.end()) {
      return {nullptr, error.empty() ? Status() : Status::unavailable(error)};
    }
    return {std::make_shared<const ExtendedResourceClaim>(it->second), {}};
  }
  std::map<std::string, ExtendedResourceClaim> claims;
  std::string error;
  int calls = 0;
};

class FakeProbe : public DeviceProbe {
 public:
  FakeProbe() : DeviceProbe("") {}
  std::optional<DeviceNodeInfo> deviceNode(const std::string& path) const override {
    if (path == "/dev/gpu0") {
      return DeviceNodeInfo{'c', 195, 0, 0660, 0, 44};
    }
    return std::nullopt;
  }
};

class InjectionPluginTest : public ::testing::Test {
 protected:
  InjectionPluginTest() : metrics(registry) {
    auto file = std::make_shared<NodeFile>();
    DeviceSpec d;
    d.name = "gpu0";
    d.rawResourceName = "example.com/gpu";
    d.deviceID = "GPU-0";
    d.deviceNodes = {{"/dev/gpu0", "rw"}};
    d.mounts = {{"/opt/lib", "/usr/lib/gpu", true}};
    file->devices = {d};
    inventory = file;
    ExtendedResourceClaim c;
    c.meta.ns = "ns";
    c.meta.name = "c1";
    c.rawResourceName = "example.com/gpu";
    c.phase = ClaimPhase::kBound;
    c.allocated = {"gpu0"};
    c.nodeName = "node-1";
    c.podRef = PodRef{"p", "uid-p"};
    claims.claims["ns/c1"] = c;
  }

  InjectionPlugin plugin() {
    return InjectionPlugin({.node = "node-1",
                            .pluginName = "extended-resource-node-agent",
                            .claims = &claims,
                            .inventory = [this] { return inventory; },
                            .probe = &probe,
                            .metrics = &metrics});
  }

  nri::CreateContainerRequest request(const std::string& claimsAnnotation) {
    nri::CreateContainerRequest req;
    req.mutable_pod()->set_uid("uid-p");
    req.mutable_pod()->set_namespace_("ns");
    req.mutable_pod()->set_name("p");
    if (!claimsAnnotation.empty()) {
      (*req.mutable_pod()->mutable_annotations())[kClaimsAnnotation] = claimsAnnotation;
    }
    req.mutable_container()->set_name("main");
    return req;
  }

  metrics::Registry registry;
  AgentMetrics metrics;
  FakeClaims claims;
  FakeProbe probe;
  std::shared_ptr<const NodeFile> inventory;
};

TEST_F(InjectionPluginTest, ConfigureSubscribesToContainerCreationOnly) {
  nri::ConfigureResponse resp;
  ASSERT_TRUE(plugin().configure({}, &resp).isOk());
  EXPECT_EQ(resp.events(), nri::eventBit(nri::CREATE_CONTAINER));
}

TEST_F(InjectionPluginTest, AnAllocatedDeviceBecomesAContainerAdjustment) {
  nri::CreateContainerResponse resp;
  ASSERT_TRUE(plugin().createContainer(request("c1"), &resp).isOk());
  const auto& adj = resp.adjust();
  ASSERT_EQ(adj.env_size(), 1);
  EXPECT_EQ(adj.env(0).key(), "EXTENDED_RESOURCE_EXAMPLE_COM_GPU");
  EXPECT_EQ(adj.env(0).value(), "GPU-0");
  ASSERT_EQ(adj.linux().devices_size(), 1);
  const auto& dev = adj.linux().devices(0);
  EXPECT_EQ(dev.path(), "/dev/gpu0");
  EXPECT_EQ(dev.type(), "c");
  EXPECT_EQ(dev.major(), 195);
  EXPECT_EQ(dev.minor(), 0);
  EXPECT_EQ(dev.file_mode().value(), 0660u);
  EXPECT_EQ(dev.gid().value(), 44u);
  ASSERT_EQ(adj.linux().resources().devices_size(), 1);
  const auto& rule = adj.linux().resources().devices(0);
  EXPECT_TRUE(rule.allow());
  EXPECT_EQ(rule.type(), "c");
  EXPECT_EQ(rule.major().value(), 195);
  EXPECT_EQ(rule.minor().value(), 0);
  EXPECT_EQ(rule.access(), "rw");
  ASSERT_EQ(adj.mounts_size(), 1);
  EXPECT_EQ(adj.mounts(0).destination(), "/usr/lib/gpu");
  EXPECT_EQ(adj.mounts(0).source(), "/opt/lib");
  EXPECT_EQ(adj.mounts(0).type(), "bind");
  EXPECT_EQ(metrics.containers.labels({"injected"}).value(), 1);
}

TEST_F(InjectionPluginTest, TheInjectedContainerIsMarked) {
  nri::CreateContainerResponse resp;
  ASSERT_TRUE(plugin().createContainer(request("c1"), &resp).isOk());
  EXPECT_EQ(resp.adjust().annotations().at(kInjectedAnnotation), "gpu0");
}

// A container the runtime created while the agent was away is stopped with the next answer
// that can carry an eviction (a refusal cannot).
TEST_F(InjectionPluginTest, AContainerStartedWithoutTheAgentIsEvictedWithTheNextAnswer) {
  InjectionPlugin p = plugin();
  nri::SynchronizeRequest sync;
  auto* pod = sync.add_pods();
  pod->set_id("sandbox-1");
  pod->set_uid("uid-p");
  pod->set_namespace_("ns");
  pod->set_name("p");
  (*pod->mutable_annotations())[kClaimsAnnotation] = "c1";
  (*pod->mutable_annotations())[kRequiredPluginsAnnotation] = R"(["extended-resource-node-agent"])";
  auto* slipped = sync.add_containers();
  slipped->set_id("ctr-slipped");
  slipped->set_pod_sandbox_id("sandbox-1");
  slipped->set_state(nri::CONTAINER_RUNNING);
  auto* fine = sync.add_containers();
  fine->set_id("ctr-fine");
  fine->set_pod_sandbox_id("sandbox-1");
  fine->set_state(nri::CONTAINER_RUNNING);
  (*fine->mutable_annotations())[kInjectedAnnotation] = "gpu0";
  nri::SynchronizeResponse syncResp;
  ASSERT_TRUE(p.synchronize(sync, &syncResp).isOk());

  claims.claims["ns/c1"].podRef = PodRef{"other", "uid-other"};
  nri::CreateContainerResponse refused;
  EXPECT_FALSE(p.createContainer(request("c1"), &refused).isOk());
  claims.claims["ns/c1"].podRef = PodRef{"p", "uid-p"};
  nri::CreateContainerResponse resp;
  ASSERT_TRUE(p.createContainer(request(""), &resp).isOk());
  ASSERT_EQ(resp.evict_size(), 1);
  EXPECT_EQ(resp.evict(0).container_id(), "ctr-slipped");
  nri::CreateContainerResponse later;
  ASSERT_TRUE(p.createContainer(request(""), &later).isOk());
  EXPECT_EQ(later.evict_size(), 0);
  EXPECT_EQ(metrics.evictions.value(), 1);
}

TEST_F(InjectionPluginTest, APodWithoutClaimsIsAnsweredWithoutLookups) {
  nri::CreateContainerResponse resp;
  ASSERT_TRUE(plugin().createContainer(request(""), &resp).isOk());
  EXPECT_FALSE(resp.has_adjust());
  EXPECT_EQ(claims.calls, 0);
  EXPECT_EQ(metrics.containers.labels({"untouched"}).value(), 1);
}

TEST_F(InjectionPluginTest, ARefusalFailsTheCreationWithItsMessage) {
  claims.claims["ns/c1"].podRef = PodRef{"other", "uid-other"};
  nri::CreateContainerResponse resp;
  nri::Status s = plugin().createContainer(request("c1"), &resp);
  ASSERT_EQ(s.code(), nri::Status::Code::kRpcError);
  EXPECT_EQ(s.rpcCode(), nri::RpcCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("uid-other"), std::string::npos) << s.message();
  EXPECT_EQ(metrics.refusals.labels({"ClaimOfOtherPod"}).value(), 1);
}

TEST_F(InjectionPluginTest, AnUnreadableClaimIsRefusedNotSkipped) {
  claims.claims.clear();
  claims.error = "timed out";
  nri::CreateContainerResponse resp;
  nri::Status s = plugin().createContainer(request("c1"), &resp);
  EXPECT_EQ(s.code(), nri::Status::Code::kRpcError);
  EXPECT_EQ(metrics.refusals.labels({"ClaimUnreadable"}).value(), 1);
}

}  // namespace
}  // namespace ker::agent

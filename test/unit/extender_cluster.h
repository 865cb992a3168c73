#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "common/resource.h"
#include "model/objects.h"
#include "test/unit/fake_api_client.h"

namespace ker::testing {

// A small cluster for request-level tests of the extender and for its fuzzer. The names match
// the request shapes in test/unit/testdata and fuzz/corpus:
// - web-0 (claims k80-erc) fits node-a only: node-b's k80 is held by runner;
// - pair-0 (claims gpu-pair-erc, fpga-erc) needs two GPUs and an FPGA reachable by zone label;
// - runner is Running on node-b holding held-erc, so the cluster starts out consistent.
// The fake assigns UIDs in creation order; bind requests in the corpus name web-0's.
inline constexpr const char* kWebPodUid = "fake-uid-1";

inline void seedExtenderCluster(FakeApiClient& api) {
  using nlohmann::json;
  auto pod = [](const std::string& name, const std::string& claims) {
    return json{{"metadata",
                 {{"name", name},
                  {"namespace", "default"},
                  {"annotations", {{"extendedresource.io/claims", claims}}}}},
                {"spec", {{"schedulerName", "extended-resource-scheduler"}}},
                {"status", {{"phase", "Pending"}}}};
  };
  const json web = api.seed(resources::kPods, pod("web-0", "k80-erc"));
  if (web["metadata"]["uid"] != kWebPodUid) {
    throw std::logic_error("the fake's UID numbering changed; update kWebPodUid and the corpus");
  }
  api.seed(resources::kPods, pod("pair-0", "gpu-pair-erc, fpga-erc"));
  json runner = pod("runner", "held-erc");
  runner["spec"]["nodeName"] = "node-b";
  runner["status"]["phase"] = "Running";
  const std::string runnerUid = api.seed(resources::kPods, runner)["metadata"]["uid"];

  for (const auto& [name, zone] : {std::pair{"node-a", "z1"}, std::pair{"node-b", "z2"}}) {
    api.seed(resources::kNodes,
             {{"metadata",
               {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}, {"zone", zone}}}}}});
  }

  // A selector requirement; values are always a list, even of one.
  auto requirement = [](const std::string& key, const std::string& op, auto... values) {
    return json{{"key", key}, {"operator", op}, {"values", json::array({values...})}};
  };
  auto claim = [](const std::string& name, const std::string& resource, int num,
                  const json& selector) {
    return json{{"apiVersion", "extendedresource.io/v1alpha1"},
                {"kind", "ExtendedResourceClaim"},
                {"metadata", {{"name", name}, {"namespace", "default"}}},
                {"spec",
                 {{"rawResourceName", resource},
                  {"extendedResourceNum", num},
                  {"metadataRequirements", selector}}}};
  };
  api.seed(resources::kExtendedResourceClaims,
           claim("k80-erc", "nvidia.com/gpu", 1, {{"matchLabels", {{"type", "k80"}}}}));
  api.seed(resources::kExtendedResourceClaims,
           claim("gpu-pair-erc", "nvidia.com/gpu", 2,
                 {{"matchExpressions", json::array({requirement("type", "In", "k80", "p100")})}}));
  api.seed(resources::kExtendedResourceClaims, claim("fpga-erc", "xilinx.com/fpga", 1, json{}));
  json held = claim("held-erc", "nvidia.com/gpu", 1, json{});
  held["status"] = {{"phase", "Bound"},
                    {"extendedResourceNames", json::array({"k80-node-b-gpu1"})},
                    {"nodeName", "node-b"},
                    {"podRef", {{"name", "runner"}, {"uid", runnerUid}}}};
  const std::string heldUid = api.seed(resources::kExtendedResourceClaims, held)["metadata"]["uid"];

  auto device = [](const std::string& name, const std::string& resource, const std::string& type,
                   const json& term) {
    return json{{"apiVersion", "extendedresource.io/v1alpha1"},
                {"kind", "ExtendedResource"},
                {"metadata", {{"name", name}}},
                {"spec",
                 {{"rawResourceName", resource},
                  {"deviceID", name + "-id"},
                  {"properties", {{"type", type}}},
                  {"nodeAffinity", {{"required", {{"nodeSelectorTerms", json::array({term})}}}}}}}};
  };
  auto onNode = [&requirement](const std::string& node) {
    return json{{"matchFields", json::array({requirement("metadata.name", "In", node)})}};
  };
  api.seed(resources::kExtendedResources,
           device("k80-node-a-gpu0", "nvidia.com/gpu", "k80", onNode("node-a")));
  api.seed(resources::kExtendedResources,
           device("k80-node-a-gpu1", "nvidia.com/gpu", "k80", onNode("node-a")));
  api.seed(resources::kExtendedResources,
           device("p100-node-b-gpu0", "nvidia.com/gpu", "p100", onNode("node-b")));
  json bound = device("k80-node-b-gpu1", "nvidia.com/gpu", "k80", onNode("node-b"));
  bound["status"] = {
      {"phase", "Bound"},
      {"claimRef", {{"namespace", "default"}, {"name", "held-erc"}, {"uid", heldUid}}}};
  api.seed(resources::kExtendedResources, bound);
  api.seed(resources::kExtendedResources,
           device("fpga-z1-0", "xilinx.com/fpga", "u250",
                  {{"matchExpressions", json::array({requirement("zone", "In", "z1")})}}));
}

}  // namespace ker::testing

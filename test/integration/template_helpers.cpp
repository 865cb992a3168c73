#include "template_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "model/objects.h"

namespace ker::itest {

using nlohmann::json;

json templateObject(const std::string& ns, const std::string& name, const std::string& resource) {
  return {{"apiVersion", kApiVersion},
          {"kind", "ExtendedResourceClaimTemplate"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"metadata", {{"labels", {{"app", "web"}}}}},
            {"spec",
             {{"rawResourceName", resource},
              {"metadataRequirements", {{"matchLabels", {{"type", "k80"}}}}}}}}}};
}

std::vector<json> generatedClaimsOf(KubeClient& api, const std::string& ns, const json& pod) {
  ListOptions opts;
  opts.labelSelector = std::string(kPodUidLabel) + "=" + pod["metadata"]["uid"].get<std::string>();
  std::vector<json> out;
  const json list = api.list(resources::kExtendedResourceClaims, ns, opts);
  for (const auto& c : list["items"]) {
    out.push_back(c);
  }
  return out;
}

std::vector<std::string> checkTemplatePods(KubeClient& api, const std::string& ns,
                                           const std::vector<json>& pods) {
  std::vector<std::string> devices;
  for (const auto& p : pods) {
    const std::string name = p["metadata"]["name"];
    const auto claims = generatedClaimsOf(api, ns, p);
    EXPECT_EQ(claims.size(), 1u) << name;
    if (claims.size() != 1) {
      continue;
    }
    const json& c = claims[0];
    const std::string claimName = c["metadata"]["name"];
    EXPECT_EQ(p.value("/metadata/annotations"_json_pointer, json::object())
                  .value(kGeneratedClaimsAnnotation, ""),
              json({{"gpu", claimName}}).dump())
        << name;
    EXPECT_EQ(c["metadata"]["ownerReferences"][0]["uid"], p["metadata"]["uid"]);
    EXPECT_EQ(c["metadata"]["labels"]["app"], "web");
    EXPECT_EQ(c.value("/status/phase"_json_pointer, ""), "Bound") << claimName;
    EXPECT_EQ(c.value("/status/podRef/uid"_json_pointer, ""), p["metadata"]["uid"]) << claimName;
    for (const auto& d : c.value("/status/extendedResourceNames"_json_pointer, json::array())) {
      devices.push_back(d);
    }
  }
  std::sort(devices.begin(), devices.end());
  EXPECT_EQ(std::adjacent_find(devices.begin(), devices.end()), devices.end())
      << "a device is in two claims";
  return devices;
}

}  // namespace ker::itest

#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/kube_client.h"

// What the tests of claims made from templates (docs/templates.md) share: the template, and
// reading back the claims the controller made for a pod.
namespace ker::itest {

// A template for one device of `resource` with type=k80; its claims are labelled app=web.
nlohmann::json templateObject(const std::string& ns, const std::string& name,
                              const std::string& resource);

// The claims the controller made for a pod (labelled with its UID), as the API has them.
std::vector<nlohmann::json> generatedClaimsOf(KubeClient& api, const std::string& ns,
                                              const nlohmann::json& pod);

// Each pod bound, with exactly one generated claim that its record names, Bound to it; the
// devices of all of them, sorted, which must be distinct.
std::vector<std::string> checkTemplatePods(KubeClient& api, const std::string& ns,
                                           const std::vector<nlohmann::json>& pods);

}  // namespace ker::itest

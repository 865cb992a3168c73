// Reads the cluster's devices, claims, pods and nodes and reports every violated invariant
// of the data model; exits 1 when there is any, 2 on a usage or API error.
#include <chrono>
#include <cstdio>
#include <exception>
#include <thread>

#include "common/flags.h"
#include "common/kube_client.h"
#include "model/invariants.h"
#include "model/objects.h"

namespace {

template <class T>
std::vector<T> listTyped(ker::KubeClient& api, const ker::Resource& res) {
  std::vector<T> out;
  for (const auto& item : api.listAll(res, "", {}).items) {
    out.push_back(T::fromJson(item));
  }
  return out;
}

ker::ClusterSnapshot readSnapshot(ker::KubeClient& api) {
  ker::ClusterSnapshot snapshot;
  snapshot.devices = listTyped<ker::ExtendedResource>(api, ker::resources::kExtendedResources);
  snapshot.claims =
      listTyped<ker::ExtendedResourceClaim>(api, ker::resources::kExtendedResourceClaims);
  snapshot.pods = listTyped<ker::Pod>(api, ker::resources::kPods);
  snapshot.nodes = listTyped<ker::Node>(api, ker::resources::kNodes);
  return snapshot;
}

}  // namespace

int main(int argc, char** argv) {
  ker::FlagSet flags("ker-check-invariants",
                     "Checks the extended-resource invariants against a cluster's API state.");
  auto* kubeconfig = flags.addString(
      "kubeconfig", "",
      "kubeconfig file (default: $KUBECONFIG, else in-cluster, else ~/.kube/config)");
  // A check is one moment's lists, and a cluster at work passes through states the invariants
  // forbid for a few milliseconds (a pod the kubelet just reported finished whose claim the
  // controller has not released yet). Checking again until a check is clean tells those from
  // a state that stays broken.
  auto* settle = flags.addDuration(
      "settle", std::chrono::milliseconds(0),
      "while a check finds violations, check again every 500ms for up to this long and report "
      "the last check (0: check once)");
  if (auto r = flags.parse(argc, argv); r.status != ker::FlagParseResult::kOk) {
    r.print();
    return r.exitCode();
  }
  try {
    ker::KubeClient api(ker::KubeConfig::load(*kubeconfig));
    const auto deadline = std::chrono::steady_clock::now() + *settle;
    ker::ClusterSnapshot snapshot = readSnapshot(api);
    auto violations = ker::checkInvariants(snapshot);
    while (!violations.empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      snapshot = readSnapshot(api);
      violations = ker::checkInvariants(snapshot);
    }
    for (const auto& v : violations) {
      std::printf("VIOLATION: %s\n", v.c_str());
    }
    std::printf("checked %zu devices, %zu claims, %zu pods: %zu violations\n",
                snapshot.devices.size(), snapshot.claims.size(), snapshot.pods.size(),
                violations.size());
    return violations.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}

#include "bench/cluster.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>

#include "common/api_error.h"

namespace ker::bench {

namespace {

using json = nlohmann::json;

// Deterministic pseudo-random hex, so every run builds byte-identical objects.
std::string hex(uint64_t seed, size_t len) {
  std::string out;
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  while (out.size() < len) {
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 29;
    out += "0123456789abcdef"[x & 15];
  }
  return out;
}

const char* const kImages[] = {
    "registry.k8s.io/pause",
    "registry.k8s.io/kube-proxy",
    "docker.io/library/nginx",
    "docker.io/library/redis",
    "docker.io/library/postgres",
    "quay.io/prometheus/node-exporter",
    "nvcr.io/nvidia/k8s-device-plugin",
    "nvcr.io/nvidia/cuda",
    "ghcr.io/example/trainer",
    "ghcr.io/example/inference",
};

json condition(const char* type, const char* status, const char* reason, const char* message) {
  return {{"type", type},
          {"status", status},
          {"lastHeartbeatTime", "2026-01-12T09:41:27Z"},
          {"lastTransitionTime", "2026-01-05T17:02:11Z"},
          {"reason", reason},
          {"message", message}};
}

}  // namespace

std::string nodeName(size_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "node-%05zu", i);
  return buf;
}

std::string deviceName(size_t node, int d) {
  return nodeName(node) + "-gpu" + std::to_string(d);
}

json kubeletNode(size_t i) {
  const std::string name = nodeName(i);
  const std::string zone = std::string("us-east-1") + static_cast<char>('a' + i % 3);
  const std::string ip = "10." + std::to_string(i / 65536 % 256) + "." +
                         std::to_string(i / 256 % 256) + "." + std::to_string(i % 256);
  const std::string instance = "i-0" + hex(i, 16);
  json images = json::array();
  for (size_t k = 0; k < 50; ++k) {
    const std::string repo = kImages[k % std::size(kImages)];
    // As the container runtime reports them: by tag, some by digest as well.
    json names = {repo + ":v1." + std::to_string(k)};
    if (k % 5 == 0) {
      names.push_back(repo + "@sha256:" + hex(k * 7919 + 1, 64));
    }
    images.push_back({{"names", names}, {"sizeBytes", 1000000 + k * 7340033}});
  }
  json resources = {{"cpu", "8"},
                    {"ephemeral-storage", "104845292Ki"},
                    {"hugepages-1Gi", "0"},
                    {"hugepages-2Mi", "0"},
                    {"memory", "32386300Ki"},
                    {"pods", "110"},
                    {kResource, std::to_string(kDevicesPerNode)}};
  json allocatable = resources;
  allocatable["cpu"] = "7910m";
  allocatable["ephemeral-storage"] = "95551679124";
  allocatable["memory"] = "31369468Ki";
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name},
        {"labels",
         {{"beta.kubernetes.io/arch", "amd64"},
          {"beta.kubernetes.io/instance-type", "g4dn.2xlarge"},
          {"beta.kubernetes.io/os", "linux"},
          {"failure-domain.beta.kubernetes.io/region", "us-east-1"},
          {"failure-domain.beta.kubernetes.io/zone", zone},
          {"kubernetes.io/arch", "amd64"},
          {"kubernetes.io/hostname", name},
          {"kubernetes.io/os", "linux"},
          {"node.kubernetes.io/instance-type", "g4dn.2xlarge"},
          {"topology.kubernetes.io/region", "us-east-1"},
          {"topology.kubernetes.io/zone", zone},
          {"nvidia.com/gpu.present", "true"},
          {"pool", "gpu-" + std::to_string(i % 8)}}},
        {"annotations",
         {{"node.alpha.kubernetes.io/ttl", "0"},
          {"volumes.kubernetes.io/controller-managed-attach-detach", "true"},
          {"csi.volume.kubernetes.io/nodeid", "{\"ebs.csi.aws.com\":\"" + instance + "\"}"},
          {"kubeadm.alpha.kubernetes.io/cri-socket", "unix:///run/containerd/containerd.sock"}}}}},
      {"spec",
       {{"podCIDR", "10.244." + std::to_string(i % 256) + ".0/24"},
        {"podCIDRs", {"10.244." + std::to_string(i % 256) + ".0/24"}},
        {"providerID", "aws:///" + zone + "/" + instance}}},
      {"status",
       {{"capacity", resources},
        {"allocatable", allocatable},
        {"conditions",
         {condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available"),
          condition("DiskPressure", "False", "KubeletHasNoDiskPressure",
                    "kubelet has no disk pressure"),
          condition("PIDPressure", "False", "KubeletHasSufficientPID",
                    "kubelet has sufficient PID available"),
          condition("Ready", "True", "KubeletReady", "kubelet is posting ready status")}},
        {"addresses",
         {{{"type", "InternalIP"}, {"address", ip}},
          {{"type", "InternalDNS"}, {"address", "ip-" + ip + ".ec2.internal"}},
          {{"type", "Hostname"}, {"address", name}}}},
        {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", 10250}}}}},
        {"nodeInfo",
         {{"machineID", hex(i + 1, 32)},
          {"systemUUID", "ec2" + hex(i + 2, 5) + "-" + hex(i + 3, 4) + "-" + hex(i + 4, 4) + "-" +
                             hex(i + 5, 4) + "-" + hex(i + 6, 12)},
          {"bootID", hex(i + 7, 8) + "-" + hex(i + 8, 4) + "-" + hex(i + 9, 4) + "-" +
                         hex(i + 10, 4) + "-" + hex(i + 11, 12)},
          {"kernelVersion", "6.1.0-28-cloud-amd64"},
          {"osImage", "Debian GNU/Linux 12 (bookworm)"},
          {"containerRuntimeVersion", "containerd://1.7.24"},
          {"kubeletVersion", "v1.37.1"},
          {"kubeProxyVersion", ""},
          {"operatingSystem", "linux"},
          {"architecture", "amd64"}}},
        {"images", images}}}};
}

json device(size_t node, int d) {
  const bool k80 = node % 10 != 9 && d < 4;
  const std::string name = deviceName(node, d);
  json term = {{"matchFields",
                {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {nodeName(node)}}}}}};
  return {{"apiVersion", "extendedresource.io/v1alpha1"},
          {"kind", "ExtendedResource"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"rawResourceName", kResource},
            {"deviceID", "GPU-" + hex(node * 8 + static_cast<size_t>(d), 8)},
            // Two NUMA nodes per node, each with half the k80s and half the p100s, for the
            // claims constrained to one NUMA node.
            {"properties",
             {{"type", k80 ? "k80" : "p100"},
              {"memory", k80 ? "12Gi" : "16Gi"},
              {"numaNode", d % 4 < 2 ? "0" : "1"}}},
            {"nodeAffinity", {{"required", {{"nodeSelectorTerms", {term}}}}}}}}};
}

json claim(const std::string& ns, const std::string& name, int count, const std::string& type) {
  json requirements =
      type.empty() ? json{{"matchExpressions",
                           {{{"key", "type"}, {"operator", "In"}, {"values", {"k80", "p100"}}}}}}
                   : json{{"matchLabels", {{"type", type}}}};
  return {{"apiVersion", "extendedresource.io/v1alpha1"},
          {"kind", "ExtendedResourceClaim"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"rawResourceName", kResource},
            {"extendedResourceNum", count},
            {"metadataRequirements", requirements}}}};
}

json pod(const std::string& ns, const std::string& name, const std::vector<std::string>& claims) {
  std::string annotation;
  for (const auto& c : claims) {
    annotation += (annotation.empty() ? "" : ",") + c;
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", ns},
            {"labels", {{"app", "trainer"}, {"pod-template-hash", "7d9f8c6b5"}}},
            {"annotations", {{"extendedresource.io/claims", annotation}}}}},
          {"spec",
           {{"schedulerName", "extended-resource-scheduler"},
            {"terminationGracePeriodSeconds", 0},
            {"containers",
             {{{"name", "trainer"},
               {"image", "ghcr.io/example/trainer:v1.3"},
               {"args", {"--epochs=10", "--data=/data"}},
               {"resources",
                {{"requests", {{"cpu", "2"}, {"memory", "8Gi"}}},
                 {"limits", {{"cpu", "4"}, {"memory", "8Gi"}}}}}}}}}}};
}

json namespaceObject(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
}

void parallelFor(size_t count, int workers, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first;
  std::mutex mu;
  std::vector<std::thread> threads;
  for (int w = 0; w < std::max(workers, 1); ++w) {
    threads.emplace_back([&] {
      for (size_t i = next++; i < count && !failed; i = next++) {
        try {
          fn(i);
        } catch (...) {
          std::lock_guard lock(mu);
          if (!failed.exchange(true)) {
            first = std::current_exception();
          }
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  if (first) {
    std::rethrow_exception(first);
  }
}

CreateStats createAll(ApiClient& api, const Resource& res, const std::string& ns, size_t from,
                      size_t to, const std::function<json(size_t)>& make, int workers) {
  CreateStats stats;
  std::atomic<size_t> created{0};
  std::atomic<size_t> existed{0};
  const auto start = std::chrono::steady_clock::now();
  parallelFor(to > from ? to - from : 0, workers, [&](size_t k) {
    try {
      api.create(res, ns, make(from + k));
      created++;
    } catch (const ApiError& e) {
      if (e.httpStatus() != 409) {
        throw;
      }
      existed++;
    }
  });
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats.created = created;
  stats.existed = existed;
  return stats;
}

}  // namespace ker::bench

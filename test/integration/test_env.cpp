#include "test_env.h"

#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <stdexcept>
#include <thread>

#include "common/api_error.h"
#include "common/signals.h"
#include "model/objects.h"
#include "model/resource_class.h"

namespace ker::itest {

namespace {

// Test clients write to servers that are meant to hang up on them.
const bool kBrokenPipesIgnored = [] {
  ignoreBrokenPipes();
  return true;
}();

}  // namespace

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

int runShell(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) {
    return -1;
  }
  std::string buf;
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, p)) > 0) {
    buf.append(chunk, n);
  }
  int status = pclose(p);
  if (out != nullptr) {
    *out = std::move(buf);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TestEnv* TestEnv::get() {
  static TestEnv* instance = [] {
    const char* file = std::getenv("KER_TEST_ENV");
    return file == nullptr || *file == '\0' ? nullptr : new TestEnv(file);
  }();
  return instance;
}

std::map<std::string, std::string> readEnvFile(const std::string& file) {
  std::ifstream in(file);
  if (!in) {
    throw std::runtime_error("cannot read " + file);
  }
  std::map<std::string, std::string> values;
  for (std::string line; std::getline(in, line);) {
    auto eq = line.find('=');
    if (eq != std::string::npos && line[0] != '#') {
      values[line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  return values;
}

TestEnv::TestEnv(std::string envFile) : values_(readEnvFile(envFile)) {
  dir_ = envFile.substr(0, envFile.rfind('/'));
  admin_ = std::make_unique<KubeClient>(KubeConfig::fromKubeconfigFile(kubeconfig()));
}

std::string TestEnv::value(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) {
    throw std::runtime_error("KER_TEST_ENV has no " + key);
  }
  return it->second;
}

std::string TestEnv::repoRoot() const {
  const char* root = std::getenv("KER_REPO_ROOT");
  return root != nullptr ? root : KER_SOURCE_DIR;
}

std::string TestEnv::binary(const std::string& relativePath) const {
  const char* build = std::getenv("KER_BUILD_DIR");
  return std::string(build != nullptr ? build : KER_BINARY_DIR) + "/" + relativePath;
}

int TestEnv::kubectl(const std::string& args, std::string* out) const {
  std::string bin = values_.count("BIN_DIR") ? value("BIN_DIR") + "/kubectl" : "kubectl";
  return runShell(shellQuote(bin) + " --kubeconfig " + shellQuote(kubeconfig()) + " " + args, out);
}

int TestEnv::launch(const std::string& subcommand, const std::string& args) const {
  std::string out;
  int rc = runShell(shellQuote(repoRoot() + "/test/controlplane/launch.sh") + " " + subcommand +
                        " " + shellQuote(dir_) + " " + args,
                    &out);
  if (rc != 0) {
    fprintf(stderr, "launch.sh %s failed (%d):\n%s\n", subcommand.c_str(), rc, out.c_str());
  }
  return rc;
}

std::string TestEnv::invariantViolations() const {
  std::string out;
  // The previous test's namespace may still be going away, its pods finishing as the check
  // lists them: what counts is a violation that outlasts the controllers' reaction to that.
  int rc = runShell(shellQuote(binary("tools/ker-check-invariants")) + " --settle=15s" +
                        " --kubeconfig " + shellQuote(kubeconfig()),
                    &out);
  return rc == 0 ? std::string() : out.empty() ? "ker-check-invariants failed" : out;
}

void TestEnv::applyCrds(const std::string& dir) const {
  std::string out;
  if (kubectl("apply -f " + shellQuote(dir), &out) != 0) {
    throw std::runtime_error("applying " + dir + " failed: " + out);
  }
  // kubectl wait fails at once, instead of waiting, while a new CRD's status.conditions is
  // still null (test/lib/crds.sh), so it is asked again until 60 s have passed.
  const auto crdsDeadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (kubectl("wait --for=condition=Established --timeout=10s -f " + shellQuote(dir), &out) !=
         0) {
    if (std::chrono::steady_clock::now() > crdsDeadline) {
      throw std::runtime_error("the CRDs of " + dir + " are not Established: " + out);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

void TestEnv::ensureCrds() {
  if (crdsReady_) {
    return;
  }
  applyCrds(repoRoot() + "/crds");
  // Discovery of a new group can lag Established by a moment.
  eventually(
      [&] {
        try {
          admin_->list(resources::kExtendedResourceClaims, "default", ListOptions{.limit = 1});
          admin_->list(resources::kExtendedResources, "", ListOptions{.limit = 1});
          admin_->list(resources::kExtendedResourceClaimTemplates, "default",
                       ListOptions{.limit = 1});
          admin_->list(resources::kExtendedResourceClasses, "", ListOptions{.limit = 1});
          return true;
        } catch (const ApiError&) {
          return false;
        }
      },
      30s);
  crdsReady_ = true;
}

void TestEnv::ensureDeployRbac() {
  if (rbacReady_) {
    return;
  }
  if (launch("apply-deploy-rbac", "") != 0) {
    throw std::runtime_error("applying the ServiceAccounts and RBAC of deploy/ failed");
  }
  rbacReady_ = true;
}

std::string TestEnv::serviceAccountKubeconfig(const std::string& name) {
  ensureDeployRbac();
  std::string file = dir_ + "/" + uniqueName(name) + ".kubeconfig";
  if (launch("sa-kubeconfig", "kube-system " + shellQuote(name) + " " + shellQuote(file)) != 0) {
    throw std::runtime_error("no token for serviceaccount kube-system/" + name);
  }
  return file;
}

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout,
                std::chrono::milliseconds interval) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (done()) {
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return done();
    }
    std::this_thread::sleep_for(interval);
  }
}

std::string uniqueName(const std::string& prefix) {
  static std::atomic<int> counter{0};
  static const std::string suffix = [] {
    std::random_device rd;
    std::string s;
    for (int i = 0; i < 5; ++i) {
      s += "abcdefghijklmnopqrstuvwxyz0123456789"[rd() % 36];
    }
    return s;
  }();
  return prefix + "-" + std::to_string(++counter) + "-" + suffix;
}

nlohmann::json nodeObject(const std::string& name,
                          const std::map<std::string, std::string>& labels) {
  nlohmann::json allLabels = labels;
  allLabels["kubernetes.io/hostname"] = name;
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata", {{"name", name}, {"labels", allLabels}}},
      {"status",
       {{"allocatable", {{"cpu", "8"}, {"memory", "32Gi"}, {"pods", "110"}}},
        {"capacity", {{"cpu", "8"}, {"memory", "32Gi"}, {"pods", "110"}}},
        {"conditions", {{{"type", "Ready"}, {"status", "True"}, {"reason", "KubeletReady"}}}}}}};
}

nlohmann::json k80ClassObject(const std::string& name, const std::string& extendedResourceName,
                              const std::string& rawResourceName) {
  return {{"apiVersion", kApiVersion},
          {"kind", "ExtendedResourceClass"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"extendedResourceName", extendedResourceName},
            {"rawResourceName", rawResourceName},
            {"metadataRequirements", {{"matchLabels", {{"type", "k80"}}}}}}}};
}

nlohmann::json deploymentObject(const std::string& ns, const std::string& name, int replicas,
                                const nlohmann::json& podSpec) {
  const nlohmann::json labels = {{"app", name}};
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", labels}}},
            {"template", {{"metadata", {{"labels", labels}}}, {"spec", podSpec}}}}}};
}

nlohmann::json deviceObject(const std::string& name, const std::string& node,
                            const std::string& rawResourceName,
                            const std::map<std::string, std::string>& properties) {
  nlohmann::json term = {
      {"matchFields", {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {node}}}}}};
  return {{"apiVersion", "extendedresource.io/v1alpha1"},
          {"kind", "ExtendedResource"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"rawResourceName", rawResourceName},
            {"deviceID", name + "-id"},
            {"properties", properties},
            {"nodeAffinity", {{"required", {{"nodeSelectorTerms", {term}}}}}}}}};
}

nlohmann::json claimObject(const std::string& ns, const std::string& name,
                           const std::string& rawResourceName, int64_t count,
                           const std::map<std::string, std::string>& matchLabels) {
  nlohmann::json spec = {{"rawResourceName", rawResourceName}, {"extendedResourceNum", count}};
  if (!matchLabels.empty()) {
    spec["metadataRequirements"] = {{"matchLabels", matchLabels}};
  }
  return {{"apiVersion", "extendedresource.io/v1alpha1"},
          {"kind", "ExtendedResourceClaim"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", spec}};
}

nlohmann::json podObject(const std::string& ns, const std::string& name,
                         const std::vector<std::string>& claims, const std::string& schedulerName) {
  std::string annotation;
  for (const auto& c : claims) {
    annotation += (annotation.empty() ? "" : ",") + c;
  }
  nlohmann::json meta = {{"name", name}, {"namespace", ns}};
  if (!annotation.empty()) {
    meta["annotations"] = {{"extendedresource.io/claims", annotation}};
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", meta},
          {"spec",
           {{"schedulerName", schedulerName},
            {"terminationGracePeriodSeconds", 0},
            {"containers",
             {{{"name", "app"},
               {"image", "registry.k8s.io/pause:3.10"},
               {"resources", {{"requests", {{"cpu", "10m"}}}}}}}}}}};
}

std::string createNamespace(KubeClient& api, const std::string& prefix) {
  std::string name = uniqueName(prefix);
  api.create(resources::kNamespaces, "",
             {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}});
  return name;
}

void deletePodNow(KubeClient& api, const std::string& ns, const std::string& name) {
  try {
    api.remove(resources::kPods, ns, name, DeleteOptions{.gracePeriodSeconds = 0});
  } catch (const ApiError& e) {
    if (!e.isNotFound()) {
      throw;
    }
  }
}

int deleteAllPodsNow(KubeClient& api, const std::string& ns) {
  const nlohmann::json pods = api.list(resources::kPods, ns, {});
  for (const auto& p : pods["items"]) {
    const std::string name = p["metadata"]["name"];
    if (p["metadata"].contains("finalizers")) {
      try {
        api.patch(resources::kPods, ns, name, PatchType::kMerge,
                  {{"metadata", {{"finalizers", nullptr}}}});
      } catch (const ApiError&) {
        // Gone already, or deleted below all the same.
      }
    }
    deletePodNow(api, ns, name);
  }
  return static_cast<int>(pods["items"].size());
}

}  // namespace ker::itest

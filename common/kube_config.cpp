#include "common/kube_config.h"

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "common/logging.h"

namespace ker {

namespace fs = std::filesystem;

namespace {

constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
// A token file is re-read at least this often even when stat() says it is unchanged, in case
// an in-place rewrite kept size and mtime (coarse timestamps).
constexpr auto kTokenMaxAge = std::chrono::minutes(1);

std::runtime_error configError(const std::string& message) {
  return std::runtime_error("kubeconfig: " + message);
}

std::optional<std::string> tryReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) {
    return std::nullopt;
  }
  return std::move(content).str();
}

std::string readFile(const fs::path& path, const std::string& what) {
  auto content = tryReadFile(path);
  if (!content) {
    throw configError("cannot read " + what + " " + path.string());
  }
  return *content;
}

std::string trimmed(std::string_view text) {
  const char* kSpace = " \t\r\n";
  size_t begin = text.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) {
    return {};
  }
  size_t end = text.find_last_not_of(kSpace);
  return std::string(text.substr(begin, end - begin + 1));
}

int base64Value(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

// Standard base64 with optional padding; whitespace (line breaks in pasted PEM) is skipped.
std::string base64Decode(std::string_view in, const std::string& what) {
  std::string out;
  out.reserve(in.size() * 3 / 4);
  uint32_t bits = 0;
  int bitCount = 0;
  size_t padding = 0;
  for (char c : in) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      continue;
    }
    if (c == '=') {
      ++padding;
      continue;
    }
    int value = base64Value(c);
    if (value < 0 || padding > 0) {
      throw configError(what + " is not valid base64");
    }
    bits = (bits << 6) | static_cast<uint32_t>(value);
    bitCount += 6;
    if (bitCount >= 8) {
      bitCount -= 8;
      out += static_cast<char>((bits >> bitCount) & 0xFF);
    }
  }
  // Leftover bits must be zero padding of a 2- or 3-character final group.
  if (padding > 2 || bitCount >= 6 || (bits & ((1u << bitCount) - 1)) != 0) {
    throw configError(what + " is not valid base64");
  }
  return out;
}

std::string scalar(const YAML::Node& map, const char* key) {
  YAML::Node node = map[key];
  if (!node || node.IsNull()) {
    return {};
  }
  if (!node.IsScalar()) {
    throw configError(std::string("field ") + key + " must be a string");
  }
  return node.as<std::string>();
}

YAML::Node findNamed(const YAML::Node& root, const char* listKey, const char* itemKey,
                     const std::string& name) {
  YAML::Node list = root[listKey];
  if (list && list.IsSequence()) {
    for (const YAML::Node& entry : list) {
      if (entry.IsMap() && scalar(entry, "name") == name) {
        YAML::Node item = entry[itemKey];
        if (!item || !item.IsMap()) {
          throw configError(std::string(itemKey) + " \"" + name + "\" has no " + itemKey +
                            " section");
        }
        return item;
      }
    }
  }
  throw configError(std::string(itemKey) + " \"" + name + "\" not found in " + listKey);
}

fs::path resolve(const std::string& baseDir, const std::string& path) {
  fs::path p(path);
  return p.is_absolute() || baseDir.empty() ? p : fs::path(baseDir) / p;
}

// PEM material given inline (base64 *-data) or as a file; inline wins, like kubectl.
std::string pemField(const YAML::Node& map, const std::string& baseDir, const char* fileKey,
                     const std::string& owner) {
  std::string dataKey = std::string(fileKey) + "-data";
  std::string data = scalar(map, dataKey.c_str());
  if (!data.empty()) {
    return base64Decode(data, owner + " " + dataKey);
  }
  std::string file = scalar(map, fileKey);
  if (!file.empty()) {
    return readFile(resolve(baseDir, file), owner + " " + fileKey);
  }
  return {};
}

bool flag(const YAML::Node& map, const char* key) {
  YAML::Node node = map[key];
  return node && !node.IsNull() && node.as<bool>();
}

void applyCluster(KubeConfig& config, const YAML::Node& cluster, const std::string& name,
                  const std::string& baseDir) {
  std::string owner = "cluster \"" + name + "\"";
  config.server = scalar(cluster, "server");
  while (!config.server.empty() && config.server.back() == '/') {
    config.server.pop_back();
  }
  if (config.server.rfind("https://", 0) != 0 && config.server.rfind("http://", 0) != 0) {
    throw configError(owner + " needs a server URL starting with https:// or http://");
  }
  config.caData = pemField(cluster, baseDir, "certificate-authority", owner);
  config.insecureSkipTlsVerify = flag(cluster, "insecure-skip-tls-verify");
  if (config.insecureSkipTlsVerify && !config.caData.empty()) {
    throw configError(owner + " sets both a certificate authority and insecure-skip-tls-verify");
  }
  config.tlsServerName = scalar(cluster, "tls-server-name");
  if (!scalar(cluster, "proxy-url").empty()) {
    log::warn("kubeconfig proxy-url is ignored; use HTTPS_PROXY instead", {{"cluster", name}});
  }
}

void applyUser(KubeConfig& config, const YAML::Node& user, const std::string& name,
               const std::string& baseDir) {
  std::string owner = "user \"" + name + "\"";
  if (user["exec"]) {
    throw configError(owner + ": exec credential plugins are not supported; use a token, " +
                      "tokenFile or client certificate");
  }
  if (user["auth-provider"]) {
    throw configError(owner + ": auth-provider plugins are not supported; use a token, " +
                      "tokenFile or client certificate");
  }
  if (!scalar(user, "username").empty() || !scalar(user, "password").empty()) {
    throw configError(owner + ": basic authentication is not supported");
  }
  config.clientCertData = pemField(user, baseDir, "client-certificate", owner);
  config.clientKeyData = pemField(user, baseDir, "client-key", owner);
  if (config.clientCertData.empty() != config.clientKeyData.empty()) {
    throw configError(owner + " needs both a client certificate and a client key");
  }
  config.token = scalar(user, "token");
  // As in client-go's kubeconfig loader, a literal token takes precedence over tokenFile.
  std::string tokenFile = scalar(user, "tokenFile");
  if (config.token.empty() && !tokenFile.empty()) {
    config.tokenFile = resolve(baseDir, tokenFile).string();
    if (!config.bearerToken()) {
      throw configError(owner + ": cannot read tokenFile " + config.tokenFile);
    }
  }
}

// Token files change under a running process (service-account token rotation), so they are
// re-read whenever stat() reports a different file; the last good token survives a failed read.
class TokenFileCache {
 public:
  std::optional<std::string> read(const std::string& path) {
    std::lock_guard lock(mu_);
    Entry& entry = entries_[path];
    struct stat st {};
    auto now = std::chrono::steady_clock::now();
    bool statOk = ::stat(path.c_str(), &st) == 0;
    if (statOk && entry.token && entry.sameFile(st) && now - entry.readAt < kTokenMaxAge) {
      return entry.token;
    }
    std::optional<std::string> content = statOk ? tryReadFile(path) : std::nullopt;
    std::string token = content ? trimmed(*content) : std::string();
    if (token.empty()) {
      log::warn(entry.token ? "cannot read a bearer token; keeping the last one read"
                            : "cannot read a bearer token; sending no token",
                {{"file", path}});
      return entry.token;
    }
    entry.token = std::move(token);
    entry.readAt = now;
    entry.dev = st.st_dev;
    entry.ino = st.st_ino;
    entry.size = st.st_size;
    entry.mtime = st.st_mtim;
    return entry.token;
  }

 private:
  struct Entry {
    std::optional<std::string> token;
    std::chrono::steady_clock::time_point readAt;
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    timespec mtime{};

    bool sameFile(const struct stat& st) const {
      return st.st_dev == dev && st.st_ino == ino && st.st_size == size &&
             st.st_mtim.tv_sec == mtime.tv_sec && st.st_mtim.tv_nsec == mtime.tv_nsec;
    }
  };
  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
};

TokenFileCache& tokenFileCache() {
  static TokenFileCache cache;
  return cache;
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

KubeConfig KubeConfig::fromKubeconfigFile(const std::string& path, const std::string& context) {
  std::string yaml = readFile(path, "kubeconfig");
  try {
    return fromKubeconfigYaml(yaml, fs::absolute(path).parent_path().string(), context);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string(e.what()) + " (in " + path + ")");
  }
}

KubeConfig KubeConfig::fromKubeconfigYaml(const std::string& yaml, const std::string& baseDir,
                                          const std::string& context) {
  try {
    YAML::Node root = YAML::Load(yaml);
    if (!root.IsMap()) {
      throw configError("not a kubeconfig document");
    }
    std::string contextName = context.empty() ? scalar(root, "current-context") : context;
    if (contextName.empty()) {
      throw configError("no current-context is set and no context was requested");
    }
    YAML::Node ctx = findNamed(root, "contexts", "context", contextName);

    KubeConfig config;
    std::string clusterName = scalar(ctx, "cluster");
    if (clusterName.empty()) {
      throw configError("context \"" + contextName + "\" names no cluster");
    }
    applyCluster(config, findNamed(root, "clusters", "cluster", clusterName), clusterName, baseDir);
    // A context may name no user: the server is then called anonymously.
    std::string userName = scalar(ctx, "user");
    if (!userName.empty()) {
      applyUser(config, findNamed(root, "users", "user", userName), userName, baseDir);
    }
    std::string ns = scalar(ctx, "namespace");
    if (!ns.empty()) {
      config.ns = ns;
    }
    return config;
  } catch (const YAML::Exception& e) {
    throw configError(std::string("malformed YAML: ") + e.what());
  }
}

KubeConfig KubeConfig::inCluster(const std::string& rootDir) {
  std::string host = env("KUBERNETES_SERVICE_HOST");
  std::string port = env("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    throw std::runtime_error(
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  }
  if (host.find(':') != std::string::npos) {
    host = "[" + host + "]";  // IPv6 literal
  }
  fs::path dir = rootDir.empty() ? fs::path(kServiceAccountDir) : fs::path(rootDir);

  KubeConfig config;
  config.server = "https://" + host + ":" + port;
  config.tokenFile = (dir / "token").string();
  if (!config.bearerToken()) {
    throw std::runtime_error("in-cluster config: cannot read service account token " +
                             config.tokenFile);
  }
  if (auto ca = tryReadFile(dir / "ca.crt")) {
    config.caData = std::move(*ca);
  } else {
    // client-go tolerates this too; the system trust store may still verify the server.
    log::warn("in-cluster config: cannot read the CA certificate; using the system trust store",
              {{"file", (dir / "ca.crt").string()}});
  }
  if (auto ns = tryReadFile(dir / "namespace"); ns && !trimmed(*ns).empty()) {
    config.ns = trimmed(*ns);
  }
  return config;
}

KubeConfig KubeConfig::load(const std::string& kubeconfigFlag) {
  if (!kubeconfigFlag.empty()) {
    return fromKubeconfigFile(kubeconfigFlag);
  }
  if (std::string list = env("KUBECONFIG"); !list.empty()) {
    // Merging several kubeconfigs is not supported: the first existing entry is used.
    std::stringstream entries(list);
    for (std::string entry; std::getline(entries, entry, ':');) {
      if (!entry.empty() && fs::exists(entry)) {
        return fromKubeconfigFile(entry);
      }
    }
    throw std::runtime_error("none of the files in KUBECONFIG=" + list + " exists");
  }
  std::optional<fs::path> homeConfig;
  if (std::string home = env("HOME");
      !home.empty() && fs::exists(fs::path(home) / ".kube/config")) {
    homeConfig = fs::path(home) / ".kube/config";
  }
  if (!env("KUBERNETES_SERVICE_HOST").empty()) {
    try {
      return inCluster();
    } catch (const std::runtime_error& e) {
      // A pod without a mounted service account token may still carry a kubeconfig.
      if (!homeConfig) {
        throw;
      }
      log::warn("in-cluster config unusable; using the kubeconfig in HOME",
                {{"error", e.what()}, {"file", homeConfig->string()}});
    }
  }
  if (homeConfig) {
    return fromKubeconfigFile(homeConfig->string());
  }
  throw std::runtime_error(
      "no Kubernetes API configuration found: pass --kubeconfig, set KUBECONFIG, run in a pod "
      "with a service account, or create ~/.kube/config");
}

std::optional<std::string> KubeConfig::bearerToken() const {
  if (!tokenFile.empty()) {
    if (auto fromFile = tokenFileCache().read(tokenFile)) {
      return fromFile;
    }
  }
  if (!token.empty()) {
    return token;
  }
  return std::nullopt;
}

}  // namespace ker

#include "common/kube_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace ker {
namespace {

namespace fs = std::filesystem;

const std::string kCaPem = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
const std::string kCertPem = "-----BEGIN CERTIFICATE-----\nCERT\n-----END CERTIFICATE-----\n";
const std::string kKeyPem = "-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n";

std::string base64(const std::string& in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int shift : {18, 12, 6, 0}) {
      out += kAlphabet[(v >> shift) & 63];
    }
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += std::string{kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out +=
        std::string{kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], '='};
  }
  return out;
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = getenv(name)) {
      old_ = old;
    }
    set(value);
  }
  ~ScopedEnv() { set(old_); }

 private:
  void set(const std::optional<std::string>& value) {
    if (value) {
      setenv(name_, value->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  const char* name_;
  std::optional<std::string> old_;
};

class KubeConfigTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::path(testing::TempDir()) / "kubeconfig-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& content) {
    fs::path path = dir_ / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << content;
    return path;
  }

  // A kubeconfig with one context "main" around the given cluster and user fields.
  std::string kubeconfig(const std::string& cluster, const std::string& user,
                         const std::string& extra = "current-context: main\n") {
    return "apiVersion: v1\nkind: Config\n" + extra +
           "clusters:\n- name: c1\n  cluster:\n    server: https://api.example:6443/\n" + cluster +
           "users:\n- name: u1\n  user:\n" + user +
           "contexts:\n- name: main\n  context:\n    cluster: c1\n    user: u1\n";
  }

  fs::path dir_;
};

TEST_F(KubeConfigTest, ClientCertificateFilesAndCaFileRelativeToTheKubeconfig) {
  write("pki/ca.crt", kCaPem);
  write("pki/client.crt", kCertPem);
  write("pki/client.key", kKeyPem);
  fs::path path = write("conf/config", kubeconfig("    certificate-authority: ../pki/ca.crt\n",
                                                  "    client-certificate: ../pki/client.crt\n"
                                                  "    client-key: ../pki/client.key\n"));
  KubeConfig config = KubeConfig::fromKubeconfigFile(path.string());
  EXPECT_EQ(config.server, "https://api.example:6443");
  EXPECT_EQ(config.caData, kCaPem);
  EXPECT_EQ(config.clientCertData, kCertPem);
  EXPECT_EQ(config.clientKeyData, kKeyPem);
  EXPECT_FALSE(config.insecureSkipTlsVerify);
  EXPECT_FALSE(config.bearerToken());
  EXPECT_EQ(config.ns, "default");
}

TEST_F(KubeConfigTest, InlineBase64Data) {
  std::string yaml = kubeconfig("    certificate-authority-data: " + base64(kCaPem) +
                                    "\n    tls-server-name: kubernetes.default\n",
                                "    client-certificate-data: " + base64(kCertPem) +
                                    "\n    client-key-data: " + base64(kKeyPem) + "\n");
  KubeConfig config = KubeConfig::fromKubeconfigYaml(yaml, dir_.string());
  EXPECT_EQ(config.caData, kCaPem);
  EXPECT_EQ(config.clientCertData, kCertPem);
  EXPECT_EQ(config.clientKeyData, kKeyPem);
  EXPECT_EQ(config.tlsServerName, "kubernetes.default");
}

TEST_F(KubeConfigTest, Base64OfEveryPaddingLength) {
  for (std::string pem : {std::string("a"), std::string("ab"), std::string("abc"),
                          std::string("abcd"), std::string("\xff\x00\x80 binary", 10)}) {
    std::string yaml =
        kubeconfig("    certificate-authority-data: " + base64(pem) + "\n", "    token: t\n");
    EXPECT_EQ(KubeConfig::fromKubeconfigYaml(yaml, "").caData, pem);
  }
}

TEST_F(KubeConfigTest, InvalidBase64IsAnError) {
  std::string yaml = kubeconfig("    certificate-authority-data: 'not*base64'\n", "    token: t\n");
  EXPECT_THROW(
      {
        try {
          KubeConfig::fromKubeconfigYaml(yaml, "");
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find("certificate-authority-data is not valid base64"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      std::runtime_error);
}

TEST_F(KubeConfigTest, StaticToken) {
  KubeConfig config =
      KubeConfig::fromKubeconfigYaml(kubeconfig("", "    token: abc.def\n"), dir_.string());
  EXPECT_EQ(config.bearerToken(), "abc.def");
}

TEST_F(KubeConfigTest, TokenFileIsReReadWhenItRotates) {
  write("token", "first-token\n");
  KubeConfig config =
      KubeConfig::fromKubeconfigYaml(kubeconfig("", "    tokenFile: token\n"), dir_.string());
  EXPECT_EQ(config.tokenFile, (dir_ / "token").string());
  EXPECT_EQ(config.bearerToken(), "first-token");

  // Rotation as the kubelet does it: a new file swapped in.
  write("token.new", "second-token");
  fs::rename(dir_ / "token.new", dir_ / "token");
  EXPECT_EQ(config.bearerToken(), "second-token");

  // An in-place rewrite is noticed too.
  write("token", "third-token-longer");
  EXPECT_EQ(config.bearerToken(), "third-token-longer");
}

TEST_F(KubeConfigTest, VanishedTokenFileKeepsTheLastToken) {
  write("token", "kept");
  KubeConfig config =
      KubeConfig::fromKubeconfigYaml(kubeconfig("", "    tokenFile: token\n"), dir_.string());
  EXPECT_EQ(config.bearerToken(), "kept");
  fs::remove(dir_ / "token");
  EXPECT_EQ(config.bearerToken(), "kept");
}

TEST_F(KubeConfigTest, MissingTokenFileIsAnError) {
  EXPECT_THROW(
      KubeConfig::fromKubeconfigYaml(kubeconfig("", "    tokenFile: nope\n"), dir_.string()),
      std::runtime_error);
}

TEST_F(KubeConfigTest, InsecureSkipTlsVerify) {
  KubeConfig config = KubeConfig::fromKubeconfigYaml(
      kubeconfig("    insecure-skip-tls-verify: true\n", "    token: t\n"), "");
  EXPECT_TRUE(config.insecureSkipTlsVerify);
  EXPECT_TRUE(config.caData.empty());
}

TEST_F(KubeConfigTest, InsecureTogetherWithACaIsAnError) {
  std::string yaml = kubeconfig(
      "    insecure-skip-tls-verify: true\n"
      "    certificate-authority-data: " +
          base64(kCaPem) + "\n",
      "    token: t\n");
  EXPECT_THROW(KubeConfig::fromKubeconfigYaml(yaml, ""), std::runtime_error);
}

TEST_F(KubeConfigTest, NamedContextWithNamespace) {
  std::string yaml = R"(
current-context: a
clusters:
- name: ca
  cluster: {server: "https://a:6443"}
- name: cb
  cluster: {server: "http://b:8080"}
users:
- name: ua
  user: {token: ta}
- name: ub
  user: {token: tb}
contexts:
- name: a
  context: {cluster: ca, user: ua}
- name: b
  context: {cluster: cb, user: ub, namespace: team-b}
)";
  KubeConfig current = KubeConfig::fromKubeconfigYaml(yaml, "");
  EXPECT_EQ(current.server, "https://a:6443");
  EXPECT_EQ(current.bearerToken(), "ta");
  EXPECT_EQ(current.ns, "default");

  KubeConfig named = KubeConfig::fromKubeconfigYaml(yaml, "", "b");
  EXPECT_EQ(named.server, "http://b:8080");
  EXPECT_EQ(named.bearerToken(), "tb");
  EXPECT_EQ(named.ns, "team-b");
}

void expectError(const std::string& yaml, const std::string& part, const std::string& ctx = {}) {
  try {
    KubeConfig::fromKubeconfigYaml(yaml, "", ctx);
    ADD_FAILURE() << "no error, expected one mentioning " << part;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST_F(KubeConfigTest, ClearErrors) {
  expectError(kubeconfig("", "    token: t\n", ""), "no current-context");
  expectError(kubeconfig("", "    token: t\n"), "context \"other\" not found", "other");
  expectError(kubeconfig("", "    exec:\n      command: aws\n"),
              "exec credential plugins are not supported");
  expectError(kubeconfig("", "    auth-provider:\n      name: gcp\n"),
              "auth-provider plugins are not supported");
  expectError(kubeconfig("", "    client-certificate-data: " + base64(kCertPem) + "\n"),
              "needs both a client certificate and a client key");
  expectError(R"(
current-context: x
contexts: [{name: x, context: {cluster: gone}}]
clusters: []
)",
              "cluster \"gone\" not found");
  expectError(R"(
current-context: x
contexts: [{name: x, context: {cluster: c}}]
clusters: [{name: c, cluster: {server: "api:6443"}}]
)",
              "server URL");
  expectError("clusters: [unclosed", "malformed YAML");
  expectError("", "not a kubeconfig");
}

TEST_F(KubeConfigTest, FileErrorsNameTheFile) {
  try {
    KubeConfig::fromKubeconfigFile((dir_ / "missing").string());
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
  fs::path path = write("config", kubeconfig("    certificate-authority: nope.crt\n", ""));
  try {
    KubeConfig::fromKubeconfigFile(path.string());
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find((dir_ / "nope.crt").string()), std::string::npos)
        << e.what();
  }
}

TEST_F(KubeConfigTest, InCluster) {
  write("sa/token", "sa-token\n");
  write("sa/ca.crt", kCaPem);
  write("sa/namespace", "kube-system\n");
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  KubeConfig config = KubeConfig::inCluster((dir_ / "sa").string());
  EXPECT_EQ(config.server, "https://10.96.0.1:443");
  EXPECT_EQ(config.caData, kCaPem);
  EXPECT_EQ(config.ns, "kube-system");
  EXPECT_EQ(config.bearerToken(), "sa-token");

  write("sa/token", "rotated-sa-token\n");
  EXPECT_EQ(config.bearerToken(), "rotated-sa-token");
}

TEST_F(KubeConfigTest, InClusterIpv6HostIsBracketed) {
  write("sa/token", "t");
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "fd00::1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "6443");
  KubeConfig config = KubeConfig::inCluster((dir_ / "sa").string());
  EXPECT_EQ(config.server, "https://[fd00::1]:6443");
  EXPECT_EQ(config.ns, "default");
}

TEST_F(KubeConfigTest, InClusterErrors) {
  {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", std::nullopt);
    EXPECT_THROW(KubeConfig::inCluster((dir_ / "sa").string()), std::runtime_error);
  }
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.0.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  EXPECT_THROW(KubeConfig::inCluster((dir_ / "no-such-dir").string()), std::runtime_error);
}

TEST_F(KubeConfigTest, LoadPrefersTheFlag) {
  fs::path flag = write("flag-config", kubeconfig("", "    token: from-flag\n"));
  fs::path env = write("env-config", kubeconfig("", "    token: from-env\n"));
  ScopedEnv kubeconfigEnv("KUBECONFIG", env.string());
  EXPECT_EQ(KubeConfig::load(flag.string()).bearerToken(), "from-flag");
  EXPECT_EQ(KubeConfig::load("").bearerToken(), "from-env");
}

TEST_F(KubeConfigTest, LoadTakesTheFirstExistingKubeconfigEntry) {
  fs::path second = write("second", kubeconfig("", "    token: second\n"));
  ScopedEnv kubeconfigEnv("KUBECONFIG",
                          (dir_ / "absent").string() + ":" + second.string() + ":/nowhere");
  EXPECT_EQ(KubeConfig::load("").bearerToken(), "second");
}

TEST_F(KubeConfigTest, LoadFallsBackToHomeKubeConfig) {
  write("home/.kube/config", kubeconfig("", "    token: from-home\n"));
  ScopedEnv kubeconfigEnv("KUBECONFIG", std::nullopt);
  ScopedEnv serviceHost("KUBERNETES_SERVICE_HOST", std::nullopt);
  ScopedEnv home("HOME", (dir_ / "home").string());
  EXPECT_EQ(KubeConfig::load("").bearerToken(), "from-home");
}

TEST_F(KubeConfigTest, LoadFallsBackToHomeWhenTheServiceAccountIsMissing) {
  if (fs::exists("/var/run/secrets/kubernetes.io/serviceaccount/token")) {
    GTEST_SKIP() << "running in a pod with a service account";
  }
  write("home/.kube/config", kubeconfig("", "    token: from-home\n"));
  ScopedEnv kubeconfigEnv("KUBECONFIG", std::nullopt);
  ScopedEnv serviceHost("KUBERNETES_SERVICE_HOST", "10.0.0.1");
  ScopedEnv servicePort("KUBERNETES_SERVICE_PORT", "443");
  ScopedEnv home("HOME", (dir_ / "home").string());
  EXPECT_EQ(KubeConfig::load("").bearerToken(), "from-home");
}

TEST_F(KubeConfigTest, LoadWithNothingFoundSaysWhatToDo) {
  ScopedEnv kubeconfigEnv("KUBECONFIG", std::nullopt);
  ScopedEnv serviceHost("KUBERNETES_SERVICE_HOST", std::nullopt);
  ScopedEnv home("HOME", dir_.string());
  try {
    KubeConfig::load("");
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--kubeconfig"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ker

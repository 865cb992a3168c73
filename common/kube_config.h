#pragma once

#include <optional>
#include <string>

namespace ker {

// Where and how to reach the API server, resolved from a kubeconfig or the pod's service account.
struct KubeConfig {
  std::string server;  // https://host:port, no trailing slash
  std::string caData;  // PEM; empty means the system trust store
  bool insecureSkipTlsVerify = false;
  std::string clientCertData;  // PEM
  std::string clientKeyData;   // PEM
  std::string token;           // static bearer token
  std::string tokenFile;       // re-read when it changes (service-account token rotation)
  std::string tlsServerName;
  std::string ns = "default";  // the context's or the service account's namespace

  // Parses a kubeconfig file; context empty = current-context. Files referenced by relative
  // paths are resolved against the kubeconfig's folder. Throws std::runtime_error with a clear
  // message on anything missing or malformed.
  static KubeConfig fromKubeconfigFile(const std::string& path, const std::string& context = {});
  static KubeConfig fromKubeconfigYaml(const std::string& yaml, const std::string& baseDir,
                                       const std::string& context = {});
  // KUBERNETES_SERVICE_HOST/PORT, /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt,
  // namespace}. rootDir lets tests point at a fake serviceaccount folder.
  static KubeConfig inCluster(const std::string& rootDir = {});
  // --kubeconfig when given, else $KUBECONFIG, else in-cluster, else ~/.kube/config.
  static KubeConfig load(const std::string& kubeconfigFlag);

  // The bearer token to send now: the token file's current content when set, else token.
  std::optional<std::string> bearerToken() const;
};

}  // namespace ker

#pragma once

#include <chrono>
#include <memory>

#include "common/api_client.h"
#include "common/kube_config.h"

namespace ker {

struct KubeClientOptions {
  std::chrono::milliseconds requestTimeout{std::chrono::seconds(30)};
  std::chrono::milliseconds connectTimeout{std::chrono::seconds(10)};
  // Retries of idempotent reads (get, list) and of any call the server throttled (429 with
  // Retry-After) or that failed to connect before sending; writes are never blindly resent.
  int maxRetries = 3;
  // First retry delay, doubled per attempt (with jitter); every wait, including a server's
  // Retry-After, is capped at maxRetryDelay.
  std::chrono::milliseconds retryBaseDelay{200};
  std::chrono::milliseconds maxRetryDelay{std::chrono::seconds(10)};
  // A watch that receives nothing for this long is treated as a dead connection (kTimeout).
  // The API server sends watchers that allow bookmarks one about every minute.
  std::chrono::seconds watchIdleTimeout{std::chrono::minutes(2)};
  std::string userAgent = "kube-extended-resource";
  std::string fieldManager = "kube-extended-resource";
};

// ApiClient over libcurl: keep-alive connections pooled per client, TLS from KubeConfig,
// bearer tokens re-read on rotation, typed errors from metav1.Status bodies.
class KubeClient : public ApiClient {
 public:
  explicit KubeClient(KubeConfig config, KubeClientOptions opts = {});
  ~KubeClient() override;
  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  const KubeConfig& config() const;

  nlohmann::json get(const Resource& res, const std::string& ns, const std::string& name) override;
  nlohmann::json list(const Resource& res, const std::string& ns, const ListOptions& opts) override;
  nlohmann::json create(const Resource& res, const std::string& ns,
                        const nlohmann::json& obj) override;
  nlohmann::json update(const Resource& res, const std::string& ns,
                        const nlohmann::json& obj) override;
  nlohmann::json updateStatus(const Resource& res, const std::string& ns,
                              const nlohmann::json& obj) override;
  nlohmann::json patch(const Resource& res, const std::string& ns, const std::string& name,
                       PatchType type, const nlohmann::json& patch,
                       const std::string& subresource = {}) override;
  void remove(const Resource& res, const std::string& ns, const std::string& name,
              const DeleteOptions& opts = {}) override;
  void bindPod(const std::string& ns, const std::string& podName, const std::string& podUid,
               const std::string& nodeName,
               const std::map<std::string, std::string>& annotations = {}) override;
  void watch(const Resource& res, const std::string& ns, const WatchOptions& opts,
             const std::function<bool(const WatchEvent&)>& onEvent,
             const std::atomic<bool>* stop) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ker

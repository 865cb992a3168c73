#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/admission_policy_check.h"
#include "common/api_client.h"
#include "model/objects.h"
#include "scheduler/fit/allocator.h"

namespace ker {

struct ExtenderConfig {
  // The verbs trust whoever reaches them as kube-scheduler: loopback, where only the
  // scheduler's own pod reaches them, unless mutual TLS names the clients (see
  // ExtenderFlags::settings).
  std::string bindAddress = "127.0.0.1";
  int port = 8888;
  // A second, plain-HTTP port for /healthz, /readyz and /metrics (kubelet probes reach the
  // pod IP while the extender may listen on localhost only); 0 serves them on `port`.
  int healthPort = 0;
  std::string healthBindAddress = "0.0.0.0";
  std::string tlsCertFile;
  std::string tlsKeyFile;
  std::string clientCaFile;
  // With clientCaFile: the client certificate's CN or a DNS SAN must be one of these.
  std::vector<std::string> tlsAllowedClientNames;
  std::string pathPrefix = "/";  // the path part of kube-scheduler's urlPrefix
  Scoring scoring;               // --scoring, --topology-property
  size_t maxBodyBytes = size_t{64} << 20;
  std::chrono::milliseconds bindDeadline{std::chrono::seconds(30)};  // see BinderOptions
  std::string requiredPlugin = kNodeAgentPluginName;                 // see BinderOptions
  // Threads serving the verbs; each holds one connection. kube-scheduler binds pods
  // asynchronously and opens a connection per bind in flight, so this bounds the binds served
  // at once; a connection beyond it waits for a thread.
  size_t threads = 64;
  // A pod that fits no node because lower-priority pods hold its matching devices preempts
  // them (see docs/preemption.md); needs a watch of bound pods, for the holders' priorities.
  bool preemption = true;
  // The kube-scheduler profile the extender serves: it binds and preempts only for its pods
  // (checkBindTrust, checkPreemptorTrust), and watches its bound pods for their priorities
  // ("": every pod).
  std::string schedulerName = kDefaultSchedulerName;
  // The allocation policy whose absence /readyz reports; nullopt: not checked.
  std::optional<AdmissionPolicyCheck::Options> admissionPolicy;
};

// The running extender: caches of devices, claims and nodes fed by watches, the decision
// core, and the HTTP(S) server(s). Construct, start(), and stop() (or destroy) when done.
class ExtenderApp {
 public:
  ExtenderApp(ApiClient& api, ExtenderConfig config);
  ~ExtenderApp();
  ExtenderApp(const ExtenderApp&) = delete;
  ExtenderApp& operator=(const ExtenderApp&) = delete;

  // Starts the watches and the servers; returns at once (readiness follows cache sync).
  void start();
  void stop();
  bool ready() const;  // what /readyz says: the caches have synced and the policy is in force
  int port() const;
  int healthPort() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ker

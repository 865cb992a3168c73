# shellcheck shell=bash
# The node's configuration files: containerd, CNI, kubelet and kube-proxy.
# Sourced by launch.sh; uses its helpers (log, die, env_get, env_set, launch, ...).

# ---- node configuration files --------------------------------------------------------------
# The first node's values are the launcher's globals; a further node (lib/node_extra.sh) sets
# NODE_DIR, NODE_ADDR, POD_SUBNET, POD_GW, NODE_CGROUP_ROOT, NODE_CONTAINERD_SOCKET,
# NODE_SERVING_CERT and NODE_NAME_OVERRIDE around these calls.
write_containerd_config() { # socket
  local n="${NODE_DIR:-$DIR/node}"
  cat >"$n/containerd/config.toml" <<EOF
# Written by launch.sh start-node.
version = 3
root = "$n/containerd/root"
state = "$n/containerd/state"

[grpc]
  address = "$1"

[ttrpc]
  address = ""

[debug]
  address = ""

[metrics]
  address = ""

[plugins]
  [plugins.'io.containerd.internal.v1.opt']
    path = "$n/containerd/opt"

  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = "$PAUSE_IMAGE"

  [plugins.'io.containerd.cri.v1.runtime']
    enable_selinux = false
    # runc cannot write oom_score_adj without CAP_SYS_RESOURCE: keep the runtime's own value.
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    # CDI devices (a node agent's answer may name them) come from this folder's specs only,
    # never the host's /etc/cdi or /var/run/cdi.
    cdi_spec_dirs = ["$NODE_CDI_DIR"]
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = "$RUNC"
          Root = "$n/runc"
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ["$CNI_BIN_DIR"]
      conf_dir = "$n/cni/net.d"
      max_conf_num = 1

  [plugins.'io.containerd.grpc.v1.cri']
    disable_tcp_service = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"

  # NRI stays enabled at its default socket ($NRI_SOCKET). The default validator refuses a
  # container whose pod names a plugin in its required-plugins annotation while that plugin is
  # not registered: a pod given devices by the node agent never starts without the agent. It
  # cannot refuse one whose creation the registered agent failed to answer in time (NRI counts
  # it as consulted, and no setting changes that): the agent stops that container itself.
  [plugins.'io.containerd.nri.v1.nri']
    [plugins.'io.containerd.nri.v1.nri'.default_validator]
      enable = true
EOF
}

write_cni_config() {
  local n="${NODE_DIR:-$DIR/node}" subnet="${POD_SUBNET:-$NODE_SUBNET}" gw="${POD_GW:-$NODE_HOST_IP}"
  cat >"$n/cni/net.d/10-ker.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "ker",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$NODE_BRIDGE",
      "isGateway": false,
      "isDefaultGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$subnet", "rangeStart": "${gw%.*}.10", "rangeEnd": "${gw%.*}.250", "gateway": "$gw"}]],
        "routes": [{"dst": "$SERVICE_CIDR", "gw": "$gw"}],
        "dataDir": "$n/cni/ipam"
      }
    }
  ]
}
EOF
}

write_kubelet_config() { # port healthz-port
  local n="${NODE_DIR:-$DIR/node}" serving="${NODE_SERVING_CERT:-$DIR/pki/kubelet-serving}"
  cat >"$n/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://${NODE_CONTAINERD_SOCKET:-$(env_get CONTAINERD_SOCKET)}
${NODE_CGROUP_ROOT:+cgroupRoot: $NODE_CGROUP_ROOT}
address: ${NODE_ADDR:-$NODE_HOST_IP}
port: $1
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $2
tlsCertFile: $serving.crt
tlsPrivateKeyFile: $serving.key
rotateCertificates: false
serverTLSBootstrap: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true, cacheTTL: 10s}
  x509: {clientCAFile: $DIR/pki/ca.crt}
authorization:
  mode: Webhook
  webhook: {cacheAuthorizedTTL: 10s, cacheUnauthorizedTTL: 5s}
clusterDomain: cluster.local
resolvConf: $n/resolv.conf
podLogsDir: $n/pod-logs
volumePluginDir: $n/volume-plugins
makeIPTablesUtilChains: false
hairpinMode: none
failSwapOn: false
protectKernelDefaults: false
syncFrequency: 5s
fileCheckFrequency: 5s
httpCheckFrequency: 5s
nodeStatusUpdateFrequency: 4s
nodeStatusReportFrequency: 10s
runtimeRequestTimeout: 60s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%"
  nodefs.inodesFree: "1%"
  imagefs.available: "1%"
  imagefs.inodesFree: "1%"
evictionPressureTransitionPeriod: 5s
serializeImagePulls: false
maxPods: 110
EOF
}

write_kube_proxy_config() { # healthz-port metrics-port
  local n="${NODE_DIR:-$DIR/node}"
  cat >"$n/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: $n/kube-proxy.kubeconfig
hostnameOverride: ${NODE_NAME_OVERRIDE:-$(env_get NODE_NAME)}
clusterCIDR: ${POD_SUBNET:-$NODE_SUBNET}
detectLocalMode: ClusterCIDR
healthzBindAddress: 127.0.0.1:$1
metricsBindAddress: 127.0.0.1:$2
nodePortAddresses: ["${NODE_ADDR:-$NODE_HOST_IP}/32"]
iptables:
  localhostNodePorts: false
  masqueradeAll: false
  syncPeriod: 10s
  minSyncPeriod: 0s
# 0 leaves the host's conntrack sysctls alone.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  udpTimeout: 0s
  udpStreamTimeout: 0s
EOF
}

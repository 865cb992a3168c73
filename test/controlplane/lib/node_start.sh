# shellcheck shell=bash
# start-node and load-image: containerd, the kubelet and kube-proxy on the node network.
# Sourced by launch.sh; uses its helpers (log, die, env_get, env_set, launch, ...).

# ---- the node: containerd, kubelet, kube-proxy ----------------------------------------------

NODE_KEYS=(NODE_NAME CONTAINERD_SOCKET CONTAINERD_PID KUBELET_PID KUBE_PROXY_PID KUBELET_LOG CONTAINERD_LOG
  KUBE_PROXY_LOG CTR NRI_SOCKET KUBELET_PORT KUBELET_HEALTHZ_URL KUBE_PROXY_HEALTHZ_URL KUBE_PROXY_METRICS_URL
  KUBELET_ROOT_DIR DEVICE_PLUGIN_DIR PAUSE_IMAGE NODE_KUBECONFIG)

ctr_node() { "$(env_get BIN_DIR)/ctr" --address "${NODE_CONTAINERD_SOCKET:-$(env_get CONTAINERD_SOCKET)}" --timeout "${TIMEOUT:-$DEFAULT_TIMEOUT}s" -n k8s.io "$@"; }

kubectl_admin() { "$(env_get BIN_DIR)/kubectl" --kubeconfig "$(env_get KUBECONFIG)" --request-timeout=10s "$@"; }

# A pause image made from busybox-static without any registry: a docker-archive tarball with one
# layer holding /bin/busybox, whose PID 1 sleeps and exits on SIGTERM.
build_pause_image() { # -> DIR/node/images/pause.tar
  local d="$DIR/node/images/pause" arch layer_sha cfg cfg_sha
  { [[ -x /bin/busybox ]] && file_is_static /bin/busybox; } || die "start-node needs a static /bin/busybox (Debian busybox-static)"
  case "$(uname -m)" in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; *) arch=$(uname -m) ;; esac
  rm -rf "$d"
  mkdir -p "$d/rootfs/bin" "$d/rootfs/dev" "$d/rootfs/proc" "$d/rootfs/sys" "$d/rootfs/etc"
  cp /bin/busybox "$d/rootfs/bin/busybox"
  tar --numeric-owner --owner=0 --group=0 --mtime=@0 --sort=name -C "$d/rootfs" -cf "$d/layer.tar" .
  layer_sha=$(sha256sum "$d/layer.tar" | cut -d' ' -f1)
  cfg=$(printf '{"architecture":"%s","os":"linux","config":{"Entrypoint":["/bin/busybox","sh","-c","trap \\"exit 0\\" TERM INT; while :; do /bin/busybox sleep 3600 & wait $!; done"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' "$arch" "$layer_sha")
  cfg_sha=$(printf '%s' "$cfg" | sha256sum | cut -d' ' -f1)
  printf '%s' "$cfg" >"$d/$cfg_sha.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["layer.tar"]}]' "$cfg_sha" "$PAUSE_IMAGE" >"$d/manifest.json"
  tar -C "$d" -cf "$DIR/node/images/pause.tar" manifest.json "$cfg_sha.json" layer.tar
  rm -rf "$d"
}

file_is_static() { ! LC_ALL=C ldd "$1" >/dev/null 2>&1; }

import_image() { # FILE
  local f=$1 out
  [[ -r "$f" ]] || die "image tarball '$f' is not readable"
  out=$(ctr_node images import --local --snapshotter overlayfs "$f" 2>&1) ||
    die "ctr images import $f failed: $(tail -n 5 <<<"$out")"
  log "imported $f: $(printf '%s' "$out" | grep -Eo '^unpacking [^ ]+' | sed 's/^unpacking //' | paste -sd' ' -)"
}

# The node's client certificate and its kubelet's serving one (DIR/pki/SERVING.crt, for the
# node's address ADDR); kube-proxy's client certificate, which every node's kube-proxy uses.
make_node_pki() { # NAME ADDR SERVING
  local client
  client=$(printf '%s\n' 'basicConstraints=CA:FALSE' 'keyUsage=critical,digitalSignature,keyEncipherment' 'extendedKeyUsage=clientAuth')
  (
    set -e
    sign "node-$1" "/O=system:nodes/CN=system:node:$1" "$client"
    sign kube-proxy '/CN=system:kube-proxy' "$client"
    sign "$3" "/CN=$1" "$(printf '%s\n' 'basicConstraints=CA:FALSE' \
      'keyUsage=critical,digitalSignature,keyEncipherment' 'extendedKeyUsage=serverAuth' \
      "subjectAltName=IP:$2,DNS:$1")"
  ) || die "signing the certificates of node $1 failed (openssl)"
}

# CMD... runs a command where the node's daemons listen: nothing for the first node, a further
# node's namespace prefix (in_node_net NAME) for the others.
kubelet_healthy() { # URL [CMD...]
  local url=$1
  shift
  [[ "$("$@" curl -fsS --max-time 5 --connect-timeout 2 "$url")" == ok ]]
}

node_ready() { # name
  [[ "$(kubectl_admin get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]
}

# kube-proxy has programmed the kubernetes Service (ClusterIP -> the apiserver on the bridge).
service_programmed() { # [CMD...]
  "$@" iptables-save -t nat 2>/dev/null | grep -q -- "-d $KUBERNETES_SERVICE_IP/32 .*default/kubernetes:https"
}

node_fail() { # NAME message: tail of the component's log, then die (the EXIT trap cleans up)
  tail_log "$1"
  die "$2"
}

# Host state start-node changes, recorded once (a second start-node after a crash must not
# record the kubelet's values as the originals).
record_host_state() {
  local n="$DIR/node" s p
  if [[ ! -f "$n/saved-sysctls" ]]; then
    for s in "${NODE_SYSCTLS[@]}"; do printf '%s=%s\n' "$s" "$(sysctl_get "$s")"; done >"$n/.saved-sysctls"
    mv "$n/.saved-sysctls" "$n/saved-sysctls"
  fi
  if [[ ! -f "$n/tables-before" ]]; then
    iptables_tables >"$n/.tables-before"
    mv "$n/.tables-before" "$n/tables-before"
  fi
  if [[ ! -f "$n/created-paths" ]]; then
    for p in "${NODE_HOST_PATHS[@]}"; do [[ -e "$p" || -L "$p" ]] || printf '%s\n' "$p"; done >"$n/.created-paths"
    mv "$n/.created-paths" "$n/created-paths"
  fi
}

NODE_START_OK=false
on_start_node_exit() {
  local rc=$?
  if ! $NODE_START_OK && ((rc != 0)); then
    log "start-node failed; stopping what it started in $DIR"
    stop_node || true
  fi
  return "$rc"
}

start_node() {
  local name=$1 t0=$SECONDS n="$DIR/node" sock port hport pport mport rc f b
  shift
  node_mode || die "$DIR was not started with --node-network (launch.sh start $DIR --node-network)"
  { [[ "$(env_get STATE)" == running ]] && owns_pid "$(env_get APISERVER_PID)"; } || die "no running control plane in $DIR"
  node_lock_mine || die "$DIR does not hold $NODE_LOCK (its node-lock process is gone): launch.sh stop $DIR and start again"
  [[ -z "$(env_get KUBELET_PID)" ]] || ! owns_pid "$(env_get KUBELET_PID)" || die "a node already runs in $DIR"
  BIN_DIR=$(env_get BIN_DIR)
  for b in kubelet kube-proxy containerd containerd-shim-runc-v2 ctr kubectl; do
    [[ -x "$BIN_DIR/$b" ]] || die "no $b in $BIN_DIR (the node binaries come from build-binaries.sh; --bin-dir/KUBEBUILDER_ASSETS folders lack them)"
  done
  [[ -x "$RUNC" ]] || die "no $RUNC (Debian package runc)"
  for b in bridge host-local loopback; do
    [[ -x "$CNI_BIN_DIR/$b" ]] || die "no CNI plugin $CNI_BIN_DIR/$b (Debian package containernetworking-plugins)"
  done
  # unix socket paths are limited to 107 bytes; the deepest is under the kubelet's root dir
  ((${#DIR} <= 60)) || die "DIR '$DIR' is too long for the node's unix sockets (at most 60 characters)"
  check_no_forwarding

  trap on_start_node_exit EXIT
  mkdir -p "$n"/{containerd,runc,cni/net.d,cni/ipam,kubelet,kubelet-pki,pod-logs,volume-plugins,images}
  record_host_state
  env_set NODE_STATE starting NODE_NAME "$name"

  if ! owns_pid "$(env_get CONTROLLER_MANAGER_PID)"; then
    log "kube-controller-manager is not running: starting it (node controllers)"
    start_controller_manager
  fi

  make_node_pki "$name" "$NODE_HOST_IP" kubelet-serving
  write_kubeconfig "$n/kubelet.kubeconfig" "system:node:$name" "$DIR/pki/node-$name.crt" "$DIR/pki/node-$name.key"
  write_kubeconfig "$n/kube-proxy.kubeconfig" system:kube-proxy "$DIR/pki/kube-proxy.crt" "$DIR/pki/kube-proxy.key"
  printf 'nameserver %s\n' "$NODE_HOST_IP" >"$n/resolv.conf"
  write_cni_config

  # containerd
  sock="$n/containerd/containerd.sock"
  env_set CONTAINERD_SOCKET "$sock" CTR "$BIN_DIR/ctr" NRI_SOCKET "$NRI_SOCKET" CONTAINERD_LOG "$DIR/containerd.log" \
    PAUSE_IMAGE "$PAUSE_IMAGE"
  write_containerd_config "$sock"
  # The shim must be on containerd's PATH (it is found by name); runc and CNI plugins by path.
  # The proxy variables make any registry pull fail locally (127.0.0.1:9 is not listened on by
  # the launcher; Go never proxies loopback names, so a localhost/ image is not fetched either).
  launch containerd env PATH="$BIN_DIR:/usr/sbin:/usr/bin:/sbin:/bin" HTTP_PROXY=http://127.0.0.1:9 \
    HTTPS_PROXY=http://127.0.0.1:9 NO_PROXY= http_proxy= https_proxy= no_proxy= \
    "$BIN_DIR/containerd" --config "$n/containerd/config.toml" --log-level warn
  env_set CONTAINERD_PID "$LAUNCHED_PID"
  rc=0
  wait_ready "$LAUNCHED_PID" containerd "$TIMEOUT" ctr_node version || rc=$?
  ((rc == 0)) || node_fail containerd "containerd did not start"

  build_pause_image
  import_image "$n/images/pause.tar"
  for f in "${NODE_IMAGES[@]}"; do import_image "$f"; done

  # kubelet
  pick_port
  port=$PORT
  pick_port
  hport=$PORT
  write_kubelet_config "$port" "$hport"
  env_set KUBELET_LOG "$DIR/kubelet.log" KUBELET_PORT "$port" KUBELET_HEALTHZ_URL "http://127.0.0.1:$hport/healthz" \
    KUBELET_ROOT_DIR "$n/kubelet" DEVICE_PLUGIN_DIR /var/lib/kubelet/device-plugins NODE_KUBECONFIG "$n/kubelet.kubeconfig"
  local t_kubelet=$SECONDS
  local taint_args=()
  [[ -z "$NODE_TAINTS" ]] || taint_args=(--register-with-taints="$NODE_TAINTS")
  launch kubelet "$BIN_DIR/kubelet" --config="$n/kubelet.yaml" --kubeconfig="$n/kubelet.kubeconfig" \
    --root-dir="$n/kubelet" --cert-dir="$n/kubelet-pki" --node-ip="$NODE_HOST_IP" --hostname-override="$name" \
    "${taint_args[@]}" --v=2
  env_set KUBELET_PID "$LAUNCHED_PID"
  rc=0
  wait_ready "$LAUNCHED_PID" kubelet "$TIMEOUT" kubelet_healthy "http://127.0.0.1:$hport/healthz" || rc=$?
  ((rc == 0)) || node_fail kubelet "kubelet did not become healthy"

  # kube-proxy
  pick_port
  pport=$PORT
  pick_port
  mport=$PORT
  write_kube_proxy_config "$pport" "$mport"
  env_set KUBE_PROXY_LOG "$DIR/kube-proxy.log" KUBE_PROXY_HEALTHZ_URL "http://127.0.0.1:$pport/healthz" \
    KUBE_PROXY_METRICS_URL "http://127.0.0.1:$mport/metrics"
  launch kube-proxy "$BIN_DIR/kube-proxy" --config="$n/kube-proxy.yaml" --v=2
  env_set KUBE_PROXY_PID "$LAUNCHED_PID"

  rc=0
  wait_ready "$(env_get KUBELET_PID)" "node $name" "$TIMEOUT" node_ready "$name" || rc=$?
  ((rc == 0)) || node_fail kubelet "node $name did not become Ready"
  # A node started again after stop-node (which cordons it) takes pods again.
  kubectl_admin uncordon "$name" >/dev/null || node_fail kubelet "could not uncordon node $name"
  local t_ready=$((SECONDS - t_kubelet))
  rc=0
  wait_ready "$(env_get KUBE_PROXY_PID)" kube-proxy "$TIMEOUT" service_programmed || rc=$?
  ((rc == 0)) || node_fail kube-proxy "kube-proxy did not program the kubernetes Service"
  check_no_forwarding
  env_set NODE_STATE running
  NODE_START_OK=true
  log "node $name Ready ${t_ready}s after the kubelet started; kube-proxy maps $KUBERNETES_SERVICE_IP:443 to $(env_get APISERVER_NODE_URL); start-node took $((SECONDS - t0))s"
}

cmd_start_node() {
  set_dir "${1:-}"
  shift
  TIMEOUT=$DEFAULT_TIMEOUT
  NODE_IMAGES=()
  NODE_TAINTS=''
  local name=ker-node f binds=() b
  NODE_CDI_DIR=$DIR/node/cdi
  while (($#)); do
    case "$1" in
    --image-tar) NODE_IMAGES+=("${2:?--image-tar needs a value}") && shift ;;
    --image-tar=*) NODE_IMAGES+=("${1#*=}") ;;
    --node-name) name=${2:?--node-name needs a value} && shift ;;
    --node-name=*) name=${1#*=} ;;
    --timeout) TIMEOUT=${2:?--timeout needs a value} && shift ;;
    --timeout=*) TIMEOUT=${1#*=} ;;
    --cdi-spec-dir) NODE_CDI_DIR=${2:?--cdi-spec-dir needs a value} && shift ;;
    --cdi-spec-dir=*) NODE_CDI_DIR=${1#*=} ;;
    --bind-dir) binds+=("${2:?--bind-dir needs a value}") && shift ;;
    --bind-dir=*) binds+=("${1#*=}") ;;
    --taint) NODE_TAINTS+="${NODE_TAINTS:+,}${2:?--taint needs a value}" && shift ;;
    --taint=*) NODE_TAINTS+="${NODE_TAINTS:+,}${1#*=}" ;;
    *) die "start-node: unknown option '$1' (try --help)" ;;
    esac
    shift
  done
  [[ "$TIMEOUT" =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive number of seconds"
  [[ "$name" =~ ^[a-z0-9]([a-z0-9-]{0,40}[a-z0-9])?$ ]] || die "--node-name '$name' must be a short DNS label"
  for f in "${NODE_IMAGES[@]}"; do [[ -r "$f" ]] || die "--image-tar '$f' is not readable"; done
  [[ "$NODE_CDI_DIR" == /* ]] || die "--cdi-spec-dir '$NODE_CDI_DIR' must be an absolute path"
  [[ -z "$NODE_TAINTS" || "$NODE_TAINTS" =~ ^([A-Za-z0-9./_-]+(=[A-Za-z0-9._-]*)?:(NoSchedule|PreferNoSchedule|NoExecute),?)+$ ]] ||
    die "--taint must be KEY[=VALUE]:EFFECT, got '$NODE_TAINTS'"
  for b in "${binds[@]}"; do
    [[ "$b" =~ ^/[A-Za-z0-9_./+-]*:/[A-Za-z0-9_./+-]*$ ]] || die "--bind-dir must be SOURCE:TARGET (absolute paths), got '$b'"
    [[ -d "${b%%:*}" && -d "${b#*:}" ]] || die "--bind-dir '$b': both folders must exist"
  done
  lock_dir
  if [[ "$(env_get NODE_STATE)" == running ]] && owns_pid "$(env_get KUBELET_PID)"; then
    mkdir -p "$NODE_CDI_DIR"
    start_extra_node "$name" "${binds[@]}"
    printf '%s\n' "$(extra_node_dir "$name")/env"
    return 0
  fi
  ((${#binds[@]} == 0)) || die "--bind-dir is for further nodes (the first node uses the host's folders)"
  mkdir -p "$NODE_CDI_DIR"
  start_node "$name"
  env_set NODES "$name"
  printf '%s\n' "$ENV_FILE"
}

cmd_load_image() {
  set_dir "${1:-}"
  (($# == 2)) || die "usage: load-image DIR FILE"
  TIMEOUT=$DEFAULT_TIMEOUT
  lock_dir
  owns_pid "$(env_get CONTAINERD_PID)" || die "no running node in $DIR (launch.sh start-node $DIR first)"
  import_image "$2"
}

# shellcheck shell=bash
# Further nodes: start-node on a DIR whose first node runs starts another node, as a machine of
# its own would be, in a network namespace and a mount namespace of its own.
# Sourced by launch.sh; uses its helpers (log, die, env_get, env_set, launch, ...).
#
# Node k (2..9), named NAME, lives in DIR/nodes/NAME (its env file, configs, logs, pid files):
#   network namespace ker-nK: eth0 10.213.0.K/24 (a veth whose host side kervK is on the bridge
#   ker0, so kube-apiserver on 10.213.0.1 and the kubelet's address are reached without any
#   forwarding on the host), and a bridge ker0 10.213.K.1/24 for its pods (their gateway; its
#   address is bridge_mac k). The
#   namespace forwards between those two only: it has no default route, and the host routes
#   10.213.K.0/24 to 10.213.0.K so that replies reach the pods. Its kube-proxy programs the
#   namespace's own iptables.
#   mount namespace DIR/nodes/NAME/ns/mnt (a slave of the host's, so the host's unmounts reach
#   it): the paths the kubelet, containerd and NRI fix whatever their configuration says
#   (/var/lib/kubelet/device-plugins, /var/log/containers, /var/log/pods, /run/containerd, /run/nri,
#   /var/lib/cni) are the node's own folders there, as are the --bind-dir targets, so hostPath
#   volumes (a node agent's node file, its NRI socket) resolve per node.
#   cgroups under /ker-NAME (the kubelet's cgroupRoot).
# Stopping it kills its processes and deletes both namespaces; the mounts its pods made die with
# the mount namespace.

EXTRA_NODE_PRIVATE_PATHS=(/var/lib/kubelet/device-plugins /var/log/containers /var/log/pods /run/containerd /run/nri /var/lib/cni)

extra_node_dir() { printf '%s/nodes/%s' "$DIR" "$1"; }

# Reads KEY from node NAME's env file.
extra_env_get() { # NAME KEY
  ENV_FILE="$(extra_node_dir "$1")/env" env_get "$2"
}

extra_env_set() { # NAME KEY VALUE...
  local name=$1
  shift
  ENV_FILE="$(extra_node_dir "$name")/env" env_set "$@"
}

# The names of the further nodes with an env file (running or not), one per line.
extra_node_names() {
  local f
  for f in "$DIR"/nodes/*/env; do
    [[ -f "$f" ]] && basename "$(dirname "$f")"
  done
  return 0
}

# IN_NODE: the command prefix that runs a command in node NAME's network and mount namespaces
# (nsenter execs it, so a launched pid is the command's own).
set_in_node() { # NAME
  IN_NODE=(nsenter --net="/run/netns/$(extra_env_get "$1" NETNS)" --mount="$(extra_node_dir "$1")/ns/mnt" --)
}

in_node_net() { # NAME CMD...: the network namespace only (curl of a healthz address)
  local name=$1
  shift
  nsenter --net="/run/netns/$(extra_env_get "$name" NETNS)" -- "$@"
}

free_node_index() {
  local k used
  used=" $(for n in $(extra_node_names); do
    [[ "$(extra_env_get "$n" NODE_STATE)" == stopped ]] || extra_env_get "$n" NODE_INDEX
  done | paste -sd' ' -) "
  for ((k = 2; k <= 9; k++)); do
    [[ "$used" == *" $k "* ]] && continue
    ip netns list 2>/dev/null | grep -qw "ker-n$k" && continue
    ip link show "kerv$k" >/dev/null 2>&1 && continue
    printf '%s' "$k"
    return 0
  done
  die "no free node index (at most 8 further nodes; or left-over ker-nK namespaces or kervK links)"
}

nodes_refresh() { # main env NODES: the first node, then the running further nodes
  local list n
  list=$(env_get NODE_NAME)
  for n in $(extra_node_names); do
    [[ "$(extra_env_get "$n" NODE_STATE)" == running ]] && list+=",$n"
  done
  env_set NODES "$list"
}

# The namespaces and links of node NAME (index k).
extra_network_up() { # NAME k
  local name=$1 k=$2 ns="ker-n$2"
  ip netns add "$ns" || die "could not create network namespace $ns"
  extra_env_set "$name" NETNS "$ns"
  ip link add "kerv$k" type veth peer name "kerp$k" || die "could not create veth kerv$k"
  extra_env_set "$name" HOST_LINK "kerv$k"
  printf 1 >"/proc/sys/net/ipv6/conf/kerv$k/disable_ipv6" 2>/dev/null || true
  printf 0 >"/proc/sys/net/ipv4/conf/kerv$k/forwarding"
  ip link set "kerp$k" netns "$ns" || die "could not move kerp$k into $ns"
  ip link set "kerv$k" master "$NODE_BRIDGE" up || die "could not put kerv$k on $NODE_BRIDGE"
  # shellcheck disable=SC2016 # expanded by the inner sh
  ip netns exec "$ns" sh -ec '
    echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6; echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6
    ip link set lo up
    ip link set "kerp$1" name eth0
    ip addr add "10.213.0.$1/24" dev eth0
    ip link set eth0 up
    ip link add "$2" address "$4" type bridge
    ip addr add "10.213.$1.1/24" dev "$2"
    ip link set "$2" up
    ip route add "$3" dev eth0 src "10.213.0.$1"
    echo 1 >/proc/sys/net/ipv4/ip_forward' sh "$k" "$NODE_BRIDGE" "$SERVICE_CIDR" "$(bridge_mac "$k")" ||
    die "could not configure network namespace $ns"
  ip route add "10.213.$k.0/24" via "10.213.0.$k" dev "$NODE_BRIDGE" || die "could not route 10.213.$k.0/24 to $ns"
  extra_env_set "$name" HOST_ROUTE "10.213.$k.0/24"
}

extra_mounts_up() { # NAME bind-dir...
  local name=$1 nd p src tgt script=''
  shift
  nd=$(extra_node_dir "$name")
  mkdir -p "$nd/ns"
  mount --bind "$nd/ns" "$nd/ns" && mount --make-private "$nd/ns" || die "could not make $nd/ns a private mount"
  : >"$nd/ns/mnt"
  unshare --mount="$nd/ns/mnt" --propagation slave true || die "could not create the mount namespace of $name"
  extra_env_set "$name" MOUNT_NS "$nd/ns/mnt"
  for p in "${EXTRA_NODE_PRIVATE_PATHS[@]}"; do
    # (The first node recorded it as missing, if it was: its stop-node removes it.)
    mkdir -p "$p"
    src="$nd/host$p"
    mkdir -p "$src"
    script+="mount --bind '$src' '$p'"$'\n'
  done
  for p in "$@"; do
    src=${p%%:*} tgt=${p#*:}
    script+="mount --bind '$src' '$tgt'"$'\n'
  done
  nsenter --mount="$nd/ns/mnt" -- sh -ec "$script" || die "could not bind the node's own folders in its mount namespace"
}

start_extra_node() { # NAME bind-dir...
  local name=$1 k nd t0=$SECONDS rc f sock addr
  shift
  nd=$(extra_node_dir "$name")
  [[ "$name" != "$(env_get NODE_NAME)" ]] || die "node $name already runs in $DIR"
  [[ ! -f "$nd/env" || "$(extra_env_get "$name" NODE_STATE)" == stopped ]] ||
    die "node $name already runs in $DIR (or was not stopped: launch.sh stop-node $DIR --node-name $name)"
  node_lock_mine || die "$DIR does not hold $NODE_LOCK (its node-lock process is gone): launch.sh stop $DIR and start again"
  BIN_DIR=$(env_get BIN_DIR)
  ((${#nd} <= 65)) || die "'$nd' is too long for the node's unix sockets (DIR at most $((60 - ${#name} + 1)) characters)"
  [[ -z "$(mounts_under "$nd")" ]] || die "mounts left under $nd by an earlier run: launch.sh stop-node $DIR --node-name $name"
  k=$(free_node_index)
  rm -rf "$nd"
  mkdir -p "$nd"/{containerd,runc,cni/net.d,cni/ipam,kubelet,kubelet-pki,pod-logs,volume-plugins}
  ENV_FILE="$nd/env" env_set NODE_STATE starting NODE_NAME "$name" NODE_INDEX "$k" NODE_DIR "$nd" \
    NODE_IP "10.213.0.$k" POD_CIDR "10.213.$k.0/24"

  trap 'rc=$?; if ((rc != 0)); then log "start-node $name failed; stopping what it started"; stop_extra_node "$name" || true; fi' EXIT
  extra_network_up "$name" "$k"
  extra_mounts_up "$name" "$@"
  local cg
  for cg in /sys/fs/cgroup/*/; do
    [[ -d "$cg" && -w "$cg" ]] && mkdir -p "${cg}ker-$name"
  done
  extra_env_set "$name" CGROUP_ROOT "/ker-$name"

  addr=10.213.0.$k
  local NODE_DIR=$nd NODE_ADDR=$addr POD_SUBNET=10.213.$k.0/24 POD_GW=10.213.$k.1 NODE_CGROUP_ROOT=/ker-$name
  local NODE_CONTAINERD_SOCKET=$nd/containerd/containerd.sock NODE_SERVING_CERT=$DIR/pki/kubelet-serving-$name
  local NODE_NAME_OVERRIDE=$name
  sock=$NODE_CONTAINERD_SOCKET
  make_node_pki "$name" "$addr" "kubelet-serving-$name"
  # In its own namespace, loopback is the node's: it reaches kube-apiserver over its bridge.
  write_kubeconfig "$nd/kubelet.kubeconfig" "system:node:$name" "$DIR/pki/node-$name.crt" "$DIR/pki/node-$name.key" \
    "$(env_get APISERVER_NODE_URL)"
  write_kubeconfig "$nd/kube-proxy.kubeconfig" system:kube-proxy "$DIR/pki/kube-proxy.crt" "$DIR/pki/kube-proxy.key" \
    "$(env_get APISERVER_NODE_URL)"
  printf 'nameserver %s\n' "$POD_GW" >"$nd/resolv.conf"
  write_cni_config
  write_containerd_config "$sock"
  write_kubelet_config 10250 10248
  write_kube_proxy_config 10256 10249
  set_in_node "$name"

  extra_env_set "$name" CONTAINERD_SOCKET "$sock" CTR "$BIN_DIR/ctr" NRI_SOCKET "$nd/host/run/nri/nri.sock" \
    CONTAINERD_LOG "$nd/containerd.log" KUBELET_LOG "$nd/kubelet.log" KUBE_PROXY_LOG "$nd/kube-proxy.log" \
    KUBELET_ROOT_DIR "$nd/kubelet" DEVICE_PLUGIN_DIR "$nd/host/var/lib/kubelet/device-plugins" \
    NODE_KUBECONFIG "$nd/kubelet.kubeconfig" KUBELET_PORT 10250
  launch "nodes/$name/containerd" "${IN_NODE[@]}" env PATH="$BIN_DIR:/usr/sbin:/usr/bin:/sbin:/bin" \
    HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 NO_PROXY= http_proxy= https_proxy= no_proxy= \
    "$BIN_DIR/containerd" --config "$nd/containerd/config.toml" --log-level warn
  extra_env_set "$name" CONTAINERD_PID "$LAUNCHED_PID"
  rc=0
  wait_ready "$LAUNCHED_PID" "containerd of $name" "$TIMEOUT" ctr_node version || rc=$?
  ((rc == 0)) || node_fail "nodes/$name/containerd" "containerd of $name did not start"
  [[ -f "$DIR/node/images/pause.tar" ]] || build_pause_image
  import_image "$DIR/node/images/pause.tar"
  for f in "${NODE_IMAGES[@]}"; do import_image "$f"; done

  local taint_args=()
  [[ -z "$NODE_TAINTS" ]] || taint_args=(--register-with-taints="$NODE_TAINTS")
  launch "nodes/$name/kubelet" "${IN_NODE[@]}" "$BIN_DIR/kubelet" --config="$nd/kubelet.yaml" \
    --kubeconfig="$nd/kubelet.kubeconfig" --root-dir="$nd/kubelet" --cert-dir="$nd/kubelet-pki" \
    --node-ip="$addr" --hostname-override="$name" "${taint_args[@]}" --v=2
  extra_env_set "$name" KUBELET_PID "$LAUNCHED_PID"
  rc=0
  wait_ready "$LAUNCHED_PID" "kubelet of $name" "$TIMEOUT" kubelet_healthy http://127.0.0.1:10248/healthz in_node_net "$name" || rc=$?
  ((rc == 0)) || node_fail "nodes/$name/kubelet" "the kubelet of $name did not become healthy"
  launch "nodes/$name/kube-proxy" "${IN_NODE[@]}" "$BIN_DIR/kube-proxy" --config="$nd/kube-proxy.yaml" --v=2
  extra_env_set "$name" KUBE_PROXY_PID "$LAUNCHED_PID"
  rc=0
  wait_ready "$(extra_env_get "$name" KUBELET_PID)" "node $name" "$TIMEOUT" node_ready "$name" || rc=$?
  ((rc == 0)) || node_fail "nodes/$name/kubelet" "node $name did not become Ready"
  kubectl_admin uncordon "$name" >/dev/null || node_fail "nodes/$name/kubelet" "could not uncordon node $name"
  rc=0
  wait_ready "$(extra_env_get "$name" KUBE_PROXY_PID)" "kube-proxy of $name" "$TIMEOUT" service_programmed in_node_net "$name" || rc=$?
  ((rc == 0)) || node_fail "nodes/$name/kube-proxy" "the kube-proxy of $name did not program the kubernetes Service"
  check_no_forwarding
  extra_env_set "$name" NODE_STATE running
  nodes_refresh
  trap - EXIT
  log "node $name (10.213.0.$k, pods 10.213.$k.0/24) Ready; start-node took $((SECONDS - t0))s"
}

# Node NAME's cgroup directories, deepest first.
extra_cgroups() { # NAME
  local h
  for h in /sys/fs/cgroup/*/"ker-$1"; do
    [[ -d "$h" ]] && find "$h" -depth -type d
  done
  return 0
}

stop_extra_node() { # NAME
  local name=$1 nd i left=0 ns route link
  nd=$(extra_node_dir "$name")
  [[ -f "$nd/env" ]] || return 0
  [[ "$(extra_env_get "$name" NODE_STATE)" != stopped ]] || return 0
  extra_env_set "$name" NODE_STATE stopping
  if owns_pid "$(extra_env_get "$name" KUBELET_PID)" && owns_pid "$(env_get APISERVER_PID)"; then
    kubectl_admin cordon "$name" >/dev/null 2>&1 || true
    kubectl_admin delete pods --all-namespaces --field-selector "spec.nodeName=$name" --grace-period=1 --wait=false >/dev/null 2>&1 || true
    local deadline=$((SECONDS + 30))
    while ((SECONDS < deadline)); do
      [[ -z "$(kubectl_admin get pods --all-namespaces --field-selector "spec.nodeName=$name" -o name 2>/dev/null)" ]] && break
      sleep 0.5
    done
  fi
  stop_component "nodes/$name/kube-proxy"
  stop_component "nodes/$name/kubelet"
  kill_cgroup_processes extra_cgroups "$name" || left=1
  stop_component "nodes/$name/containerd"
  stop_processes_naming "$nd/" || left=1
  kill_cgroup_processes extra_cgroups "$name" || left=1
  # The mount namespace goes with its last process and its file's mount.
  unmount_under "$nd" || left=1
  ns=$(extra_env_get "$name" NETNS)
  [[ -z "$ns" ]] || ! ip netns list 2>/dev/null | grep -qw "$ns" || ip netns del "$ns" || { log "could not delete $ns"; left=1; }
  link=$(extra_env_get "$name" HOST_LINK)
  [[ -z "$link" ]] || ! ip link show "$link" >/dev/null 2>&1 || ip link del "$link" 2>/dev/null || true
  route=$(extra_env_get "$name" HOST_ROUTE)
  [[ -z "$route" || -z "$(ip -4 route show exact "$route" 2>/dev/null)" ]] || ip route del "$route" || left=1
  for ((i = 0; i < 50; i++)); do
    extra_cgroups "$name" | xargs -r rmdir 2>/dev/null || true
    compgen -G "/sys/fs/cgroup/*/ker-$name" >/dev/null || break
    sleep 0.1
  done
  ! compgen -G "/sys/fs/cgroup/*/ker-$name" >/dev/null || { log "cgroups of node $name left"; left=1; }
  extra_env_set "$name" NODE_STATE stopped
  nodes_refresh
  ((left == 0)) || { log "stopping node $name could not undo everything (see above)"; return 1; }
}

stop_extra_nodes() {
  local n rc=0
  for n in $(extra_node_names); do stop_extra_node "$n" || rc=1; done
  return "$rc"
}

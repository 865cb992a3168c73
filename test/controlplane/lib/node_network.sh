# shellcheck shell=bash
# The node network: the bridge, the machine-wide node lock and the no-forwarding check.
# Sourced by launch.sh; uses its helpers (log, die, env_get, env_set, launch, ...).

# ---- node network (start --node-network) ---------------------------------------------------
#
# One Linux bridge per machine, created by start --node-network and removed by stop:
#   NODE_BRIDGE (ker0) with NODE_HOST_IP/24 (10.213.0.1/24) on the host side; kube-apiserver
#   listens on that address, so pods reach it without any forwarding (host clients through
#   loopback, node_loopback_rule);
#   a route for the Service CIDR (10.0.0.0/24) onto the bridge, so host-originated packets to
#   a ClusterIP are DNATed by kube-proxy and never follow the default route.
# Pods get a veth on the bridge, an address in the /24 and exactly two routes (the /24 itself
# and 10.0.0.0/24 via 10.213.0.1): no default route, no masquerading, no gateway mode.
# Why nothing leaves the machine: the bridge has no physical port; net.ipv4.ip_forward (and the
# bridge's own conf.forwarding) is 0, checked at start and start-node and recorded as
# IP_FORWARD in DIR/env, so a packet a pod sends is either bridged to another pod or delivered
# to a local address of the host, never routed further (the launcher refuses to start when
# forwarding is on); pods' resolv.conf names 10.213.0.1 (no DNS server there) instead of the
# host's resolver; containerd's image pulls go through a proxy address on a closed loopback
# port, so an image missing locally fails instead of being fetched. Only privileged or
# hostNetwork pods could step around this, and no test needs them.
NODE_BRIDGE=ker0
# The address of node k's pod bridge (0: the host's NODE_BRIDGE). A bridge created without an
# address takes the lowest address of its ports, so a pod whose veth happens to sort lower
# renames the gateway of every pod and node on it; their ARP entries then point nowhere until
# they expire (tens of seconds without the API server). A set address stays.
bridge_mac() { printf '02:6b:65:72:%02x:01' "$1"; }
NODE_SUBNET=10.213.0.0/24
NODE_HOST_IP=10.213.0.1
SERVICE_CIDR=10.0.0.0/24
KUBERNETES_SERVICE_IP=10.0.0.1
NODE_LOCK=/run/ker-node.lock
PAUSE_IMAGE=localhost/ker-pause:1
NRI_SOCKET=/var/run/nri/nri.sock
CNI_BIN_DIR=/usr/lib/cni
RUNC=/usr/sbin/runc
# Sysctls the kubelet sets (setupKernelTunables); recorded by start-node, restored by stop-node.
NODE_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
# Fixed host paths the kubelet, containerd, its shims and CNI create whatever their config
# says; the ones missing before start-node are removed by stop-node.
NODE_HOST_PATHS=(/var/lib/kubelet /var/lib/kubelet/device-plugins /var/lib/kubelet/pki /var/log/containers /var/log/pods
  /usr/libexec/kubernetes /var/lib/cni /run/containerd /run/nri /opt/containerd /etc/cni)

node_mode() { [[ "$(env_get NODE_NETWORK)" == true ]]; }

sysctl_get() { cat "/proc/sys/${1//.//}"; }

check_no_forwarding() { # records IP_FORWARD; dies when the host forwards IPv4
  local v d
  v=$(sysctl_get net.ipv4.ip_forward)
  d=$(sysctl_get net.ipv4.conf.default.forwarding)
  [[ "$v" == 0 && "$d" == 0 ]] ||
    die "net.ipv4.ip_forward=$v (conf.default.forwarding=$d): the node network relies on a host that does not route, so that nothing a pod sends leaves this machine; refusing to run"
  if [[ -e /proc/sys/net/ipv4/conf/$NODE_BRIDGE/forwarding ]]; then
    [[ "$(sysctl_get "net.ipv4.conf.$NODE_BRIDGE.forwarding")" == 0 ]] ||
      die "net.ipv4.conf.$NODE_BRIDGE.forwarding is not 0"
  fi
  env_set IP_FORWARD "$v"
}

# The machine-wide lock is held by a small process of DIR (DIR/node-lock.pid) from start
# --node-network until stop, because the bridge and its addresses exist once per machine.
node_lock_acquire() {
  local i owner
  [[ -d /run ]] || die "no /run for $NODE_LOCK"
  # The owner line is written into the lock file only once the lock is held.
  # shellcheck disable=SC2016 # expanded by the inner bash
  launch node-lock bash -c 'exec 9<>"$1" || exit 1; flock -n 9 || exit 75
    printf "%s pid %s\n" "$2" "$$" >"$1"; exec -a "ker-node-lock $2/" sleep infinity' ker-node-lock "$NODE_LOCK" "$DIR"
  for ((i = 0; i < 50; i++)); do
    if ! is_alive "$LAUNCHED_PID"; then
      rm -f "$DIR/node-lock.pid"
      owner=$(head -c 300 "$NODE_LOCK" 2>/dev/null || true)
      die "another real node network runs on this machine (lock $NODE_LOCK held by: ${owner:-?}); stop it first (launch.sh stop ITS_DIR)"
    fi
    [[ "$(head -n1 "$NODE_LOCK" 2>/dev/null)" == "$DIR pid $LAUNCHED_PID" ]] && return 0
    sleep 0.1
  done
  stop_component node-lock
  die "could not take $NODE_LOCK within 5 s"
}

node_lock_mine() {
  [[ -f "$DIR/node-lock.pid" ]] && owns_pid "$(<"$DIR/node-lock.pid")"
}

node_lock_free() { flock -n "$NODE_LOCK" true 2>/dev/null; }

# The folder of the run that made the bridge: node_network_up writes it into the bridge's
# alias, so it outlives that run's processes and the lock file's owner line.
node_bridge_creator() { cat "/sys/class/net/$NODE_BRIDGE/ifalias" 2>/dev/null || true; }

# With the lock held: a bridge still there was left by a run killed without a stop (a CI job
# cancelled, a session ended), since every live run holds the lock. Stopping that run's folder
# does what its own stop would have; without this every later run refuses to start.
node_reclaim_stale() {
  local stale
  ip link show "$NODE_BRIDGE" >/dev/null 2>&1 || return 0
  stale=$(node_bridge_creator)
  [[ -n "$stale" && "$stale" != "$DIR" && -f "$stale/env" ]] || return 0
  log "reclaiming the node network of $stale: that run ended without a stop"
  "$LAUNCHER" stop "$stale" || log "could not stop all of $stale (see above)"
  ip link del "$NODE_BRIDGE" 2>/dev/null || true
}

node_network_up() {
  local t
  for t in ip iptables iptables-save iptables-restore ip6tables-save ip6tables-restore; do
    command -v "$t" >/dev/null || die "'$t' is needed for --node-network (make deps)"
  done
  [[ "$(id -u)" == 0 ]] || die "--node-network needs root"
  node_lock_acquire
  check_no_forwarding
  node_reclaim_stale
  node_loopback_down
  ! ip link show "$NODE_BRIDGE" >/dev/null 2>&1 ||
    die "interface $NODE_BRIDGE already exists although no run holds $NODE_LOCK: left by a run that was not stopped? (ip link del $NODE_BRIDGE)"
  [[ -z "$(ip -4 -o addr show to "$NODE_SUBNET")" ]] || die "an interface already has an address in $NODE_SUBNET"
  [[ -z "$(ip -4 route show exact "$NODE_SUBNET")$(ip -4 route show exact "$SERVICE_CIDR")" ]] ||
    die "this host already routes $NODE_SUBNET or $SERVICE_CIDR"
  if iptables-save 2>/dev/null | grep -q '^:KUBE-' || ip6tables-save 2>/dev/null | grep -q '^:KUBE-'; then
    die "iptables already holds KUBE-* chains (another Kubernetes on this host, or a run that was not stopped: launch.sh stop DIR)"
  fi
  env_set NODE_NETWORK true BRIDGE "$NODE_BRIDGE" BRIDGE_IP "$NODE_HOST_IP" NODE_IP "$NODE_HOST_IP" POD_CIDR "$NODE_SUBNET" \
    KUBERNETES_SERVICE_HOST "$KUBERNETES_SERVICE_IP" KUBERNETES_SERVICE_PORT 443
  ip link add "$NODE_BRIDGE" address "$(bridge_mac 0)" type bridge || die "could not create bridge $NODE_BRIDGE"
  ip link set "$NODE_BRIDGE" alias "$DIR" || die "could not name $DIR in $NODE_BRIDGE's alias"
  env_set BRIDGE_CREATED true
  # Our interface only: no IPv6 on it, and it never forwards even if the default changes later.
  printf 1 >"/proc/sys/net/ipv6/conf/$NODE_BRIDGE/disable_ipv6" 2>/dev/null || true
  printf 0 >"/proc/sys/net/ipv4/conf/$NODE_BRIDGE/forwarding"
  if ! { ip addr add "$NODE_HOST_IP/${NODE_SUBNET#*/}" dev "$NODE_BRIDGE" && ip link set "$NODE_BRIDGE" up &&
    ip route add "$SERVICE_CIDR" dev "$NODE_BRIDGE" src "$NODE_HOST_IP"; }; then
    die "could not configure $NODE_BRIDGE"
  fi
  log "bridge $NODE_BRIDGE $NODE_HOST_IP/${NODE_SUBNET#*/} up (ip_forward=0; Service CIDR $SERVICE_CIDR routed onto it)"
}

# Host clients (kubectl, host-run components, the first node's kubelet) reach kube-apiserver on
# 127.0.0.1:PORT, which this nat OUTPUT rule sends on to NODE_HOST_IP:PORT while the bridge
# exists. The rule goes before the bridge does, so a host process that outlives the run gets a
# refused connection on loopback instead of sending to a private address that no longer leads
# anywhere of the run (and would follow the default route off the machine).
NODE_LOOPBACK_COMMENT=ker-node-loopback
node_loopback_rule() { # PORT -> the rule's arguments after the chain
  printf '%s\n' -d 127.0.0.1/32 -p tcp --dport "$1" -m comment --comment "$NODE_LOOPBACK_COMMENT" \
    -j DNAT --to-destination "$NODE_HOST_IP:$1"
}
node_loopback_up() { # PORT
  local rule
  mapfile -t rule < <(node_loopback_rule "$1")
  iptables -w -t nat -I OUTPUT "${rule[@]}" || die "could not add the loopback rule for kube-apiserver's port $1"
}
# Every rule of ours in nat OUTPUT; with the machine lock held, ones of other runs are leftovers.
node_loopback_down() {
  local line rule
  while IFS= read -r line; do
    read -r -a rule <<<"${line/#-A OUTPUT /}"
    iptables -w -t nat -D OUTPUT "${rule[@]}" || log "could not delete the nat rule: $line"
  done < <(iptables -w -t nat -S OUTPUT 2>/dev/null | grep -F -- "--comment $NODE_LOOPBACK_COMMENT ")
}

# Removes the loopback rule and the bridge (its addresses and routes go with it) and releases
# the machine lock.
node_network_down() {
  [[ "$(env_get BRIDGE_CREATED)" == true ]] || { stop_component node-lock; return 0; }
  # Also ours when our lock process died with the rest of a killed run and nobody took the lock.
  if node_lock_mine || { [[ "$(node_bridge_creator)" == "$DIR" ]] && node_lock_free; }; then
    node_loopback_down
    if ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then
      ip link del "$NODE_BRIDGE" || log "could not delete bridge $NODE_BRIDGE"
    fi
    env_unset BRIDGE_CREATED
  else
    log "not removing $NODE_BRIDGE: $DIR does not hold $NODE_LOCK (any more)"
  fi
  stop_component node-lock
  # The owner line, unless another run took the lock meanwhile.
  [[ "$(head -n1 "$NODE_LOCK" 2>/dev/null)" != "$DIR pid "* ]] || : >"$NODE_LOCK"
}

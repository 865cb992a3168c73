#!/usr/bin/env bash
# After `launch.sh stop DIR` of a real-node cluster: checks that no process of that run is left,
# that host clients' loopback address of kube-apiserver is refused, and that for SECONDS (default 10) nothing on this machine sends a packet to the node network's
# ranges (the nodes' 10.213.0.0/16 and the Service CIDR), which after the teardown no longer
# lead to anything of the run. While it watches, the host rejects such packets with OUTPUT rules
# of its own (removed afterwards), so none leaves the machine; one probe of its own first shows
# the rules count. Root. Exit status 0 when nothing was left and nothing was sent.
#
#   test/controlplane/node/teardown-check.sh DIR [SECONDS]
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[teardown-check] %s\n' "$*" >&2; }
fail() {
  log "FAILED: $*"
  exit 1
}
dir=${1:?usage: teardown-check.sh DIR [SECONDS]}
seconds=${2:-10}
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || fail "SECONDS must be a positive integer"
[[ "$(id -u)" == 0 ]] || fail "needs root (iptables)"
# shellcheck source=../lib/node_network.sh
source "$here/lib/node_network.sh"
# The first node's subnet and every further node's (10.213.K.0/24, lib/node_extra.sh).
ranges=(10.213.0.0/16 "$SERVICE_CIDR")
tag="ker-teardown-check-$$"

left=$(pgrep -a -f -- "$dir/" || true)
[[ -z "$left" ]] || fail "processes of $dir left after its stop: $(printf '%s\n' "$left" | cut -c1-200)"
! ip link show "$NODE_BRIDGE" >/dev/null 2>&1 || fail "$NODE_BRIDGE is still there"
# Host clients used 127.0.0.1:APISERVER_PORT: with the loopback rule gone, a leftover one is
# refused at once on this machine.
! iptables -w -t nat -S OUTPUT 2>/dev/null | grep -qF -- "--comment $NODE_LOOPBACK_COMMENT " ||
  fail "the loopback rule ($NODE_LOOPBACK_COMMENT) is still in nat OUTPUT"
port=$(sed -n 's/^APISERVER_PORT=//p' "$dir/env" 2>/dev/null | tail -n1)
if [[ -n "$port" ]]; then
  rc=0
  timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null || rc=$?
  ((rc != 0)) || fail "127.0.0.1:$port (kube-apiserver's) still answers after the teardown"
  ((rc != 124)) || fail "a connection to 127.0.0.1:$port hung instead of being refused"
fi

if ! ip route get "$NODE_HOST_IP" >/dev/null 2>&1; then
  log "ok: no process of $dir left; this host has no route to $NODE_HOST_IP, so nothing can be sent there"
  exit 0
fi

remove_rules() {
  local r
  for r in "${ranges[@]}"; do
    while iptables -w -D OUTPUT -d "$r" -m comment --comment "$tag" -j REJECT 2>/dev/null; do :; done
  done
}
trap remove_rules EXIT
for r in "${ranges[@]}"; do
  iptables -w -I OUTPUT -d "$r" -m comment --comment "$tag" -j REJECT || fail "could not add the OUTPUT rule for $r"
done
sent() { iptables -w -L OUTPUT -n -v -x | awk -v t="$tag" 'index($0, t) { n += $1 } END { print n + 0 }'; }

# The probe: one connection attempt of ours to the bridge's old address must be counted.
timeout 2 bash -c "exec 3<>/dev/tcp/$NODE_HOST_IP/9" 2>/dev/null || true
probe=$(sent)
((probe >= 1)) || fail "the rules did not count the probe sent to $NODE_HOST_IP: the check would see nothing"

sleep "$seconds"
after=$(sent)
# Open or opening connections only: a TIME-WAIT left by a connection closed before the stop
# sends nothing.
connections=$(ss -Htn state syn-sent state established dst "${ranges[0]}" 2>/dev/null || true)
remove_rules
trap - EXIT
((after == probe)) || fail "$((after - probe)) packet(s) sent to ${ranges[*]} within ${seconds}s after the teardown"
[[ -z "$connections" ]] || fail "connections to ${ranges[0]} after the teardown: $connections"
left=$(pgrep -a -f -- "$dir/" || true)
[[ -z "$left" ]] || fail "processes of $dir appeared after its stop: $(printf '%s\n' "$left" | cut -c1-200)"
log "ok: no process of $dir left, nothing sent to ${ranges[*]} for ${seconds}s after the teardown"

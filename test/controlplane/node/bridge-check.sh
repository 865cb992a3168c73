#!/usr/bin/env bash
# Checks that the node bridge keeps its address when a port with a lower address joins it, as a
# pod's veth does: otherwise every node and pod on it loses the API server until its ARP entry
# for the gateway expires. Root only; about 10 s.
#
#   test/controlplane/node/bridge-check.sh
set -euo pipefail

CHECK=bridge-check
# shellcheck source=test/controlplane/node/network-check-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/network-check-lib.sh"

dir=$(mktemp -d /tmp/ker-bridge-check.XXXXXX)
cleanup() {
  local rc=$?
  trap - EXIT
  ip link del kerbc0 2>/dev/null || true
  "$launcher" stop "$dir" 2>/dev/null || rc=1
  if ((rc == 0)); then rm -rf "$dir"; else step "folder kept: $dir"; fi
  exit "$rc"
}
trap cleanup EXIT

"$launcher" start "$dir" --bin-dir "$bin_dir" --node-network >/dev/null 2>"$dir/start.log" ||
  fail "start: $(tail -3 "$dir/start.log")"
before=$(cat /sys/class/net/ker0/address)
# The lowest unicast address there is: any bridge that follows its ports would take it.
ip link add kerbc0 address 00:00:00:00:00:01 type veth peer name kerbc1 || fail "could not create a veth"
ip link set kerbc0 master ker0 up || fail "could not put the veth on ker0"
after=$(cat /sys/class/net/ker0/address)
[[ "$after" == "$before" ]] || fail "ker0 changed its address from $before to $after when a port joined"
step "ok: ker0 kept $before when a port with a lower address joined"

#!/usr/bin/env bash
# End-to-end check of the control-plane tooling: builds (or reuses) the pinned binaries, starts
# a plane, exercises the API and two schedulers, restarts the apiserver, stops everything and
# verifies that no process or port is left behind. No extender is needed: the scheduler is only
# expected to run, be healthy and report that its (dummy) extender is unreachable.
#
#   test/controlplane/smoke.sh [DIR]     (default: a new temp folder, removed on success)
#   test/controlplane/smoke.sh --node [DIR]   the real-node check instead (node/smoke.sh, root)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ "${1:-}" == --node ]]; then
  shift
  exec "$here/node/smoke.sh" "$@"
fi
launcher="$here/launch.sh"
step() { printf '[smoke %3ss] %s\n' "$SECONDS" "$*" >&2; }
fail() {
  step "FAILED: $*"
  exit 1
}

own_dir=false
if (($# == 0)); then
  dir=$(mktemp -d "${TMPDIR:-/tmp}/ker-smoke.XXXXXX")
  own_dir=true
else
  dir=$1
  mkdir -p "$dir"
fi
dir=$(cd "$dir" && pwd -P)
env_value() { awk -v k="$1" 'index($0, k "=") == 1 { print substr($0, length(k) + 2); exit }' "$dir/env"; }
# shellcheck disable=SC2317 # invoked by trap
cleanup() {
  local rc=$?
  trap - EXIT
  if [[ "$(env_value STATE 2>/dev/null)" != stopped ]]; then "$launcher" stop "$dir" || rc=1; fi
  if ((rc == 0)) && $own_dir; then rm -rf "$dir"; else step "folder kept: $dir"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# shellcheck source=common.sh
source "$here/common.sh"
load_versions

bin_dir=$("$here/build-binaries.sh" | tail -n1)
got=$("$bin_dir/kube-apiserver" --version)
step "kube-apiserver --version: $got"
[[ "$got" == "Kubernetes $KUBERNETES_VERSION" || -n "${KUBEBUILDER_ASSETS:-}" ]] || fail "expected Kubernetes $KUBERNETES_VERSION"
step "kube-scheduler --version: $("$bin_dir/kube-scheduler" --version)"
step "kubectl: $("$bin_dir/kubectl" version --client | awk 'NR == 1')"
step "etcd: $("$bin_dir/etcd" --version | awk 'NR == 1')"

step "launch.sh start $dir"
"$launcher" start "$dir" --bin-dir "$bin_dir" >/dev/null
export KUBECONFIG="$dir/admin.kubeconfig"
k() { "$bin_dir/kubectl" --request-timeout=10s "$@"; }

[[ "$(k get --raw /readyz)" == ok ]] || fail "/readyz is not ok"
step "readyz ok; /version gitVersion: $(k get --raw /version | sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p')"
step "whoami: $(k auth whoami -o jsonpath='{.status.userInfo.username} {.status.userInfo.groups}')"
# The token in the env file authenticates too (for clients without a kubeconfig parser).
curl -fsS --max-time 5 --cacert "$(env_value CA_CERT)" -H "Authorization: Bearer $(env_value ADMIN_TOKEN)" \
  "$(env_value APISERVER_URL)/api/v1/namespaces/default" >/dev/null || fail "ADMIN_TOKEN rejected"

step "create a Ready node with allocatable example.com/gpu"
k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Node
metadata:
  name: smoke-node-1
  labels: {kubernetes.io/hostname: smoke-node-1}
status:
  capacity: {cpu: "8", memory: 16Gi, pods: "110", example.com/gpu: "4"}
  allocatable: {cpu: "8", memory: 16Gi, pods: "110", example.com/gpu: "4"}
  conditions:
  - {type: Ready, status: "True", reason: KubeletReady, message: smoke}
EOF
# Status given at creation is kept for nodes; patch it through the status subresource anyway,
# the way a test refreshing the heartbeat would.
k patch node smoke-node-1 --subresource=status --type=merge \
  -p "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\",\"message\":\"smoke\",\"lastHeartbeatTime\":\"$(date -u +%FT%TZ)\"}]}}" >/dev/null
alloc=$(k get node smoke-node-1 -o jsonpath='{.status.allocatable.example\.com/gpu} {.status.conditions[?(@.type=="Ready")].status}')
[[ "$alloc" == "4 True" ]] || fail "node status is '$alloc'"

step "start-scheduler default (dummy http extender)"
"$launcher" start-scheduler "$dir" --extender-url http://127.0.0.1:9/extender --node-cache-capable false >/dev/null
step "start-scheduler second (https extender, other profile, managed resource)"
"$launcher" start-scheduler "$dir" --name second --scheduler-name second-scheduler \
  --extender-url https://127.0.0.1:9/extender --node-cache-capable true \
  --managed-resource example.com/gpu:ignored >/dev/null
sched_url=$(env_value SCHEDULER_DEFAULT_URL)
[[ -n "$sched_url" && -n "$(env_value SCHEDULER_SECOND_URL)" ]] || fail "scheduler keys missing in env"
metrics=$(curl -fsS --max-time 5 --cacert "$(env_value CA_CERT)" "$sched_url/metrics") ||
  fail "scheduler /metrics not served"
grep -q '^scheduler_' <<<"$metrics" || fail "scheduler /metrics has no scheduler_ series"

step "a pod for extended-resource-scheduler reaches the (absent) extender"
k create namespace smoke >/dev/null
k apply -n smoke -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: wants-gpu}
spec:
  schedulerName: extended-resource-scheduler
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10
    resources:
      requests: {example.com/gpu: "1"}
      limits: {example.com/gpu: "1"}
EOF
msg=''
for ((i = 0; i < 120; i++)); do
  msg=$(k get events -n smoke --field-selector reason=FailedScheduling,involvedObject.name=wants-gpu \
    -o jsonpath='{.items[*].message}')
  [[ -z "$msg" ]] || break
  sleep 0.5
done
[[ -n "$msg" ]] || fail "no FailedScheduling event for the pod within 60s"
step "scheduler said: $msg"
[[ "$msg" == *127.0.0.1:9* ]] || fail "the scheduler did not call the configured extender"
k delete pod -n smoke wants-gpu --grace-period=0 --wait=false >/dev/null

step "server-side dry-run apply"
k apply -n smoke --dry-run=server -f - <<'EOF' >&2
apiVersion: v1
kind: ConfigMap
metadata: {name: smoke}
data: {k: v}
EOF
[[ -z "$(k get configmap -n smoke smoke --ignore-not-found -o name)" ]] || fail "dry-run created the object"

step "stop-scheduler second"
"$launcher" stop-scheduler "$dir" --name second
[[ -z "$(env_value SCHEDULER_SECOND_PID)" && "$(env_value SCHEDULERS)" == default ]] || fail "env not updated after stop-scheduler"

old_pid=$(env_value APISERVER_PID)
step "restart-apiserver"
"$launcher" restart-apiserver "$dir"
[[ "$(env_value APISERVER_PID)" != "$old_pid" ]] || fail "APISERVER_PID unchanged"
[[ "$(k get --raw /readyz)" == ok ]] || fail "/readyz after restart"
k get namespace smoke -o name >/dev/null || fail "namespace lost across the restart"
k get node smoke-node-1 -o name >/dev/null || fail "node lost across the restart"
[[ "$(curl -fsS --max-time 5 --cacert "$(env_value CA_CERT)" "$sched_url/healthz")" == ok ]] ||
  fail "scheduler unhealthy after the apiserver restart"

"$launcher" status "$dir" >&2
ports=("$(env_value APISERVER_PORT)" "${sched_url##*:}" "$(env_value ETCD_URL)")
ports[2]=${ports[2]##*:}
step "launch.sh stop"
"$launcher" stop "$dir"
left=$(pgrep -a -f -- "$dir/" | grep -v "^$$ " || true)
[[ -z "$left" ]] || fail "processes left behind: $left"
for p in "${ports[@]}"; do
  [[ -z "$(ss -Htln "sport = :$p")" ]] || fail "port $p still listening"
done
step "nothing left running for $dir; ports ${ports[*]} closed"
step "PASS"

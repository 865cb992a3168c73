#!/usr/bin/env bash
# `make run`: the whole system on this machine. Starts a loopback control plane (etcd,
# kube-apiserver, kube-controller-manager), applies crds/, the RBAC of deploy/ and the samples
# of config/, runs the extender and the controller with their ServiceAccounts' credentials
# and kube-scheduler with the extended-resource-scheduler profile, waits for the sample pod to
# be scheduled with its claim Bound, and keeps everything running until Ctrl-C.
#
#   deploy/run-local.sh [BUILD_DIR]        (default: build)
#
# State, logs and kubeconfigs live in .run/ at the top of the repository.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
run="$root/.run"
cp="$run/controlplane"
launcher="$root/test/controlplane/launch.sh"
children=()

log() { printf '[run] %s\n' "$*" >&2; }

cleanup() {
  local pid
  trap - EXIT INT TERM
  # Whoever read our output may be gone with the same Ctrl-C; stopping must go on regardless.
  trap '' PIPE
  log "stopping"
  for pid in "${children[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${children[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  "$launcher" stop "$cp" || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A TCP port on 127.0.0.1 nobody listens on.
free_port() {
  local port
  for _ in $(seq 1 100); do
    port=$((20000 + RANDOM % 12000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      printf '%s\n' "$port"
      return 0
    fi
  done
  log "no free port found"
  return 1
}

# wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND until it succeeds.
wait_for() {
  local secs=$1 what=$2 deadline
  shift 2
  deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      log "timed out after ${secs}s waiting for $what"
      return 1
    fi
    sleep 0.5
  done
}

mkdir -p "$run"
"$launcher" stop "$cp" >/dev/null 2>&1 || true
rm -rf "$cp"
"$launcher" start "$cp" >/dev/null
"$launcher" start-controller-manager "$cp" >/dev/null
bin_dir=$(sed -n 's/^BIN_DIR=//p' "$cp/env")
export KUBECONFIG="$cp/admin.kubeconfig"
kubectl() { "$bin_dir/kubectl" "$@"; }

log "applying crds/"
kubectl apply -f "$root/crds" >/dev/null
kubectl wait --for=condition=Established --timeout=60s \
  crd/extendedresources.extendedresource.io crd/extendedresourceclaims.extendedresource.io >/dev/null

log "applying the ServiceAccounts and RBAC of deploy/"
"$launcher" apply-deploy-rbac "$cp"
"$launcher" sa-kubeconfig "$cp" kube-system extended-resource-scheduler "$run/extender.kubeconfig" >/dev/null
"$launcher" sa-kubeconfig "$cp" kube-system extended-resource-controller "$run/controller.kubeconfig" >/dev/null

extender_port=$(free_port)
extender_health=$(free_port)
log "starting the extender on 127.0.0.1:$extender_port (log: .run/extender.log)"
# setsid: Ctrl-C reaches this script only, which then stops the components in order.
setsid "$build/scheduler/extended-resource-scheduler" --kubeconfig "$run/extender.kubeconfig" \
  --bind-address 127.0.0.1 --port "$extender_port" --health-port "$extender_health" \
  --health-bind-address 127.0.0.1 >"$run/extender.log" 2>&1 &
children+=($!)
wait_for 60 "the extender's /readyz" curl -fsS "http://127.0.0.1:$extender_health/readyz"

controller_port=$(free_port)
log "starting the controller (log: .run/controller.log)"
setsid "$build/controller/extended-resource-controller" --kubeconfig "$run/controller.kubeconfig" \
  --metrics-bind-address "127.0.0.1:$controller_port" >"$run/controller.log" 2>&1 &
children+=($!)
wait_for 60 "the controller's /healthz" curl -fsS "http://127.0.0.1:$controller_port/healthz"

"$launcher" start-scheduler "$cp" --extender-url "http://127.0.0.1:$extender_port" \
  --node-cache-capable true >/dev/null

log "applying config/local/nodes.yaml and the samples of config/"
kubectl apply -f "$root/config/local/nodes.yaml" >/dev/null
kubectl apply -f "$root/config" >/dev/null

claim_bound() { [[ "$(kubectl get erc k80-erc -o 'jsonpath={.status.phase}')" == Bound ]]; }
pod_scheduled() { [[ -n "$(kubectl get pods -l app=nginx -o 'jsonpath={.items[*].spec.nodeName}')" ]]; }
wait_for 120 "the nginx pod to be scheduled" pod_scheduled
wait_for 60 "claim k80-erc to be Bound" claim_bound

echo
kubectl get er,erc,pods -o wide
cat <<EOF

The system is running: kube-apiserver, kube-controller-manager, kube-scheduler (profile
extended-resource-scheduler), the extender and the controller. Logs are in .run/.
To use it from another shell:

  export KUBECONFIG=$KUBECONFIG
  export PATH=$bin_dir:\$PATH

Press Ctrl-C to stop everything.
EOF

while true; do
  for pid in "${children[@]}"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "a component exited (pid $pid); see .run/*.log"
      exit 1
    fi
  done
  sleep 2
done

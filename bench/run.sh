#!/usr/bin/env bash
# Benchmarks the extender and the controller against a real, loopback-only control plane and
# writes bench/results/latest.json and latest.md (also printed), and through bench/plot.py the
# plot extender-p99.svg.
#
#   bench/run.sh [extender_bench flags...]     e.g. bench/run.sh --sizes 100 --repeats 1
#
# Builds into $BENCH_BUILD_DIR (default build-bench, Release), starts etcd + kube-apiserver
# with an audit policy that logs the extender's and the controller's requests, and always
# stops them on exit. KEEP_BENCH_DIR=1 keeps the work folder (logs, audit log) after success;
# after a failure it is always kept.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib.sh
source "$root/bench/lib.sh"
# The ServiceAccounts of deploy/: the components run with the tokens and rights they have in a
# cluster, and the audit log tells their requests apart by these names.
extender_sa=extended-resource-scheduler-extender
controller_sa=extended-resource-controller
extender_user=system:serviceaccount:kube-system:$extender_sa
controller_user=system:serviceaccount:kube-system:$controller_sa

log() { printf '[bench/run.sh] %s\n' "$*" >&2; }
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then
  sed -n '2,11s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
  echo "The flags are extender_bench's: \$BENCH_BUILD_DIR/bench/extender_bench --help once built."
  exit 0
fi

bench_build extender_bench extended-resource-scheduler
controller_bin=$build_dir/controller/extended-resource-controller
# The controller is measured when it builds; the rest of the benchmark does not need it.
if ! bench_build extended-resource-controller; then
  log "extended-resource-controller does not build: its part is reported as not done"
  controller_bin=''
fi

bin_dir=$("$root/test/controlplane/build-binaries.sh" | tail -n1)
work=$(mktemp -d "${TMPDIR:-/tmp}/ker-bench.XXXXXX")
cp_dir=$work/controlplane
bench_pid=''

# shellcheck disable=SC2317 # invoked by trap
on_exit() {
  local rc=$?
  trap - EXIT INT TERM
  # The bench stops the extender or controller it runs when it gets SIGTERM.
  if [[ -n "$bench_pid" ]] && kill -0 "$bench_pid" 2>/dev/null; then
    kill -TERM "$bench_pid" 2>/dev/null || true
    wait "$bench_pid" 2>/dev/null || true
  fi
  if ! "$launcher" stop "$cp_dir" >/dev/null; then
    log "stopping the control plane in $cp_dir failed"
    ((rc != 0)) || rc=1
  fi
  if ((rc != 0)) || [[ "${KEEP_BENCH_DIR:-0}" == 1 ]]; then
    log "work folder kept: $work"
  else
    rm -rf "$work"
  fi
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Metadata-level events for the two measured users only: counting their requests costs the
# API server next to nothing, and nobody else's requests are logged.
cat >"$work/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  users: ["$extender_user", "$controller_user"]
- level: None
EOF

log "starting the control plane in $cp_dir"
env_file=$("$launcher" start "$cp_dir" --bin-dir "$bin_dir" \
  --apiserver-arg=--audit-policy-file="$work/audit-policy.yaml" \
  --apiserver-arg=--audit-log-path="$work/audit.log" | tail -n1)
env_get() { sed -n "s/^$1=//p" "$env_file" | tail -n1; }
kubeconfig=$(env_get KUBECONFIG)
kubectl=$(env_get KUBECTL)

"$kubectl" --kubeconfig "$kubeconfig" apply -f "$root/crds" >/dev/null
admin_kubectl() { "$kubectl" --kubeconfig "$kubeconfig" "$@"; }
wait_crds_established admin_kubectl crd/extendedresources.extendedresource.io \
  crd/extendedresourceclaims.extendedresource.io || { log "the CRDs are not Established"; exit 1; }

log "applying the ServiceAccounts and RBAC of deploy/"
"$launcher" apply-deploy-rbac "$cp_dir"
"$launcher" sa-kubeconfig "$cp_dir" kube-system "$extender_sa" "$work/extender.kubeconfig" >/dev/null
"$launcher" sa-kubeconfig "$cp_dir" kube-system "$controller_sa" "$work/controller.kubeconfig" >/dev/null

mkdir -p "$root/bench/results"
"$build_dir/bench/extender_bench" \
  --kubeconfig "$kubeconfig" \
  --extender-kubeconfig "$work/extender.kubeconfig" --extender-user "$extender_user" \
  --controller-kubeconfig "$work/controller.kubeconfig" --controller-user "$controller_user" \
  --audit-log "$work/audit.log" \
  --scheduler-binary "$build_dir/scheduler/extended-resource-scheduler" \
  --controller-binary "$controller_bin" \
  --apiserver-pid "$(env_get APISERVER_PID)" --etcd-pid "$(env_get ETCD_PID)" \
  --work-dir "$work" --out-dir "$root/bench/results" "$@" &
bench_pid=$!
wait "$bench_pid"
python3 "$root/bench/plot.py" "$root/bench/results" || log "bench/plot.py could not draw the plots"

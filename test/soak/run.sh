#!/usr/bin/env bash
# Chaos soak of the extender and the controller on a real, loopback-only control plane: two
# extender replicas behind two kube-schedulers of the same profile, two leader-elected
# controllers, pods with claims created and deleted all along, faults injected in turn, and
# the invariants checked at checkpoints and at the end (see soak.cpp).
#
#   test/soak/run.sh [--reduced] [--build-dir DIR] [--seconds N] [soak flags...]
#
# Full size (make soak): SOAK_SECONDS (default 300) seconds of churn over 300 nodes and 150
# devices. --reduced (make test): 90 seconds over 50 nodes and 30 devices. DIR (default build/)
# must hold the built binaries. Other flags go to the soak binary (try --help there). Runs in
# a fresh folder under $TMPDIR, kept after a failure or with SOAK_KEEP=1; the control plane is
# always stopped. Exit status: 0 when the soak found nothing wrong.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../lib/crds.sh
source "$root/test/lib/crds.sh"
launcher=$root/test/controlplane/launch.sh

log() { printf '[soak/run.sh] %s\n' "$*" >&2; }

build_dir=$root/build
seconds=''
default_seconds=${SOAK_SECONDS:-300}
size=(--nodes 300 --devices 150 --delete-rate 3)
extra=()
while (($#)); do
  case "$1" in
  --reduced)
    default_seconds=90
    size=(--nodes 50 --devices 30 --delete-rate 1.5)
    ;;
  --build-dir) build_dir=${2:?--build-dir needs a value} && shift ;;
  --seconds) seconds=${2:?--seconds needs a value} && shift ;;
  -h | --help)
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
    exit 0
    ;;
  *) extra+=("$1") ;;
  esac
  shift
done
seconds=${seconds:-$default_seconds}
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || {
  log "--seconds must be a positive integer"
  exit 2
}
build_dir=$(cd "$build_dir" && pwd)
for bin in test/soak/soak scheduler/extended-resource-scheduler \
  controller/extended-resource-controller tools/ker-check-invariants; do
  [[ -x "$build_dir/$bin" ]] || {
    log "no $build_dir/$bin: build first (make build)"
    exit 2
  }
done

bin_dir=$("$root/test/controlplane/build-binaries.sh" | tail -n1)
work=$(mktemp -d "${TMPDIR:-/tmp}/ker-soak.XXXXXX")
cp=$work/controlplane
soak_pid=''

# shellcheck disable=SC2317 # invoked by trap
on_exit() {
  local rc=$? left
  trap - EXIT INT TERM
  trap '' PIPE
  if [[ -n "$soak_pid" ]] && kill -0 "$soak_pid" 2>/dev/null; then
    # The soak stops the extenders and controllers it runs when it gets SIGTERM.
    kill -TERM "$soak_pid" 2>/dev/null || true
    wait "$soak_pid" 2>/dev/null || true
  fi
  if ! "$launcher" stop "$cp" >/dev/null 2>&1; then
    log "stopping the control plane in $cp failed"
    ((rc != 0)) || rc=1
  fi
  # Every process of this run names the work folder on its command line.
  left=$(pgrep -a -f -- "$work/" || true)
  if [[ -n "$left" ]]; then
    log "processes left behind:"
    printf '%s\n' "$left" | cut -c1-200 >&2
    ((rc != 0)) || rc=1
  fi
  if ((rc != 0)) || [[ "${SOAK_KEEP:-0}" == 1 ]]; then
    log "work folder kept (logs, report.txt): $work"
  else
    rm -rf "$work"
  fi
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Every write that decides who holds a device, with request and response bodies: when the soak
# finds two pods on one device, audit.log tells which replica wrote what, in which order (each
# replica has a token of its own; its credential ID is in user.extra). Nudges and lease
# renewals are left out: they are most of the traffic and decide nothing.
cat >"$work/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: RequestResponse
  verbs: ["create", "update", "patch", "delete"]
  resources:
  - group: extendedresource.io
    resources: ["extendedresources/status", "extendedresourceclaims/status", "extendedresourceclaims"]
  - group: ""
    resources: ["pods/binding"]
- level: Metadata
  verbs: ["create", "delete"]
  resources:
  - group: ""
    resources: ["pods"]
- level: None
EOF

log "starting the control plane in $cp"
env_file=$("$launcher" start "$cp" --bin-dir "$bin_dir" \
  --apiserver-arg=--audit-policy-file="$work/audit-policy.yaml" \
  --apiserver-arg=--audit-log-path="$work/audit.log" | tail -n1)
env_get() { sed -n "s/^$1=//p" "$env_file" | tail -n1; }
kubectl=("$(env_get KUBECTL)" --kubeconfig "$(env_get KUBECONFIG)")

"${kubectl[@]}" apply -f "$root/crds" >/dev/null
run_kubectl() { "${kubectl[@]}" "$@"; }
wait_crds_established run_kubectl crd/extendedresources.extendedresource.io \
  crd/extendedresourceclaims.extendedresource.io crd/extendedresourceclaimtemplates.extendedresource.io ||
  { log "the CRDs are not Established"; exit 1; }
# The ServiceAccounts and RBAC of deploy/. No kube-controller-manager runs, so the
# Deployments in the same files stay inert: the soak runs the binaries itself.
"${kubectl[@]}" apply -f "$root/deploy/extender.yaml" -f "$root/deploy/deployment.yaml" >/dev/null

# A bound on the whole run beyond the soak's own: churn, setup, and settling at checkpoints.
limit=$((seconds * 2 + 1200))
log "running the soak (${seconds}s of churn; at most ${limit}s in all)"
timeout --kill-after=30 "$limit" "$build_dir/test/soak/soak" \
  --controlplane-dir "$cp" --launcher "$launcher" --build-dir "$build_dir" --work-dir "$work" \
  --seconds "$seconds" "${size[@]}" "${extra[@]}" &
soak_pid=$!
wait "$soak_pid"

#!/usr/bin/env bash
# Runs the end-to-end tests (ctest label "e2e") of BUILD_DIR on a real node with deploy/
# running as pods from the image just built (test/e2e/cluster-up.sh), and always stops
# everything.
#
#   test/run-e2e.sh BUILD_DIR [extra ctest arguments...]
#
# KEEP_E2E_DIR=1 keeps the folder (logs, kubeconfigs) after a success; after a failure it is
# always kept, with the cluster's pods, events and the components' logs in it. Exit status:
# ctest's, or 1 when the cluster could not be brought up.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
launcher="$here/controlplane/launch.sh"

log() { printf '[run-e2e] %s\n' "$*" >&2; }

if (($# < 1)); then
  sed -n '2,14s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
fi
build_dir=$1
shift
if [[ ! -d "$build_dir" ]]; then
  log "no build folder '$build_dir' (configure and build first)"
  exit 2
fi
build_dir=$(cd "$build_dir" && pwd)

total=$(cd "$build_dir" && ctest -N -L e2e | awk '/^Total Tests:/ { print $3 }')
if [[ -z "$total" || "$total" == 0 ]]; then
  log "no e2e tests are registered in $build_dir (ctest -L e2e): nothing to run"
  exit 0
fi

bin_dir=$("$here/controlplane/build-binaries.sh" --print-dir)
dir=$(mktemp -d "${TMPDIR:-/tmp}/ker-e2e.XXXXXX")
child=''

kubectl() { "$bin_dir/kubectl" --kubeconfig "$dir/admin.kubeconfig" "$@"; }

# What a failed run leaves to read: every pod, every event, the components' logs.
collect() {
  local pod
  kubectl get nodes,pods,er,erc -A -o wide >"$dir/cluster.txt" 2>&1 || true
  kubectl get events -A --sort-by=.lastTimestamp >"$dir/events.txt" 2>&1 || true
  for pod in $(kubectl get pods -n kube-system -o name 2>/dev/null); do
    kubectl logs -n kube-system "$pod" --all-containers --prefix >"$dir/${pod#pod/}.log" 2>&1 || true
  done
}

# shellcheck disable=SC2317 # invoked by trap
on_exit() {
  local rc=$?
  trap - EXIT INT TERM
  ((rc == 0)) || collect
  if ! "$launcher" stop "$dir"; then
    log "stopping the cluster in $dir failed"
    ((rc != 0)) || rc=1
  fi
  if ((rc != 0)) || [[ "${KEEP_E2E_DIR:-0}" == 1 ]]; then
    log "cluster folder kept for inspection: $dir"
  else
    rm -rf "$dir"
  fi
  exit "$rc"
}

# shellcheck disable=SC2317 # invoked by trap
on_signal() {
  local i
  log "interrupted; stopping the tests"
  if [[ -n "$child" ]] && kill -0 "$child" 2>/dev/null; then
    kill -TERM -- "-$child" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      kill -0 "$child" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$child" 2>/dev/null || true
  fi
  exit "$1"
}

trap on_exit EXIT
trap 'on_signal 130' INT
trap 'on_signal 143' TERM

"$here/e2e/cluster-up.sh" "$dir"

export KER_TEST_ENV="$dir/env"
log "cluster up ($KER_TEST_ENV); running $total e2e test(s)"
cd "$build_dir"
setsid ctest -L e2e --output-on-failure "$@" &
child=$!
rc=0
wait "$child" || rc=$?
child=''
exit "$rc"

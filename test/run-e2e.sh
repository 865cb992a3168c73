#!/usr/bin/env bash
# Runs the end-to-end tests (ctest label "e2e") of BUILD_DIR on two real nodes with deploy/
# running as pods from the image just built (test/e2e/cluster-up.sh), and always stops
# everything.
#
#   test/run-e2e.sh BUILD_DIR [extra ctest arguments...]
#
# KEEP_E2E_DIR=1 keeps the folder (logs, kubeconfigs) after a success; after a failure it is
# always kept, with the cluster's pods, events and the components' logs in it. Exit status:
# ctest's, or 1 when the cluster could not be brought up or a check after ctest failed.
#
# A full run (no extra arguments) first checks that a node network left by a killed run is
# reclaimed (controlplane/node/reclaim-check.sh) and that the bridge keeps its address when pods
# join it (controlplane/node/bridge-check.sh). After ctest it checks, from the API server's
# audit log, that the node agent used every permission deploy/ grants it and asked for nothing
# more (tools/ker-rbac-usage; test/e2e/rbac-not-requested.txt lists what is granted for other
# reasons), and then replaces deploy/ with `helm install` of charts/kube-extended-resource, runs
# the sample workload with a device and `helm upgrade`s under it (test/helm/install-test.sh,
# about 2 min). KER_E2E_HELM=1 runs that Helm phase after a filtered run too (e.g.
# `-R TwoPodsEachSee`), when ctest passed. After the stop it checks that nothing of the run is
# left or sends to its addresses for 10 s (controlplane/node/teardown-check.sh).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

log() { printf '[run-e2e] %s\n' "$*" >&2; }

if (($# < 1)); then
  sed -n '2,21s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
fi
# shellcheck source=lib/suite.sh
source "$here/lib/suite.sh"
suite_tests e2e "$1"
shift
build_dir=$SUITE_BUILD total=$SUITE_TOTAL

bin_dir=$("$here/controlplane/build-binaries.sh" --print-dir)
dir=$(mktemp -d "${TMPDIR:-/tmp}/ker-e2e.XXXXXX")
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

SUITE_DIR=$dir SUITE_KEEP=${KEEP_E2E_DIR:-0} SUITE_COLLECT=collect
# After a full run's stop: nothing of it left, and nothing sent to its addresses any more.
teardown_check() { "$here/controlplane/node/teardown-check.sh" "$dir" 10; }
(($# > 0)) || SUITE_AFTER_STOP=teardown_check
suite_traps

# First, on a full run: a node network left by a killed run must not block the next one, and
# a pod joining the bridge must not change the address everything on it reaches the host by.
if (($# == 0)); then
  "$here/controlplane/node/reclaim-check.sh" || { log "reclaim-check failed"; exit 1; }
  "$here/controlplane/node/bridge-check.sh" || { log "bridge-check failed"; exit 1; }
fi

# Two nodes: the second is tainted, so only the multi-node tests' pods (and the node agent) run
# there and every other test sees the one node it was written for.
# The previous release is built too (minutes the first time, then cached) for the upgrade tests.
"$here/e2e/cluster-up.sh" "$dir" --nodes 2 --extra-node-taint ker.test/extra-node=true:NoSchedule \
  --previous-release

export KER_TEST_ENV="$dir/env"
log "cluster up ($KER_TEST_ENV); running $total e2e test(s)"
rc=0
suite_ctest "$build_dir" e2e "$@" || rc=$?
if ((rc == 0 && $# == 0)); then
  suite_rbac_check "$build_dir" "$here/../deploy/node-agent.yaml" \
    kube-system:extended-resource-node-agent "$here/e2e/rbac-not-requested.txt" || rc=$?
fi
# Last: it takes deploy/ away. Its failure fails the run (and collect() keeps what it left).
if ((rc == 0)) && { (($# == 0)) || [[ "${KER_E2E_HELM:-0}" == 1 ]]; }; then
  helm_start=$SECONDS
  log "Helm phase: test/helm/install-test.sh (install, sample workload, upgrade)"
  "$here/helm/install-test.sh" "$dir" || rc=$?
  log "Helm phase: $( ((rc == 0)) && echo ok || echo FAILED) in $((SECONDS - helm_start)) s"
fi
exit "$rc"

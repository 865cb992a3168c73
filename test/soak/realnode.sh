#!/usr/bin/env bash
# The real-node chaos soak: test/e2e/soak_test.cpp (pods with claims churning over two real
# nodes while faults are injected in turn; every container records what it was given and the
# checker proves it) for a fixed time, on a cluster of its own (test/e2e/cluster-up.sh: two
# nodes, deploy/ as pods), always stopped afterwards. `make test` runs one round of the faults
# as part of the end-to-end suite; this runs it for longer and writes the report.
#
#   test/soak/realnode.sh [--build-dir DIR] [--seconds N] [--report FILE]
#
# Defaults: build/, 1800 seconds, test/soak/realnode-report.md. Root. The cluster's folder is
# kept after a failure or with SOAK_KEEP=1. Exit status: the soak's (0: nothing wrong).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
launcher=$root/test/controlplane/launch.sh
log() { printf '[soak/realnode.sh] %s\n' "$*" >&2; }

build_dir=$root/build seconds=1800 report=$root/test/soak/realnode-report.md
while (($#)); do
  case "$1" in
  --build-dir) build_dir=${2:?--build-dir needs a value} && shift ;;
  --seconds) seconds=${2:?--seconds needs a value} && shift ;;
  --report) report=${2:?--report needs a value} && shift ;;
  -h | --help)
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
    exit 0
    ;;
  *)
    log "unknown argument '$1' (try --help)"
    exit 2
    ;;
  esac
  shift
done
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || {
  log "--seconds must be a positive integer"
  exit 2
}
build_dir=$(cd "$build_dir" && pwd)
[[ -x "$build_dir/test/e2e_tests" ]] || {
  log "no $build_dir/test/e2e_tests: build first (make build)"
  exit 2
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/ker-rsoak.XXXXXX")
on_exit() {
  local rc=$?
  trap - EXIT INT TERM
  if ! "$launcher" stop "$dir" >/dev/null 2>&1; then
    log "stopping the cluster in $dir failed"
    ((rc != 0)) || rc=1
  elif ! "$root/test/controlplane/node/teardown-check.sh" "$dir" 10; then
    ((rc != 0)) || rc=1
  fi
  if ((rc != 0)) || [[ "${SOAK_KEEP:-0}" == 1 ]]; then
    log "cluster folder kept: $dir"
  else
    rm -rf "$dir"
  fi
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$root/test/e2e/cluster-up.sh" "$dir" --nodes 2 --extra-node-taint ker.test/extra-node=true:NoSchedule
log "running the soak for ${seconds}s; report: $report"
# Bounded: the churn, then at most 120 s per fault's recovery and the final release.
KER_TEST_ENV=$dir/env KER_BUILD_DIR=$build_dir KER_SOAK_SECONDS=$seconds KER_SOAK_REPORT=$report \
  timeout --kill-after=30 $((seconds + 1800)) "$build_dir/test/e2e_tests" \
  --gtest_filter='RealNodeSoakTest.*' --gtest_brief=1

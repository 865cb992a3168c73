#!/usr/bin/env bash
# Runs the integration tests (ctest label "integration") of BUILD_DIR against a fresh control
# plane started by test/controlplane/launch.sh, and always stops that control plane.
#
#   test/run-integration.sh BUILD_DIR [extra ctest arguments...]
#
# The tests find the control plane through KER_TEST_ENV (a file of KEY=VALUE lines, see
# launch.sh). KEEP_CONTROLPLANE_DIR=1 keeps the folder (logs, certificates) after a success;
# after a failure it is always kept. Exit status: ctest's.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
launcher="$here/controlplane/launch.sh"

log() { printf '[run-integration] %s\n' "$*" >&2; }

if (($# < 1)); then
  sed -n '2,10s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
fi
build_dir=$1
shift
if [[ ! -d "$build_dir" ]]; then
  log "no build folder '$build_dir' (configure and build first)"
  exit 2
fi
build_dir=$(cd "$build_dir" && pwd)

total=$(cd "$build_dir" && ctest -N -L integration | awk '/^Total Tests:/ { print $3 }')
if [[ -z "$total" || "$total" == 0 ]]; then
  log "no integration tests are registered in $build_dir (ctest -L integration): nothing to run"
  exit 0
fi

bin_dir=$("$here/controlplane/build-binaries.sh" | tail -n1)
dir=$(mktemp -d "${TMPDIR:-/tmp}/ker-integration.XXXXXX")
child=''

# shellcheck disable=SC2317 # invoked by trap
on_exit() {
  local rc=$?
  trap - EXIT INT TERM
  if ! "$launcher" stop "$dir"; then
    log "stopping the control plane in $dir failed"
    ((rc != 0)) || rc=1
  fi
  if ((rc != 0)) || [[ "${KEEP_CONTROLPLANE_DIR:-0}" == 1 ]]; then
    log "control-plane folder kept for inspection: $dir"
  else
    rm -rf "$dir"
  fi
  exit "$rc"
}

# ctest runs in a session of its own, so a signal here can take down it and its tests as a
# group (and bash can handle the signal while waiting, instead of after ctest ends).
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

"$launcher" start "$dir" --bin-dir "$bin_dir" >/dev/null
export KER_TEST_ENV="$dir/env"
log "control plane up ($KER_TEST_ENV); running $total integration test(s)"

cd "$build_dir"
setsid ctest -L integration --output-on-failure "$@" &
child=$!
rc=0
wait "$child" || rc=$?
child=''
exit "$rc"

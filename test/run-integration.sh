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
SUITE_DIR=$dir SUITE_KEEP=${KEEP_CONTROLPLANE_DIR:-0}
# shellcheck source=lib/suite.sh
source "$here/lib/suite.sh"
suite_traps

"$launcher" start "$dir" --bin-dir "$bin_dir" >/dev/null
export KER_TEST_ENV="$dir/env"
log "control plane up ($KER_TEST_ENV); running $total integration test(s)"

suite_ctest "$build_dir" integration "$@"

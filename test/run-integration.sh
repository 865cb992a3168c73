#!/usr/bin/env bash
# Runs the integration tests (ctest label "integration") of BUILD_DIR against a fresh control
# plane started by test/controlplane/launch.sh, and always stops that control plane.
#
#   test/run-integration.sh BUILD_DIR [extra ctest arguments...]
#
# The tests find the control plane through KER_TEST_ENV (a file of KEY=VALUE lines, see
# launch.sh). KEEP_CONTROLPLANE_DIR=1 keeps the folder (logs, certificates) after a success;
# after a failure it is always kept. Exit status: ctest's.
#
# A full run (no extra arguments) then checks, from the API server's audit log, that the
# extender and the controller used every permission deploy/ grants them and asked for nothing
# more (tools/ker-rbac-usage; test/integration/rbac-not-requested.txt lists what is granted
# for other reasons).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
launcher="$here/controlplane/launch.sh"

log() { printf '[run-integration] %s\n' "$*" >&2; }

if (($# < 1)); then
  sed -n '2,10s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
fi
# shellcheck source=lib/suite.sh
source "$here/lib/suite.sh"
suite_tests integration "$1"
shift
build_dir=$SUITE_BUILD total=$SUITE_TOTAL

bin_dir=$("$here/controlplane/build-binaries.sh" | tail -n1)
dir=$(mktemp -d "${TMPDIR:-/tmp}/ker-integration.XXXXXX")
SUITE_DIR=$dir SUITE_KEEP=${KEEP_CONTROLPLANE_DIR:-0}
suite_traps

"$launcher" start "$dir" --bin-dir "$bin_dir" --audit-components >/dev/null
export KER_TEST_ENV="$dir/env"
log "control plane up ($KER_TEST_ENV); running $total integration test(s)"

rc=0
suite_ctest "$build_dir" integration "$@" || rc=$?
if ((rc == 0 && $# == 0)); then
  suite_rbac_check "$build_dir" "$here/../deploy/extender.yaml,$here/../deploy/deployment.yaml" \
    kube-system:extended-resource-scheduler-extender,kube-system:extended-resource-controller \
    "$here/integration/rbac-not-requested.txt" || rc=$?
fi
exit "$rc"

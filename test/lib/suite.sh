# shellcheck shell=bash
# Shared by test/run-integration.sh and test/run-e2e.sh: runs one ctest label of a build
# folder against a cluster that test/controlplane/launch.sh started in a folder, and always
# stops that cluster. The caller defines log, calls suite_tests, sets the variables below and
# calls suite_traps before starting the cluster, then suite_ctest.
#   SUITE_DIR        the launcher's folder
#   SUITE_KEEP       1 keeps the folder after a success (it is always kept after a failure)
#   SUITE_COLLECT    optional: a function run after a failure, before the cluster stops
#   SUITE_AFTER_STOP optional: a function run once the cluster stopped; its failure fails the run
SUITE_LAUNCHER="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/controlplane/launch.sh"
suite_child=''

# suite_tests LABEL BUILD_DIR: sets SUITE_BUILD (absolute) and SUITE_TOTAL, the number of tests
# with LABEL; exits 2 without a build folder and 0 when no such test is registered.
suite_tests() {
  if [[ ! -d "$2" ]]; then
    log "no build folder '$2' (configure and build first)"
    exit 2
  fi
  SUITE_BUILD=$(cd "$2" && pwd)
  SUITE_TOTAL=$(cd "$SUITE_BUILD" && ctest -N -L "$1" | awk '/^Total Tests:/ { print $3 }')
  if [[ -z "$SUITE_TOTAL" || "$SUITE_TOTAL" == 0 ]]; then
    log "no $1 tests are registered in $SUITE_BUILD (ctest -L $1): nothing to run"
    exit 0
  fi
}

# shellcheck disable=SC2317 # invoked by trap
suite_on_exit() {
  local rc=$?
  trap - EXIT INT TERM
  ((rc == 0)) || [[ -z "${SUITE_COLLECT:-}" ]] || "$SUITE_COLLECT" || true
  if ! "$SUITE_LAUNCHER" stop "$SUITE_DIR"; then
    log "stopping the cluster in $SUITE_DIR failed"
    ((rc != 0)) || rc=1
  elif [[ -n "${SUITE_AFTER_STOP:-}" ]] && ! "$SUITE_AFTER_STOP"; then
    ((rc != 0)) || rc=1
  fi
  if ((rc != 0)) || [[ "${SUITE_KEEP:-0}" == 1 ]]; then
    log "cluster folder kept for inspection: $SUITE_DIR"
  else
    rm -rf "$SUITE_DIR"
  fi
  exit "$rc"
}

# ctest runs in a session of its own, so a signal here can take down it and its tests as a
# group (and bash can handle the signal while waiting, instead of after ctest ends).
# shellcheck disable=SC2317 # invoked by trap
suite_on_signal() {
  local i
  log "interrupted; stopping the tests"
  if [[ -n "$suite_child" ]] && kill -0 "$suite_child" 2>/dev/null; then
    kill -TERM -- "-$suite_child" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      kill -0 "$suite_child" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$suite_child" 2>/dev/null || true
  fi
  exit "$1"
}

suite_traps() {
  trap suite_on_exit EXIT
  trap 'suite_on_signal 130' INT
  trap 'suite_on_signal 143' TERM
}

# suite_ctest BUILD_DIR LABEL [ctest arguments...]: returns ctest's status.
suite_ctest() {
  local rc=0
  cd "$1"
  setsid ctest -L "$2" --output-on-failure "${@:3}" &
  suite_child=$!
  wait "$suite_child" || rc=$?
  suite_child=''
  return "$rc"
}

# suite_rbac_check BUILD_DIR MANIFESTS SERVICEACCOUNTS EXEMPTIONS: after a full run, whether the
# ServiceAccounts (NAMESPACE:NAME,...) used every grant of the manifests (comma-separated) and
# RBAC refused them nothing, from the audit log of a cluster started with --audit-components.
suite_rbac_check() {
  log "checking the requests of $3 against the RBAC of $2 (audit log: $SUITE_DIR/audit.log)"
  "$1/tools/ker-rbac-usage" --audit-logs "$SUITE_DIR/audit.log" --manifests "$2" \
    --service-accounts "$3" --exemptions "$4"
}

#!/usr/bin/env bash
# Checks that a node network left by a run killed without a stop (every process SIGKILLed,
# the bridge and its routes left, the lock free) is undone by that run's own stop, or else
# reclaimed by the next `start --node-network`, instead of making every later run refuse.
# Root only; about 25 s.
#
#   test/controlplane/node/reclaim-check.sh
set -euo pipefail

CHECK=reclaim-check
# shellcheck source=test/controlplane/node/network-check-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/network-check-lib.sh"

killed=$(mktemp -d /tmp/ker-reclaim-killed.XXXXXX)
next=$(mktemp -d /tmp/ker-reclaim-next.XXXXXX)
# Processes whose command line names a file of the folder: what launch.sh started for it.
procs_of() {
  local p
  for p in /proc/[0-9]*; do
    [[ "$(tr '\0' ' ' 2>/dev/null <"$p/cmdline")" == *"$1/"* ]] && echo "${p#/proc/}"
  done
  return 0
}
cleanup() {
  local rc=$?
  trap - EXIT
  "$launcher" stop "$next" 2>/dev/null || rc=1
  "$launcher" stop "$killed" 2>/dev/null || rc=1
  if ((rc == 0)); then rm -rf "$killed" "$next"; else step "folders kept: $killed $next"; fi
  exit "$rc"
}
trap cleanup EXIT

# Starts a node network in DIR and SIGKILLs every process of it, as a cancelled job would.
start_and_kill() {
  local pids i
  "$launcher" start "$1" --bin-dir "$bin_dir" --node-network >/dev/null 2>"$1/start.log" ||
    fail "start of $1: $(tail -3 "$1/start.log")"
  pids=$(procs_of "$1")
  [[ -n "$pids" ]] || fail "$1 has no processes"
  # shellcheck disable=SC2086 # one pid per word
  kill -9 $pids
  for ((i = 0; i < 50; i++)); do [[ -z "$(procs_of "$1")" ]] && break || sleep 0.1; done
  [[ -z "$(procs_of "$1")" ]] || fail "processes of $1 survived SIGKILL"
  [[ "$(cat /sys/class/net/ker0/ifalias 2>/dev/null)" == "$1" ]] || fail "the killed run left no bridge naming it"
}

start_and_kill "$killed"
"$launcher" stop "$killed" 2>/dev/null || fail "stop of the killed run"
! ip link show ker0 >/dev/null 2>&1 || fail "the killed run's own stop left ker0"
step "a killed run's own stop removes its bridge"

start_and_kill "$killed"
step "killed again; ker0 left"
"$launcher" start "$next" --bin-dir "$bin_dir" --node-network >/dev/null 2>"$next/start.log" ||
  fail "the next start refused: $(grep -m1 error "$next/start.log" || tail -1 "$next/start.log")"
grep -q "reclaiming the node network of $killed" "$next/start.log" || fail "the next start did not say it reclaimed $killed"
[[ "$(head -n1 /run/ker-node.lock)" == "$next pid "* ]] || fail "the next run does not hold the lock"
step "the next start reclaimed the killed run's network and came up"

"$launcher" stop "$next" 2>/dev/null || fail "stop of the next run"
! ip link show ker0 >/dev/null 2>&1 || fail "ker0 left after the next run's stop"
[[ -z "$(procs_of "$next")$(procs_of "$killed")" ]] || fail "processes left after stop"
step "ok: nothing left after the next run's stop"

# shellcheck shell=bash
# What the node network checks (reclaim-check.sh, bridge-check.sh) share. Sourced with CHECK set
# to the name their log lines carry: defines here (test/controlplane), launcher, step and fail,
# refuses to run without root or while a bridge exists (another run is up), and sets bin_dir.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
launcher="$here/launch.sh"
step() { printf '[%s %3ss] %s\n' "$CHECK" "$SECONDS" "$*" >&2; }
fail() {
  step "FAILED: $*"
  exit 1
}
[[ "$(id -u)" == 0 ]] || fail "needs root (bridge)"
! ip link show ker0 >/dev/null 2>&1 || fail "ker0 exists before the check: another run is up"
bin_dir=$("$here/build-binaries.sh" | tail -n1)

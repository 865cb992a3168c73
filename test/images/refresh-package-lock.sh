#!/usr/bin/env bash
# Writes tools/image/debian-packages.lock, the exact Debian versions the Dockerfile installs,
# from what apt-cache policy reports on this machine (Debian bookworm, the same architecture as
# the image, apt pointed at the mirror the image build uses):
#
#   refresh-package-lock.sh [--check] [--no-update] [--output FILE]
#
# For each `install-packages.sh STAGE LOCK PACKAGE...` line of the Dockerfile: the PACKAGEs, the
# packages of the stage's base image, and every package apt installs with them
# (--no-install-recommends, resolved as if on an empty system, then dropping what apt would not
# install on the base, e.g. the first of two alternatives when the base has the second), each at
# the candidate version of bookworm, bookworm-updates or bookworm-security. Run it after editing a package list in the Dockerfile,
# when a build fails because the mirror no longer has a locked version, and to take Debian's
# security updates (cpp-httplib's among them); then rebuild (test/images/build-images.sh).
#
#   --check        write nothing; exit 1 (showing the differences) when the lock is not what a
#                  refresh would write
#   --no-update    use apt's current package lists (default: apt-get update first, as root)
#   --output FILE  write FILE instead of tools/image/debian-packages.lock
#
# The base images (read from podman: their packages, and which alternatives apt picks on them)
# are the ones build-images.sh uses: debian:bookworm / debian:bookworm-slim when podman has
# them, else localhost/ker-debian:bookworm. Without podman or those images (a warning says so)
# the base's packages are not locked and the closure is kept unfiltered.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$here/../.." && pwd)
DOCKERFILE=$REPO_ROOT/Dockerfile
LOCK=$REPO_ROOT/tools/image/debian-packages.lock
SUITE=bookworm

log() { printf '[lock] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; }

check=false update=true output=$LOCK
while (($#)); do
  case "$1" in
  -h | --help)
    usage
    exit 0
    ;;
  --check) check=true ;;
  --no-update) update=false ;;
  --output)
    (($# >= 2)) || die "--output needs a file"
    output=$2
    shift
    ;;
  --output=*) output=${1#*=} ;;
  *) die "unknown argument '$1' (try --help)" ;;
  esac
  shift
done

codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[[ "$codename" == "$SUITE" ]] ||
  die "this is '${codename:-unknown}', not Debian $SUITE: run it on $SUITE (or in localhost/ker-debian:$SUITE)"
command -v apt-get >/dev/null || die "no apt-get here"
arch=$(dpkg --print-architecture)

if $update; then
  [[ $(id -u) -eq 0 ]] || die "apt-get update needs root (or pass --no-update)"
  log "apt-get update"
  apt-get update -qq >&2 || die "apt-get update failed"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/empty-status"

# "STAGE PACKAGE..." for each RUN of install-packages.sh in the Dockerfile (continuations joined).
mapfile -t requests < <(sed -e ':a' -e '/\\$/{N;s/\\\n/ /;ba}' "$DOCKERFILE" |
  grep -E '^[[:space:]]*RUN[[:space:]]' | grep -o 'install-packages\.sh[[:space:]][^&;|]*' |
  awk '{ line = $2; for (i = 4; i <= NF; i++) line = line " " $i; print line }')
((${#requests[@]})) || die "no 'install-packages.sh STAGE LOCK PACKAGE...' line in $DOCKERFILE"

# The dpkg status of a stage's base image, or nothing.
base_status() { # stage
  local ref c
  if [[ "$1" == runtime ]]; then ref=docker.io/library/debian:$SUITE-slim; else ref=docker.io/library/debian:$SUITE; fi
  command -v podman >/dev/null && [[ $(id -u) -eq 0 ]] || return 1
  podman image exists "$ref" || ref=localhost/ker-debian:$SUITE
  podman image exists "$ref" || return 1
  c=$(podman create -q "$ref" true) || return 1
  podman cp "$c:/var/lib/dpkg/status" "$tmp/status-$1" >/dev/null 2>&1 || {
    podman rm -f "$c" >/dev/null
    return 1
  }
  podman rm -f "$c" >/dev/null
  log "$1: alternatives as apt picks them on $ref"
}
# "NAME VERSION" of the packages apt-get would install (simulated) with the given dpkg status.
simulate() { # status-file package...
  local status=$1
  shift
  apt-get install -s -qq --no-install-recommends -o Dir::State::status="$status" "$@" 2>"$tmp/sim.err" |
    awk '/^Inst / { v = $3; if (v ~ /^\[/) v = $4; sub(/^\(/, "", v); print $2, v }' ||
    true
  if grep -q '^E:' "$tmp/sim.err"; then
    cat "$tmp/sim.err" >&2
    die "apt cannot install: $*"
  fi
}

{
  cat <<EOF
# Exact Debian $SUITE versions of every package of the Dockerfile's stages: the ones its
# \`install-packages.sh STAGE LOCK PACKAGE...\` lines name, the base image's, and the dependencies
# apt pulls in with them. tools/image/install-packages.sh installs each as NAME=VERSION and fails, naming the
# package, when the mirror no longer has that version. Written by
# test/images/refresh-package-lock.sh from apt-cache policy ($SUITE, $SUITE-updates,
# $SUITE-security): edit the Dockerfile's lists, not this file, then run it.
# architecture: $arch
# STAGE    PACKAGE                          VERSION
EOF
  for req in "${requests[@]}"; do
    read -r -a words <<<"$req"
    stage=${words[0]}
    pkgs=("${words[@]:1}")
    ((${#pkgs[@]})) || die "the Dockerfile's install-packages.sh line for '$stage' names no package"
    if base_status "$stage"; then
      # The base's own packages are locked too, so the stage brings them to the locked versions
      # (a debootstrapped base has bookworm's, without the -security updates).
      awk '/^Package:/ { p = $2 } /^Status: .* installed$/ { print p }' "$tmp/status-$stage" >"$tmp/keep"
      mapfile -t base_pkgs <"$tmp/keep"
      simulate "$tmp/empty-status" "${pkgs[@]}" "${base_pkgs[@]}" | sort -u >"$tmp/closure"
      # Keep what the base has or what apt installs on it.
      simulate "$tmp/status-$stage" "${pkgs[@]}" | awk '{ print $1 }' >>"$tmp/keep"
      dropped=$(awk 'NR == FNR { keep[$1] = 1; next } !($1 in keep) { printf " %s", $1 }' "$tmp/keep" "$tmp/closure")
      [[ -z "$dropped" ]] || log "$stage: not installed on its base, dropped:$dropped"
      awk 'NR == FNR { keep[$1] = 1; next } $1 in keep' "$tmp/keep" "$tmp/closure" >"$tmp/closure.kept"
      mv "$tmp/closure.kept" "$tmp/closure"
    else
      log "warning: $stage: no base image in podman: its packages are not locked, and apt's whole closure is kept"
      simulate "$tmp/empty-status" "${pkgs[@]}" | sort -u >"$tmp/closure"
    fi
    # Each version must be apt-cache policy's candidate, and come from a $SUITE suite.
    # shellcheck disable=SC2046 # one word per package name
    apt-cache policy $(awk '{ print $1 }' "$tmp/closure") >"$tmp/policy"
    awk -v suite="$SUITE" -v stage="$stage" '
      NR == FNR { want[$1] = $2; next }
      /^[^ ].*:$/ { pkg = substr($0, 1, length($0) - 1); inver = 0; next }
      /^  Candidate:/ { cand[pkg] = $2; next }
      /^ (\*\*\*|   ) [^ ]+ -?[0-9]+$/ { inver = ($(NF - 1) == want[pkg]); next }
      inver && $0 ~ (" " suite "(-updates|-security)?/") { ok[pkg] = 1 }
      END {
        bad = 0
        for (p in want) {
          if (cand[p] != want[p]) { printf "[lock] error: %s: apt picks %s, apt-cache policy says %s\n", p, want[p], cand[p] > "/dev/stderr"; bad = 1 }
          else if (!(p in ok)) { printf "[lock] error: %s %s is not from %s, %s-updates or %s-security (apt-cache policy %s)\n", p, want[p], suite, suite, suite, p > "/dev/stderr"; bad = 1 }
        }
        exit bad
      }' "$tmp/closure" "$tmp/policy" || die "$stage: the versions apt picks are not all $SUITE's"
    awk -v s="$stage" '{ printf "%-8s %-32s %s\n", s, $1, $2 }' "$tmp/closure"
    log "$stage: ${#pkgs[@]} named, $(wc -l <"$tmp/closure") locked (with the base's packages and all dependencies)"
  done
} >"$tmp/lock"

if $check; then
  if diff -u <(grep -v '^#' "$output") <(grep -v '^#' "$tmp/lock") >&2; then
    log "$output is up to date"
    exit 0
  fi
  die "$output differs from what a refresh writes (above): run $0"
fi
if [[ -f "$output" ]]; then
  diff <(grep -v '^#' "$output") <(grep -v '^#' "$tmp/lock") | sed -n 's/^\([<>]\)/[lock] \1/p' >&2 || true
fi
cp "$tmp/lock" "$output"
log "wrote $output"

#!/bin/sh
# Installs one Dockerfile stage's Debian packages at exactly the versions of the lock:
#
#   install-packages.sh STAGE LOCK PACKAGE...
#
# STAGE is `build` or `runtime`; LOCK is tools/image/debian-packages.lock; the PACKAGEs are the
# ones the stage asks for (each must be in the lock). Every STAGE line of the lock (those, the
# base image's packages and the dependencies apt pulls in) is installed as NAME=VERSION, from the
# mirror apt is configured with. Fails, naming the package and how to refresh the lock, when a
# locked version is no longer in the mirror, when the base image has a newer version than the
# lock, when apt would add a package the lock does not list, or when anything ends up at
# another version. Runs as root in the image (POSIX sh: debian:bookworm-slim has no bash extras).
set -eu

me=install-packages.sh
refresh='test/images/refresh-package-lock.sh (then rebuild)'
fail() {
  printf '%s: error: %s\n' "$me" "$*" >&2
  exit 1
}

[ $# -ge 3 ] || fail "usage: $me STAGE LOCK PACKAGE..."
stage=$1 lock=$2
shift 2
[ -f "$lock" ] || fail "no lock file $lock"
shown=tools/image/${lock##*/} # the lock's name in the repository, for the messages

arch=$(dpkg --print-architecture)
lock_arch=$(sed -n 's/^# architecture: *//p' "$lock" | head -n 1)
[ "$arch" = "$lock_arch" ] ||
  fail "$shown is for '$lock_arch', this image is $arch: run $refresh on an $arch machine"

# "NAME VERSION" of the stage's lines.
locked=$(awk -v s="$stage" '$1 == s { print $2, $3 }' "$lock")
[ -n "$locked" ] || fail "$shown has no '$stage' lines: run $refresh"
for p in "$@"; do
  printf '%s\n' "$locked" | awk -v p="$p" '$1 == p { f = 1 } END { exit !f }' ||
    fail "$p (stage $stage) is not in $shown: run $refresh"
done

apt-get update -qq

# Every locked version must be one apt knows (the mirror's, or the one already installed).
names=$(printf '%s\n' "$locked" | awk '{ print $1 }')
# shellcheck disable=SC2086 # one word per package name
policy=$(apt-cache policy $names 2>/dev/null)
missing=$(printf '%s\n' "$policy" | awk -v locked="$locked" '
  BEGIN { n = split(locked, l, "\n"); for (i = 1; i <= n; i++) { split(l[i], f, " "); want[f[1]] = f[2] } }
  /^[^ ].*:$/ { pkg = substr($0, 1, length($0) - 1); next }
  /^  Candidate:/ { cand[pkg] = $2; next }
  /^ (\*\*\*|   ) [^ ]+ -?[0-9]+$/ { if ($(NF - 1) == want[pkg]) ok[pkg] = 1 }
  END {
    for (p in want) if (!(p in ok)) print p, want[p], (p in cand ? cand[p] : "(none)")
  }' | sort)
if [ -n "$missing" ]; then
  printf '%s\n' "$missing" | while read -r p v c; do
    printf '%s: error: %s pins %s %s (stage %s), which the Debian mirror does not have (any more; apt-cache policy %s: candidate %s)\n' \
      "$me" "$shown" "$p" "$v" "$stage" "$p" "$c" >&2
  done
  fail "the lock is out of date: refresh it with $refresh"
fi

# A base image newer than the lock would need a downgrade: refresh instead.
installed() { dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\n' | awk '$1 == "ii" { print $2, $3 }'; }
before=$(installed)
printf '%s\n' "$locked" | while read -r p v; do
  have=$(printf '%s\n' "$before" | awk -v p="$p" '$1 == p { print $2 }')
  if [ -n "$have" ] && dpkg --compare-versions "$have" gt "$v"; then
    fail "the base image has $p $have, newer than the locked $v (stage $stage): refresh the lock with $refresh"
  fi
done

pins=$(printf '%s\n' "$locked" | awk '{ print $1 "=" $2 }')
# shellcheck disable=SC2086 # one word per NAME=VERSION
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pins

after=$(installed)
# Nothing the lock does not list, and everything at its locked version.
added=$(printf '%s\n' "$after" | awk -v before="$before" -v locked="$locked" '
  BEGIN {
    n = split(before, b, "\n"); for (i = 1; i <= n; i++) { split(b[i], f, " "); had[f[1]] = 1 }
    n = split(locked, l, "\n"); for (i = 1; i <= n; i++) { split(l[i], f, " "); lock[f[1]] = 1 }
  }
  !($1 in had) && !($1 in lock) { print $1, $2 }')
[ -z "$added" ] ||
  fail "apt installed packages the lock does not list ($(echo $added)): refresh the lock with $refresh"
wrong=$(printf '%s\n' "$locked" | awk -v after="$after" '
  BEGIN { n = split(after, a, "\n"); for (i = 1; i <= n; i++) { split(a[i], f, " "); have[f[1]] = f[2] } }
  have[$1] != $2 { print $1 " is " (($1 in have) ? have[$1] : "not installed") ", locked " $2 }')
[ -z "$wrong" ] || fail "after apt-get install: $(echo $wrong)"
printf '%s: %s stage: %d packages at their locked versions\n' "$me" "$stage" "$(printf '%s\n' "$locked" | wc -l)" >&2

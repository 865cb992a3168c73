# shellcheck shell=bash
# One way to build a tool once into a shared cache (the control-plane binaries, helm,
# promcheck): sourced by test/controlplane/common.sh. The caller defines log and die.

# cached_build WHAT DIR FINGERPRINT WAIT BUILD_FN [CURRENT_FN]
#   Makes DIR hold a build of WHAT whose BUILDINFO carries `fingerprint=FINGERPRINT` (and for
#   which CURRENT_FN DIR, when given, succeeds: say, every binary is there). Nothing is done
#   when it already does. Otherwise, under the lock DIR's-parent/.NAME.lock (NAME being DIR's
#   own name; waiting up to WAIT seconds while another process builds WHAT), it runs
#   `BUILD_FN OUT` to fill a fresh folder OUT beside DIR, adds the Go version, time, duration and
#   fingerprint to OUT/BUILDINFO (BUILD_FN may write lines of its own there first), and renames
#   OUT into place, so that DIR is never a half-written build. Folders a killed build left
#   beside DIR are removed first. Returns BUILD_FN's failure.
cached_build() {
  local what=$1 dir=$2 fingerprint=$3 wait=$4 build=$5 current=${6:-}
  local root name fd start
  root=$(dirname "$dir")
  name=$(basename "$dir")
  cached_build_current "$dir" "$fingerprint" "$current" && return 0
  mkdir -p "$root"
  exec {fd}>"$root/.$name.lock"
  if ! flock -n "$fd"; then
    log "waiting for another build of $what (up to $((wait / 60)) min)"
    flock -w "$wait" "$fd" || die "timed out waiting for $root/.$name.lock"
  fi
  # The other process may have built it meanwhile.
  if cached_build_current "$dir" "$fingerprint" "$current"; then
    exec {fd}>&-
    return 0
  fi
  # Holding the lock, these are leftovers of a killed build of this folder.
  rm -rf "$root/.$name.build."* "$root/.$name.old."*
  # Globals, not locals: the EXIT trap may run after this function has returned.
  cached_build_tmp=$(mktemp -d "$root/.$name.build.XXXXXX")
  cached_build_old=''
  chmod 755 "$cached_build_tmp"
  trap 'rm -rf "$cached_build_tmp" ${cached_build_old:+"$cached_build_old"}' EXIT
  start=$SECONDS
  "$build" "$cached_build_tmp" || return
  {
    printf 'go=%s\nbuilt=%s\nbuild_seconds=%s\n' "$(go env GOVERSION)" \
      "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$((SECONDS - start))"
    printf 'fingerprint=%s\n' "$fingerprint"
  } >>"$cached_build_tmp/BUILDINFO"
  if [[ -e "$dir" ]]; then
    cached_build_old=$(mktemp -d "$root/.$name.old.XXXXXX")
    mv "$dir" "$cached_build_old/"
  fi
  mv "$cached_build_tmp" "$dir"
  exec {fd}>&-
  log "built $what in $((SECONDS - start)) s: $dir"
}

cached_build_current() { # DIR FINGERPRINT CURRENT_FN
  grep -qx "fingerprint=$2" "$1/BUILDINFO" 2>/dev/null && { [[ -z "$3" ]] || "$3" "$1"; }
}

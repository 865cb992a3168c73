#!/usr/bin/env bash
# Builds (once) etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kubectl, and the
# node's kubelet, kube-proxy, containerd, containerd-shim-runc-v2 and ctr at the versions pinned
# in versions.env and prints the folder holding them as the last line of stdout.
#
#   build-binaries.sh              build if needed, print the bin dir
#   build-binaries.sh --print-dir  only print where the binaries are (or would be)
#   build-binaries.sh --helm       only helm at HELM_VERSION: build if needed, print its dir
#
# Cache: $CONTROLPLANE_CACHE_DIR (default <repo>/.cache/controlplane)/<k8s>-<etcd>/, and
# helm-<version>/ beside it.
# If KUBEBUILDER_ASSETS names a folder holding etcd, kube-apiserver and kube-scheduler,
# that folder is used as is (it then lacks the node binaries: launch.sh start-node refuses it).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"

print_only=false
helm_only=false
case "${1:-}" in
'') ;;
--print-dir) print_only=true ;;
--helm) helm_only=true ;;
-h | --help)
  sed -n '2,13s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
  exit 0
  ;;
*) die "unknown argument '$1' (try --help)" ;;
esac

# Whether a build is needed: no at once when `current` (a command) finds it in the cache; else
# takes the lock file (held until the script exits; waiting up to `wait` seconds while another
# process builds `what`) and asks `current` again, since that other build may have made it.
needs_build() {
  local current=$1 lock=$2 wait=$3 what=$4 fd
  if "$current"; then
    return 1
  fi
  mkdir -p "$(dirname "$lock")"
  exec {fd}>"$lock"
  if ! flock -n "$fd"; then
    log "waiting for another build of $what (up to $((wait / 60)) min)"
    flock -w "$wait" "$fd" || die "timed out waiting for $lock"
  fi
  ! "$current"
}

# helm has a cache folder, lock and fingerprint of its own: pinning another helm never rebuilds
# Kubernetes, a helm build never waits behind an hour-long control-plane build, and the reverse.
build_helm() {
  local cache_root dir module fingerprint start got
  # Global, not local: the EXIT trap runs after this function has returned.
  helm_tmp='' helm_old=''
  cache_root=${CONTROLPLANE_CACHE_DIR:-$REPO_ROOT/.cache/controlplane}
  dir="$cache_root/helm-$HELM_VERSION"
  module="helm.sh/helm/${HELM_VERSION%%.*}"
  go_env
  # Bump when the helm build changes what it produces (flags, stamps) so caches get rebuilt.
  local recipe=1
  fingerprint=$(printf '%s\n' "recipe=$recipe" "$HELM_VERSION" "$(go env GOVERSION GOOS GOARCH)" | sha256sum | cut -d' ' -f1)
  helm_current() { [[ -x "$dir/helm" ]] && grep -qx "fingerprint=$fingerprint" "$dir/BUILDINFO" 2>/dev/null; }
  if ! needs_build helm_current "$cache_root/.helm.lock" 1800 helm; then
    printf '%s\n' "$dir"
    return 0
  fi
  # Holding the helm lock, its other build folders are leftovers of a killed build. Their
  # prefixes differ from the control plane's, whose lock this does not hold.
  rm -rf "$cache_root"/.helm-build.* "$cache_root"/.helm-old.*
  helm_tmp=$(mktemp -d "$cache_root/.helm-build.XXXXXX")
  chmod 755 "$helm_tmp"
  trap 'rm -rf "$helm_tmp" ${helm_old:+"$helm_old"}' EXIT
  trap 'log "failed (line $LINENO: $BASH_COMMAND)"' ERR
  trap 'exit 130' INT
  trap 'exit 143' TERM
  start=$SECONDS
  log "building helm ${HELM_VERSION} (about 3 min with empty Go caches)"
  # `go install module@version` builds against helm's own go.mod and go.sum, as its release
  # does; the stamps are those of helm's Makefile (the module zip carries no commit id).
  GOBIN="$helm_tmp" go install -trimpath \
    -ldflags="-s -w -X=$module/internal/version.version=$HELM_VERSION -X=$module/internal/version.gitCommit= -X=$module/internal/version.gitTreeState=clean" \
    "$module/cmd/helm@$HELM_VERSION"
  got=$("$helm_tmp/helm" version --template '{{.Version}}')
  [[ "$got" == "$HELM_VERSION" ]] || die "helm version says '$got', expected '$HELM_VERSION'"
  {
    printf 'HELM_VERSION=%s\n' "$HELM_VERSION"
    printf 'go=%s\nbuilt=%s\nbuild_seconds=%s\n' "$(go env GOVERSION)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$((SECONDS - start))"
    printf 'fingerprint=%s\n' "$fingerprint"
  } >"$helm_tmp/BUILDINFO"
  if [[ -e "$dir" ]]; then
    helm_old=$(mktemp -d "$cache_root/.helm-old.XXXXXX")
    mv "$dir" "$helm_old/"
  fi
  mv "$helm_tmp" "$dir"
  log "built helm in $((SECONDS - start)) s: $dir"
  printf '%s\n' "$dir"
}

if $helm_only; then
  load_versions
  build_helm
  exit 0
fi

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
  missing=()
  for b in etcd kube-apiserver kube-scheduler; do
    [[ -x "$KUBEBUILDER_ASSETS/$b" ]] || missing+=("$b")
  done
  if ((${#missing[@]} == 0)); then
    log "using KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS (not the pinned build)"
    cd "$KUBEBUILDER_ASSETS" && pwd
    exit 0
  fi
  log "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS lacks ${missing[*]}; using the pinned build"
fi

load_versions
cache_root=${CONTROLPLANE_CACHE_DIR:-$REPO_ROOT/.cache/controlplane}
bin_dir="$cache_root/${KUBERNETES_VERSION}-${ETCD_VERSION}"
if $print_only; then
  printf '%s\n' "$bin_dir"
  exit 0
fi

check_pins
go_env

# Bump when build_steps changes what it produces (flags, stamps) so caches get rebuilt.
recipe=3
# Anything that changes the output changes the fingerprint; a cache with another one is rebuilt.
fingerprint=$(
  {
    printf '%s\n' "recipe=$recipe" "$KUBERNETES_VERSION" "$ETCD_VERSION" "$CONTAINERD_VERSION" "$(go env GOVERSION GOOS GOARCH)"
    cat "$here/kubernetes/go.mod" "$here/kubernetes/go.sum" "$here/etcd/go.mod" "$here/etcd/go.sum" \
      "$here/containerd/go.mod" "$here/containerd/go.sum"
  } | sha256sum | cut -d' ' -f1
)

is_current() {
  local b
  for b in etcd "${KUBERNETES_TOOLS[@]}" "${CONTAINERD_TOOLS[@]}"; do
    [[ -x "$bin_dir/$b" ]] || return 1
  done
  grep -qx "fingerprint=$fingerprint" "$bin_dir/BUILDINFO" 2>/dev/null
}

# One build at a time per cache (parallel make targets, several checkouts sharing the cache).
if ! needs_build is_current "$cache_root/.lock" 3600 "the control-plane binaries"; then
  printf '%s\n' "$bin_dir"
  exit 0
fi

# Holding the lock, any other build folder is the leftover of a killed build.
rm -rf "$cache_root"/.build.* "$cache_root"/.old.*
tmp=$(mktemp -d "$cache_root/.build.XXXXXX")
chmod 755 "$tmp"
old=''
cleanup() {
  rm -rf "$tmp"
  [[ -z "$old" ]] || rm -rf "$old"
}
trap cleanup EXIT
trap 'log "failed (line $LINENO: $BASH_COMMAND)"' ERR
trap 'exit 130' INT
trap 'exit 143' TERM

build_steps() {
  local k8s_minor build_date ldflags=(-s -w) p
  k8s_minor=${KUBERNETES_VERSION#v1.}
  k8s_minor=${k8s_minor%%.*}
  # The release's own timestamp keeps the stamp reproducible.
  build_date=$(cd "$here/kubernetes" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
  # Both version packages are stamped, as Kubernetes' own build does, so --version and the
  # apiserver's /version report the pinned release instead of v0.0.0-master. The module zip
  # carries no commit id, so gitCommit is cleared rather than left as "$Format:%H$".
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=("-X=$p.gitVersion=$KUBERNETES_VERSION" "-X=$p.gitMajor=1" "-X=$p.gitMinor=$k8s_minor"
      "-X=$p.gitTreeState=clean" "-X=$p.buildDate=$build_date" "-X=$p.gitCommit=")
  done
  log "building ${KUBERNETES_TOOLS[*]} ${KUBERNETES_VERSION} (slow the first time)"
  (cd "$here/kubernetes" && go build -trimpath -ldflags="${ldflags[*]}" -o "$tmp/" \
    "${KUBERNETES_TOOLS[@]/#/k8s.io/kubernetes/cmd/}")
  log "building etcd ${ETCD_VERSION}"
  (cd "$here/etcd" && go build -trimpath -ldflags='-s -w' -o "$tmp/etcd" go.etcd.io/etcd/server/v3)
  log "building ${CONTAINERD_TOOLS[*]} ${CONTAINERD_VERSION}"
  p=github.com/containerd/containerd/v2
  # No build tags: with CGO_ENABLED=0 the btrfs snapshotter drops out by itself (overlayfs is used).
  (cd "$here/containerd" && go build -trimpath \
    -ldflags="-s -w -X=$p/version.Version=$CONTAINERD_VERSION -X=$p/version.Revision=" -o "$tmp/" \
    "${CONTAINERD_TOOLS[@]/#/$p/cmd/}")
}

start=$SECONDS
build_steps

# Refuse a build that does not report what was pinned.
got=$("$tmp/kube-apiserver" --version)
[[ "$got" == "Kubernetes $KUBERNETES_VERSION" ]] || die "kube-apiserver --version says '$got', expected 'Kubernetes $KUBERNETES_VERSION'"
for b in kubelet kube-proxy; do
  got=$("$tmp/$b" --version)
  [[ "$got" == "Kubernetes $KUBERNETES_VERSION" ]] || die "$b --version says '$got', expected 'Kubernetes $KUBERNETES_VERSION'"
done
got=$("$tmp/containerd" --version)
[[ "$got" == "containerd github.com/containerd/containerd/v2 $CONTAINERD_VERSION"* ]] ||
  die "containerd --version says '$got', expected containerd $CONTAINERD_VERSION"
got=$("$tmp/etcd" --version | awk 'NR == 1')
[[ "$got" == "etcd Version: ${ETCD_VERSION#v}" ]] || die "etcd --version says '$got', expected 'etcd Version: ${ETCD_VERSION#v}'"

{
  printf 'KUBERNETES_VERSION=%s\nETCD_VERSION=%s\nCONTAINERD_VERSION=%s\n' "$KUBERNETES_VERSION" "$ETCD_VERSION" "$CONTAINERD_VERSION"
  printf 'go=%s\nbuilt=%s\nbuild_seconds=%s\n' "$(go env GOVERSION)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$((SECONDS - start))"
  printf 'fingerprint=%s\n' "$fingerprint"
} >"$tmp/BUILDINFO"

# Swap in the finished folder with renames, so the cache is never a half-written build.
if [[ -e "$bin_dir" ]]; then
  old=$(mktemp -d "$cache_root/.old.XXXXXX")
  mv "$bin_dir" "$old/"
fi
mv "$tmp" "$bin_dir"
log "built in $((SECONDS - start)) s: $bin_dir"
printf '%s\n' "$bin_dir"

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

# helm has a cache folder, lock and fingerprint of its own: pinning another helm never rebuilds
# Kubernetes, a helm build never waits behind an hour-long control-plane build, and the reverse.
build_helm() {
  local cache_root dir fingerprint
  cache_root=${CONTROLPLANE_CACHE_DIR:-$REPO_ROOT/.cache/controlplane}
  dir="$cache_root/helm-$HELM_VERSION"
  go_env
  # Bump when the helm build changes what it produces (flags, stamps) so caches get rebuilt.
  local recipe=1
  fingerprint=$(printf '%s\n' "recipe=$recipe" "$HELM_VERSION" "$(go env GOVERSION GOOS GOARCH)" | sha256sum | cut -d' ' -f1)
  cached_build "helm $HELM_VERSION" "$dir" "$fingerprint" 1800 helm_steps helm_present
  printf '%s\n' "$dir"
}

helm_present() { [[ -x "$1/helm" ]]; }

helm_steps() { # OUT
  local module="helm.sh/helm/${HELM_VERSION%%.*}" got
  log "building helm ${HELM_VERSION} (about 3 min with empty Go caches)"
  # `go install module@version` builds against helm's own go.mod and go.sum, as its release
  # does; the stamps are those of helm's Makefile (the module zip carries no commit id).
  GOBIN="$1" go install -trimpath \
    -ldflags="-s -w -X=$module/internal/version.version=$HELM_VERSION -X=$module/internal/version.gitCommit= -X=$module/internal/version.gitTreeState=clean" \
    "$module/cmd/helm@$HELM_VERSION"
  got=$("$1/helm" version --template '{{.Version}}')
  [[ "$got" == "$HELM_VERSION" ]] || die "helm version says '$got', expected '$HELM_VERSION'"
  printf 'HELM_VERSION=%s\n' "$HELM_VERSION" >"$1/BUILDINFO"
}

trap 'log "failed (line $LINENO: $BASH_COMMAND)"' ERR
trap 'exit 130' INT
trap 'exit 143' TERM

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

binaries_present() { # DIR
  local b
  for b in etcd "${KUBERNETES_TOOLS[@]}" "${CONTAINERD_TOOLS[@]}"; do
    [[ -x "$1/$b" ]] || return 1
  done
}

build_steps() { # OUT
  local out=$1 k8s_minor build_date ldflags=(-s -w) p got b
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
  (cd "$here/kubernetes" && go build -trimpath -ldflags="${ldflags[*]}" -o "$out/" \
    "${KUBERNETES_TOOLS[@]/#/k8s.io/kubernetes/cmd/}")
  log "building etcd ${ETCD_VERSION}"
  (cd "$here/etcd" && go build -trimpath -ldflags='-s -w' -o "$out/etcd" go.etcd.io/etcd/server/v3)
  log "building ${CONTAINERD_TOOLS[*]} ${CONTAINERD_VERSION}"
  p=github.com/containerd/containerd/v2
  # No build tags: with CGO_ENABLED=0 the btrfs snapshotter drops out by itself (overlayfs is used).
  (cd "$here/containerd" && go build -trimpath \
    -ldflags="-s -w -X=$p/version.Version=$CONTAINERD_VERSION -X=$p/version.Revision=" -o "$out/" \
    "${CONTAINERD_TOOLS[@]/#/$p/cmd/}")

  # Refuse a build that does not report what was pinned.
  got=$("$out/kube-apiserver" --version)
  [[ "$got" == "Kubernetes $KUBERNETES_VERSION" ]] || die "kube-apiserver --version says '$got', expected 'Kubernetes $KUBERNETES_VERSION'"
  for b in kubelet kube-proxy; do
    got=$("$out/$b" --version)
    [[ "$got" == "Kubernetes $KUBERNETES_VERSION" ]] || die "$b --version says '$got', expected 'Kubernetes $KUBERNETES_VERSION'"
  done
  got=$("$out/containerd" --version)
  [[ "$got" == "containerd github.com/containerd/containerd/v2 $CONTAINERD_VERSION"* ]] ||
    die "containerd --version says '$got', expected containerd $CONTAINERD_VERSION"
  got=$("$out/etcd" --version | awk 'NR == 1')
  [[ "$got" == "etcd Version: ${ETCD_VERSION#v}" ]] || die "etcd --version says '$got', expected 'etcd Version: ${ETCD_VERSION#v}'"
  printf 'KUBERNETES_VERSION=%s\nETCD_VERSION=%s\nCONTAINERD_VERSION=%s\n' "$KUBERNETES_VERSION" "$ETCD_VERSION" "$CONTAINERD_VERSION" >"$out/BUILDINFO"
}

# One build at a time per cache (parallel make targets, several checkouts sharing the cache).
cached_build "the control-plane binaries" "$bin_dir" "$fingerprint" 3600 build_steps binaries_present
printf '%s\n' "$bin_dir"

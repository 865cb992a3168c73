# Shared by pin.sh, build-binaries.sh and the checks that build tools (sourced, not run).
# shellcheck shell=bash

CONTROLPLANE_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck disable=SC2034 # used by the scripts that source this file
REPO_ROOT=$(cd "$CONTROLPLANE_HERE/../.." && pwd)
# shellcheck source=../lib/cached_build.sh
source "$REPO_ROOT/test/lib/cached_build.sh"
# shellcheck disable=SC2034
KUBERNETES_TOOLS=(kube-apiserver kube-scheduler kube-controller-manager kubectl kubelet kube-proxy)
# shellcheck disable=SC2034
CONTAINERD_TOOLS=(containerd containerd-shim-runc-v2 ctr)

log() { printf '[controlplane] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

load_versions() {
  local f="$CONTROLPLANE_HERE/versions.env" line key value
  [[ -f "$f" ]] || die "missing $f"
  KUBERNETES_VERSION='' ETCD_VERSION='' CONTAINERD_VERSION='' HELM_VERSION=''
  # Parsed rather than sourced so the file stays plain KEY=VALUE data.
  while IFS= read -r line || [[ -n "$line" ]]; do
    [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
    key=${line%%=*} value=${line#*=}
    case "$key" in
    KUBERNETES_VERSION) KUBERNETES_VERSION=$value ;;
    ETCD_VERSION) ETCD_VERSION=$value ;;
    CONTAINERD_VERSION) CONTAINERD_VERSION=$value ;;
    HELM_VERSION) HELM_VERSION=$value ;;
    *) die "unknown key '$key' in $f" ;;
    esac
  done <"$f"
  [[ "$KUBERNETES_VERSION" =~ ^v1\.[0-9]+\.[0-9]+$ ]] || die "KUBERNETES_VERSION '$KUBERNETES_VERSION' in $f is not v1.X.Y"
  [[ "$ETCD_VERSION" =~ ^v3\.[0-9]+\.[0-9]+$ ]] || die "ETCD_VERSION '$ETCD_VERSION' in $f is not v3.X.Y"
  [[ "$CONTAINERD_VERSION" =~ ^v2\.[0-9]+\.[0-9]+$ ]] || die "CONTAINERD_VERSION '$CONTAINERD_VERSION' in $f is not v2.X.Y"
  [[ "$HELM_VERSION" =~ ^v[34]\.[0-9]+\.[0-9]+$ ]] || die "HELM_VERSION '$HELM_VERSION' in $f is not v3.X.Y or v4.X.Y"
}

go_env() {
  if ! command -v go >/dev/null 2>&1; then
    [[ -x /usr/local/go/bin/go ]] || die "no 'go' on PATH or in /usr/local/go/bin"
    PATH="/usr/local/go/bin:$PATH"
  fi
  # local toolchain only (no toolchain download), static binaries, no workspace or vendor
  # surprises from the caller's environment, no VCS stamping of the wrapper modules.
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off GOFLAGS='-mod=readonly -buildvcs=false'
}

check_go_meets() { # required-version what
  local have
  have=$(go env GOVERSION)
  have=${have#go}
  if [[ "$(printf '%s\n%s\n' "$1" "$have" | sort -V | awk 'NR == 1')" != "$1" ]]; then
    die "$2 needs Go >= $1, installed is $have (GOTOOLCHAIN=local)"
  fi
}

# Fails when the wrapper modules do not pin what versions.env says.
check_pins() {
  local kmod="$CONTROLPLANE_HERE/kubernetes/go.mod" emod="$CONTROLPLANE_HERE/etcd/go.mod"
  local cmod="$CONTROLPLANE_HERE/containerd/go.mod"
  local staging="v0.${KUBERNETES_VERSION#v1.}" f t
  for f in "$kmod" "$emod" "$cmod" "${kmod%.mod}.sum" "${emod%.mod}.sum" "${cmod%.mod}.sum"; do
    [[ -f "$f" ]] || die "missing $f: run test/controlplane/pin.sh"
  done
  grep -Eq "^[[:space:]]*(require[[:space:]]+)?k8s\.io/kubernetes[[:space:]]+${KUBERNETES_VERSION//./\\.}([[:space:]]|$)" "$kmod" ||
    die "$kmod does not require k8s.io/kubernetes ${KUBERNETES_VERSION} (versions.env): run test/controlplane/pin.sh"
  grep -Eq "^[[:space:]]*(replace[[:space:]]+)?k8s\.io/api[[:space:]]+=>[[:space:]]+k8s\.io/api[[:space:]]+${staging//./\\.}([[:space:]]|$)" "$kmod" ||
    die "$kmod does not replace k8s.io/api with ${staging}: run test/controlplane/pin.sh"
  grep -Eq "^[[:space:]]*(require[[:space:]]+)?go\.etcd\.io/etcd/server/v3[[:space:]]+${ETCD_VERSION//./\\.}([[:space:]]|$)" "$emod" ||
    die "$emod does not require go.etcd.io/etcd/server/v3 ${ETCD_VERSION} (versions.env): run test/controlplane/pin.sh"
  grep -Eq "^[[:space:]]*(require[[:space:]]+)?github\.com/containerd/containerd/v2[[:space:]]+${CONTAINERD_VERSION//./\\.}([[:space:]]|$)" "$cmod" ||
    die "$cmod does not require github.com/containerd/containerd/v2 ${CONTAINERD_VERSION} (versions.env): run test/controlplane/pin.sh"
  for t in "${KUBERNETES_TOOLS[@]}"; do
    grep -Eq "^[[:space:]]*(tool[[:space:]]+)?k8s\.io/kubernetes/cmd/${t}[[:space:]]*$" "$kmod" ||
      die "$kmod has no tool directive for $t: run test/controlplane/pin.sh"
  done
}

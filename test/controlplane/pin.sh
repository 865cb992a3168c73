#!/usr/bin/env bash
# Regenerates kubernetes/go.mod, etcd/go.mod, containerd/go.mod and their go.sum from
# versions.env. Run it after changing a version there, then commit versions.env and the modules.
# Needs the Go module proxy; the builds themselves only read what this records.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"

load_versions
go_env

k8s_minor_patch=${KUBERNETES_VERSION#v1.}
staging_version="v0.${k8s_minor_patch}"

log "reading k8s.io/kubernetes@${KUBERNETES_VERSION}'s go.mod from the proxy"
k8s_gomod=$(cd "$here" && go mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
[[ -f "$k8s_gomod" ]] || die "could not download k8s.io/kubernetes@${KUBERNETES_VERSION}"

# The `go` and `godebug` lines are copied so the binaries behave as upstream's do.
k8s_go=$(awk '$1 == "go" { print $2; exit }' "$k8s_gomod")
k8s_godebug=$(awk '$1 == "godebug" && $2 != "(" { print $2; exit }' "$k8s_gomod")
# Staging modules are the ones k8s.io/kubernetes replaces with ./staging/... paths; a dependent
# module must replace each with the published v0.X.Y or resolution hits "v0.0.0".
mapfile -t staging < <(awk '$2 == "=>" && $3 ~ /^\.\/staging\// { print $1 }' "$k8s_gomod")
((${#staging[@]} > 0)) || die "no staging replaces found in $k8s_gomod"
check_go_meets "$k8s_go" "k8s.io/kubernetes@${KUBERNETES_VERSION}"

new_module() { # dir; go.mod text on stdin
  mkdir -p "$1"
  rm -f "$1/go.sum"
  cat >"$1/go.mod"
}

kdir="$here/kubernetes"
{
  printf 'module kube-extended-resource/test/controlplane/kubernetes\n\ngo %s\n' "$k8s_go"
  [[ -z "$k8s_godebug" ]] || printf '\ngodebug %s\n' "$k8s_godebug"
  printf '\ntool (\n'
  printf '\tk8s.io/kubernetes/cmd/%s\n' "${KUBERNETES_TOOLS[@]}"
  printf ')\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$KUBERNETES_VERSION"
  for m in "${staging[@]}"; do
    printf '\t%s => %s %s\n' "$m" "$m" "$staging_version"
  done
  printf ')\n'
} | new_module "$kdir"
log "go mod tidy in $kdir (${#staging[@]} staging modules at ${staging_version})"
(cd "$kdir" && go mod tidy)

log "reading go.etcd.io/etcd/server/v3@${ETCD_VERSION}'s go.mod from the proxy"
etcd_gomod=$(cd "$here" && go mod download -json "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
[[ -f "$etcd_gomod" ]] || die "could not download go.etcd.io/etcd/server/v3@${ETCD_VERSION}"
etcd_go=$(awk '$1 == "go" { print $2; exit }' "$etcd_gomod")
check_go_meets "$etcd_go" "go.etcd.io/etcd/server/v3@${ETCD_VERSION}"

edir="$here/etcd"
{
  printf 'module kube-extended-resource/test/controlplane/etcd\n\ngo %s\n' "$etcd_go"
  # The module's root package is etcd's main.
  printf '\ntool go.etcd.io/etcd/server/v3\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION"
} | new_module "$edir"
log "go mod tidy in $edir"
(cd "$edir" && go mod tidy)

log "reading github.com/containerd/containerd/v2@${CONTAINERD_VERSION}'s go.mod from the proxy"
containerd_gomod=$(cd "$here" && go mod download -json "github.com/containerd/containerd/v2@${CONTAINERD_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
[[ -f "$containerd_gomod" ]] || die "could not download github.com/containerd/containerd/v2@${CONTAINERD_VERSION}"
containerd_go=$(awk '$1 == "go" { print $2; exit }' "$containerd_gomod")
check_go_meets "$containerd_go" "github.com/containerd/containerd/v2@${CONTAINERD_VERSION}"
# A replace in containerd's own go.mod would be ignored here, as Kubernetes' staging ones are.
! grep -Eq '^[[:space:]]*replace[[:space:]]' "$containerd_gomod" ||
  die "$containerd_gomod has replace directives: mirror them in the containerd wrapper module"

cdir="$here/containerd"
{
  printf 'module kube-extended-resource/test/controlplane/containerd\n\ngo %s\n\ntool (\n' "$containerd_go"
  printf '\tgithub.com/containerd/containerd/v2/cmd/%s\n' "${CONTAINERD_TOOLS[@]}"
  printf ')\n\nrequire github.com/containerd/containerd/v2 %s\n' "$CONTAINERD_VERSION"
} | new_module "$cdir"
log "go mod tidy in $cdir"
(cd "$cdir" && go mod tidy)

check_pins
log "pinned kubernetes ${KUBERNETES_VERSION} (staging ${staging_version}), etcd ${ETCD_VERSION}, containerd ${CONTAINERD_VERSION}"

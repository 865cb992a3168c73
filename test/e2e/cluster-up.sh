#!/usr/bin/env bash
# Brings up the whole system the way a user deploys it, on this machine: builds the images
# (test/images/build-images.sh), starts a control plane with a pod network, kube-controller-
# manager, the default kube-scheduler and one real node (kubelet, containerd, kube-proxy) with
# the images loaded, applies crds/ and deploy/ (through test/e2e/deploy, which only points
# deploy/ at the local image and forbids pulls), and waits until the extended-resource
# scheduler and controller run as pods. Stop it with `test/controlplane/launch.sh stop DIR`.
#
#   test/e2e/cluster-up.sh DIR [--node-name NAME]     (root; DIR at most 60 characters)
#
# Used by test/run-e2e.sh and `make run-in-cluster`. Exit status 1 when a step fails; what
# was started is left for the caller to stop.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
launcher="$root/test/controlplane/launch.sh"

log() { printf '[cluster-up] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

(($# >= 1)) || {
  sed -n '2,12s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
}
dir=$1
shift
node_args=()
while (($#)); do
  case "$1" in
  --node-name)
    (($# >= 2)) || die "--node-name needs a name"
    node_args=(--node-name "$2")
    shift
    ;;
  -h | --help)
    sed -n '2,12s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
    exit 0
    ;;
  *) die "unknown argument '$1' (try --help)" ;;
  esac
  shift
done

bin_dir=$("$root/test/controlplane/build-binaries.sh" | tail -n1)
images="$root/.cache/images/tarballs"
mkdir -p "$images"
"$root/test/images/build-images.sh" "$images" --bin-dir "$bin_dir" >/dev/null

# The node agent's node file, "host" and state folder (see test/e2e/deploy/kustomization.yaml):
# fresh, so no run inherits the names another advertised. The vendors' CDI specs live in that
# host's /etc/cdi and /var/run/cdi: containerd reads the latter.
agent_dir=/run/ker-e2e-node-agent
rm -rf "$agent_dir"
mkdir -p "$agent_dir/etc" "$agent_dir/host/dev" "$agent_dir/host/etc/cdi" "$agent_dir/host/var/run/cdi"
printf '{"devices": []}\n' >"$agent_dir/etc/node-devices.yaml"

"$launcher" start "$dir" --bin-dir "$bin_dir" --node-network --audit-components >/dev/null
"$launcher" start-controller-manager "$dir" >/dev/null
# The cluster's own default-scheduler places deploy/'s pods, as in any cluster.
"$launcher" start-scheduler "$dir" --no-extender --name default --scheduler-name default-scheduler >/dev/null
"$launcher" start-node "$dir" "${node_args[@]}" --cdi-spec-dir "$agent_dir/host/var/run/cdi" --image-tar "$images/ker-busybox.tar" \
  --image-tar "$images/kube-scheduler.tar" --image-tar "$images/kube-extended-resource.tar" >/dev/null

printf 'NODE_AGENT_FILE=%s\nNODE_AGENT_HOST_ROOT=%s\nNODE_AGENT_STATE_DIR=%s\n' \
  "$agent_dir/etc/node-devices.yaml" "$agent_dir/host" "$agent_dir/state" >>"$dir/env"

kubectl() { "$bin_dir/kubectl" --kubeconfig "$dir/admin.kubeconfig" "$@"; }
log "applying crds/ and deploy/"
kubectl apply -f "$root/crds" >/dev/null
kubectl wait --for=condition=Established --timeout=60s \
  crd/extendedresources.extendedresource.io crd/extendedresourceclaims.extendedresource.io \
  crd/extendedresourceclasses.extendedresource.io >/dev/null
kubectl kustomize --load-restrictor=LoadRestrictionsNone "$here/deploy" | kubectl create -f - >/dev/null
for d in extended-resource-scheduler extended-resource-controller; do
  # (rollout status fails on a Deployment the controller has not yet given conditions.)
  kubectl wait -n kube-system "deployment/$d" --for=condition=Available --timeout=180s >&2 ||
    die "deployment kube-system/$d did not become available"
done
kubectl rollout status -n kube-system daemonset/extended-resource-node-agent --timeout=180s >&2 ||
  die "daemonset kube-system/extended-resource-node-agent did not become ready"

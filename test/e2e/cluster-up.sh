#!/usr/bin/env bash
# Brings up the whole system the way a user deploys it, on this machine: builds the images
# (test/images/build-images.sh), starts a control plane with a pod network, kube-controller-
# manager, the default kube-scheduler and real nodes (kubelet, containerd, kube-proxy; the first
# on the host, each further one in namespaces of its own: test/controlplane/launch.sh) with the
# images loaded, applies crds/ and deploy/ (through test/e2e/deploy, which only points deploy/
# at the local image, forbids pulls and lets the node agent tolerate the further nodes' taint),
# and waits until the extended-resource scheduler and controller run as pods and the node agent
# runs on every node. Stop it with `test/controlplane/launch.sh stop DIR`.
#
#   test/e2e/cluster-up.sh DIR [--node-name NAME] [--nodes N] [--extra-node-taint KEY=VALUE:EFFECT]
#                          [--previous-release]
#       --node-name NAME   the first node (default ker-node); node k is NAME-k (node-1: node-k)
#       --nodes N          1 to 9 nodes (default 1)
#       --extra-node-taint the further nodes register with this taint, so that only pods
#                          tolerating it (a test's, the node agent's) run there
#       --previous-release also build the previous release (test/e2e/previous-release.sh),
#                          load its image on every node and render its manifests into
#                          DIR/releases/previous, for the upgrade tests
#   (root; DIR at most 60 characters minus the longest node name)
#
# Each node's agent sees /run/ker-e2e-node-agent (its node file, "host" and state); a further
# node's is its own folder /run/ker-e2e-node-agent-NAME, mounted there in its namespace. The
# env file of node k (DIR/nodes/NAME/env) gets the same NODE_AGENT_* keys as DIR/env.
# Used by test/run-e2e.sh and `make run-in-cluster`. Exit status 1 when a step fails; what
# was started is left for the caller to stop.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=../lib/crds.sh
source "$root/test/lib/crds.sh"
launcher="$root/test/controlplane/launch.sh"

log() { printf '[cluster-up] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

(($# >= 1)) || {
  sed -n '2,28s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
}
dir=$1
shift
first=ker-node nodes=1 taint='' previous=false
while (($#)); do
  case "$1" in
  --node-name | --nodes | --extra-node-taint)
    (($# >= 2)) || die "$1 needs a value"
    case "$1" in
    --node-name) first=$2 ;;
    --nodes) nodes=$2 ;;
    --extra-node-taint) taint=$2 ;;
    esac
    shift
    ;;
  --previous-release) previous=true ;;
  -h | --help)
    sed -n '2,28s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
    exit 0
    ;;
  *) die "unknown argument '$1' (try --help)" ;;
  esac
  shift
done
[[ "$nodes" =~ ^[1-9]$ ]] || die "--nodes must be 1 to 9, got '$nodes'"
node_name() { # k -> the name of node k
  if ((${1} == 1)); then
    printf '%s' "$first"
  elif [[ "$first" == *-1 ]]; then
    printf '%s-%s' "${first%-1}" "$1"
  else
    printf '%s-%s' "$first" "$1"
  fi
}

bin_dir=$("$root/test/controlplane/build-binaries.sh" | tail -n1)
images="$root/.cache/images/tarballs"
mkdir -p "$images"
"$root/test/images/build-images.sh" "$images" --bin-dir "$bin_dir" >/dev/null
# deploy/ as this cluster runs it, and with --previous-release the release before (a build of
# minutes the first time): what the upgrade tests roll between.
mkdir -p "$dir/releases/current"
"$bin_dir/kubectl" kustomize --load-restrictor=LoadRestrictionsNone "$here/deploy" >"$dir/releases/current/deploy.yaml"
# Without it only the upgrade test fails (it names the missing keys), not the whole suite.
if $previous && ! previous_commit=$("$here/previous-release.sh" "$bin_dir" "$images" "$dir/releases/previous" | tail -n1); then
  log "warning: the previous release could not be built (above); the upgrade test will fail"
  previous=false
fi

# A node agent's node file, "host" and state folder (see test/e2e/deploy/kustomization.yaml):
# fresh, so no run inherits the names another advertised. The vendors' CDI specs live in that
# host's /etc/cdi and /var/run/cdi: containerd reads the latter.
agent_dir=/run/ker-e2e-node-agent
agent_folder() { # DIR: made afresh
  rm -rf "$1"
  mkdir -p "$1/etc" "$1/host/dev" "$1/host/etc/cdi" "$1/host/var/run/cdi"
  printf '{"devices": []}\n' >"$1/etc/node-devices.yaml"
}
agent_env() { # DIR: the keys tests read
  printf 'NODE_AGENT_FILE=%s\nNODE_AGENT_HOST_ROOT=%s\nNODE_AGENT_STATE_DIR=%s\n' \
    "$1/etc/node-devices.yaml" "$1/host" "$1/state"
}
agent_folder "$agent_dir"

"$launcher" start "$dir" --bin-dir "$bin_dir" --node-network --audit-components >/dev/null
"$launcher" start-controller-manager "$dir" >/dev/null
# The cluster's own default-scheduler places deploy/'s pods, as in any cluster.
"$launcher" start-scheduler "$dir" --no-extender --name default --scheduler-name default-scheduler >/dev/null
image_args=(--image-tar "$images/ker-busybox.tar" --image-tar "$images/kube-scheduler.tar"
  --image-tar "$images/kube-extended-resource.tar")
$previous && image_args+=(--image-tar "$images/kube-extended-resource-previous.tar")
# What the upgrade tests roll between (rendered above).
printf 'CURRENT_DEPLOY=%s\nCURRENT_CRDS=%s\n' "$dir/releases/current/deploy.yaml" "$root/crds" >>"$dir/env"
if $previous; then
  printf 'PREVIOUS_RELEASE=%s\nPREVIOUS_DEPLOY=%s\nPREVIOUS_CRDS=%s\n' "$previous_commit" \
    "$dir/releases/previous/deploy.yaml" "$dir/releases/previous/crds" >>"$dir/env"
fi
"$launcher" start-node "$dir" --node-name "$first" --cdi-spec-dir "$agent_dir/host/var/run/cdi" "${image_args[@]}" >/dev/null
agent_env "$agent_dir" >>"$dir/env"
for ((k = 2; k <= nodes; k++)); do
  name=$(node_name "$k")
  log "starting node $name"
  own="$agent_dir-$name"
  agent_folder "$own"
  node_env=$("$launcher" start-node "$dir" --node-name "$name" --cdi-spec-dir "$agent_dir/host/var/run/cdi" \
    --bind-dir "$own:$agent_dir" ${taint:+--taint "$taint"} "${image_args[@]}" | tail -n1)
  agent_env "$own" >>"$node_env"
done

kubectl() { "$bin_dir/kubectl" --kubeconfig "$dir/admin.kubeconfig" "$@"; }
log "applying crds/ and deploy/"
kubectl apply -f "$root/crds" >/dev/null
wait_crds_established kubectl crd/extendedresources.extendedresource.io \
  crd/extendedresourceclaims.extendedresource.io crd/extendedresourceclasses.extendedresource.io ||
  die "the CRDs are not Established"
# Applied, as a user would: a later `kubectl apply` of another release (the upgrade tests) then
# removes what this one has and that one does not.
kubectl apply -f "$dir/releases/current/deploy.yaml" >/dev/null
for d in extended-resource-scheduler extended-resource-controller; do
  # (rollout status fails on a Deployment the controller has not yet given conditions.)
  kubectl wait -n kube-system "deployment/$d" --for=condition=Available --timeout=180s >&2 ||
    die "deployment kube-system/$d did not become available"
done
kubectl rollout status -n kube-system daemonset/extended-resource-node-agent --timeout=180s >&2 ||
  die "daemonset kube-system/extended-resource-node-agent did not become ready"
agents=$(kubectl get daemonset -n kube-system extended-resource-node-agent -o 'jsonpath={.status.numberReady}')
[[ "$agents" == "$nodes" ]] || die "the node agent runs on $agents node(s), not $nodes"

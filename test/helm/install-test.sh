#!/usr/bin/env bash
# Installs the working tree's Helm chart (charts/kube-extended-resource) on the cluster that
# test/run-e2e.sh brought up, in place of deploy/, runs the sample workload of config/ with a
# device, and upgrades the release under it:
#   1. deletes what test/e2e/deploy applied and waits until the component pods are gone, then
#      the CRDs too (with every custom resource left, their finalizers taken off first, as no
#      controller runs any more), so that the install below creates them from the chart;
#   2. `helm install --wait` with the chart's default values except the local images and
#      pullPolicy Never (the node reaches no registry) and the e2e node agent's node-file, /dev
#      and state folders (/run/ker-e2e-node-agent); checks the release is deployed, both
#      Deployments Available and the DaemonSet rolled out, all of them the release's, and the
#      three CRDs Established again;
#   3. adds a device to the node file as the e2e fixture does (an entry plus a stand-in device
#      node with /dev/null's numbers under the agent's host root), applies config/k80-erc.yaml
#      and config/k80-workload.yaml in a namespace of its own (busybox:1.36 swapped for the
#      local localhost/ker-busybox:1, pulls forbidden), and checks the pod runs, its claim is
#      Bound to the device, the device names the pod as holder, the allocation annotation and
#      the container's output name the device, and the device node exists in the container;
#   4. `helm upgrade --wait` adding --v=2 to every component, which replaces every component
#      pod, then checks each was replaced, the workload pod is the same one (UID, containerID,
#      restartCount 0) still holding the same device (claim, holder, device node), and a second
#      workload (a copy of the sample, with a second device) gets the second device.
# Each step's time is logged. The release is left installed (the cluster is torn down after).
#
#   test/helm/install-test.sh E2E_DIR
#
# E2E_DIR is test/run-e2e.sh's cluster folder (admin.kubeconfig, and env with BIN_DIR,
# NODE_NAME, NODE_AGENT_FILE, NODE_AGENT_HOST_ROOT, NODE_AGENT_STATE_DIR); run as root (it
# writes the node file and device nodes). helm is the pinned one
# (test/controlplane/build-binaries.sh --helm) unless HELM names another. Exit status 1 on the
# first failed check, after printing what was seen.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=../lib/crds.sh
source "$root/test/lib/crds.sh"
chart="$root/charts/kube-extended-resource"

log() { printf '[helm-install-test] %s\n' "$*" >&2; }

if (($# != 1)) || [[ "$1" == -h || "$1" == --help ]]; then
  sed -n '2,31s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
fi
dir=$(cd "$1" && pwd)
env_get() { sed -n "s/^$1=//p" "$dir/env" | tail -n 1; }

bin_dir=$(env_get BIN_DIR)
node=$(env_get NODE_NAME)
node_file=$(env_get NODE_AGENT_FILE)
host_root=$(env_get NODE_AGENT_HOST_ROOT)
state_dir=$(env_get NODE_AGENT_STATE_DIR)
for v in bin_dir node node_file host_root state_dir; do
  [[ -n "${!v}" ]] || {
    log "error: $dir/env lacks $v (not a test/run-e2e.sh cluster folder?)"
    exit 1
  }
done
# The chart's agent reads <nodeFile.hostPath>/node-devices.yaml.
[[ "$(basename "$node_file")" == node-devices.yaml ]] || {
  log "error: the chart reads node-devices.yaml, the e2e node file is $node_file"
  exit 1
}
# shellcheck source=../controlplane/versions.env
source "$root/test/controlplane/versions.env"

helm_bin=${HELM:-}
if [[ -z "$helm_bin" ]]; then
  helm_bin="$("$root/test/controlplane/build-binaries.sh" --helm | tail -n 1)/helm"
fi
[[ -x "$helm_bin" ]] || {
  log "error: no helm at $helm_bin"
  exit 1
}

work="$dir/helm-install-test"
rm -rf "$work"
mkdir -p "$work/home"
kubectl() { "$bin_dir/kubectl" --kubeconfig "$dir/admin.kubeconfig" "$@"; }
# Helm's cache, config and data stay in the cluster folder, not in $HOME.
helm() {
  HELM_CACHE_HOME="$work/home/cache" HELM_CONFIG_HOME="$work/home/config" \
    HELM_DATA_HOME="$work/home/data" "$helm_bin" --kubeconfig "$dir/admin.kubeconfig" "$@"
}

release=ker
sys=kube-system
ns=ker-helm-e2e
components=(extended-resource-scheduler extended-resource-controller extended-resource-node-agent)
selector="app.kubernetes.io/name in ($(IFS=,; echo "${components[*]}"))"

# What a failure shows: the components, the workload, the devices, the release.
show() {
  {
    echo "--- kube-system"
    kubectl get deployments,daemonsets,pods -n "$sys" -o wide
    echo "--- $ns"
    kubectl get pods,extendedresourceclaims -n "$ns" -o wide
    echo "--- devices"
    kubectl get extendedresources -o wide
    echo "--- helm"
    helm history "$release" -n "$sys"
  } 2>&1 | sed 's/^/    /' >&2 || true
}
# fail MESSAGE [kubectl get arguments of the objects concerned...]
fail() {
  log "FAILED (step $step): $1"
  if (($# > 1)); then
    log "seen: kubectl get ${*:2} -o yaml"
    kubectl get "${@:2}" -o yaml 2>&1 | sed 's/^/    /' >&2 || true
  fi
  show
  exit 1
}

# eventually SECONDS COMMAND...: runs COMMAND every second until it succeeds; 1 when it never did.
eventually() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 1
  done
}

step=0 step_start=$SECONDS total_start=$SECONDS
timings=()
begin() {
  step=$1
  step_start=$SECONDS
  log "step $step: $2"
}
done_step() {
  timings+=("step $step: $((SECONDS - step_start)) s")
  log "step $step: ok in $((SECONDS - step_start)) s"
}

# The devices it adds leave the node file and the agent's host root at exit, as the e2e
# fixture's do at TearDown (what a failure showed is already printed by then).
added=()
# shellcheck disable=SC2317 # invoked by trap
remove_devices() {
  local d
  ((${#added[@]})) || return 0
  python3 - "$node_file" "${added[@]%%=*}" <<'EOF' || true
import json, os, sys
path, names = sys.argv[1], set(sys.argv[2:])
with open(path) as f:
    nf = json.load(f)
nf["devices"] = [d for d in nf.get("devices", []) if d.get("name") not in names]
nf["resources"] = [r for r in nf.get("resources", []) if r.get("rawResourceName") != "nvidia.com/gpu"]
with open(path + ".tmp", "w") as f:
    json.dump(nf, f, indent=2)
    f.write("\n")
os.rename(path + ".tmp", path)
EOF
  for d in "${added[@]#*=}"; do rm -f "$host_root$d"; done
}
trap remove_devices EXIT

# --- the helpers of the checks
component_pods() { kubectl get pods -n "$sys" -l "$selector" -o jsonpath='{range .items[*]}{.metadata.uid}{"\n"}{end}'; }
no_component_pods() { [[ -z "$(component_pods)" ]]; }
jp() { kubectl get "$@" 2>/dev/null; }

# The components as the release runs them: the release deployed, both Deployments Available,
# every rollout finished, each object the release's.
check_components() {
  local status d
  status=$(helm status "$release" -n "$sys" 2>&1 | sed -n 's/^STATUS: //p')
  [[ "$status" == deployed ]] || fail "helm status of $release is '$status', not deployed"
  for d in extended-resource-scheduler extended-resource-controller; do
    kubectl wait -n "$sys" "deployment/$d" --for=condition=Available --timeout=60s >/dev/null ||
      fail "deployment $d is not Available" deployment -n "$sys" "$d"
    kubectl rollout status -n "$sys" "deployment/$d" --timeout=120s >/dev/null ||
      fail "deployment $d did not finish its rollout" deployment -n "$sys" "$d"
    [[ "$(jp deployment -n "$sys" "$d" -o jsonpath='{.metadata.annotations.meta\.helm\.sh/release-name}')" == "$release" ]] ||
      fail "deployment $d is not the release's" deployment -n "$sys" "$d"
  done
  d=extended-resource-node-agent
  kubectl rollout status -n "$sys" "daemonset/$d" --timeout=120s >/dev/null ||
    fail "daemonset $d is not ready" daemonset -n "$sys" "$d"
  [[ "$(jp daemonset -n "$sys" "$d" -o jsonpath='{.status.numberReady}')" == 1 ]] ||
    fail "daemonset $d has not 1 ready pod (one node)" daemonset -n "$sys" "$d"
  [[ "$(jp daemonset -n "$sys" "$d" -o jsonpath='{.metadata.annotations.meta\.helm\.sh/release-name}')" == "$release" ]] ||
    fail "daemonset $d is not the release's" daemonset -n "$sys" "$d"
}

# add_device NAME INDEX: an entry of nvidia.com/gpu (type k80, as config/k80-erc.yaml asks for)
# in the node file, with the device node /dev/nvidiaINDEX, a stand-in under the agent's host
# root; then waits until the agent published it Available.
add_device() {
  local name=$1 dev=/dev/nvidia$2
  rm -f "$host_root$dev"
  added+=("$name=$dev")
  mknod -m 0666 "$host_root$dev" c 1 3
  python3 - "$node_file" "$name" "GPU-$name" "$dev" <<'EOF'
import json, os, sys
path, name, device_id, dev = sys.argv[1:]
with open(path) as f:
    nf = json.load(f)
# The variable the sample workload prints (as make run's node file has it).
res = nf.setdefault("resources", [])
if not any(r.get("rawResourceName") == "nvidia.com/gpu" for r in res):
    res.append({"rawResourceName": "nvidia.com/gpu", "envName": "NVIDIA_VISIBLE_DEVICES"})
nf.setdefault("devices", []).append({
    "name": name, "rawResourceName": "nvidia.com/gpu", "deviceID": device_id,
    "properties": {"type": "k80", "memory": "12Gi"}, "deviceNodes": [{"path": dev}]})
with open(path + ".tmp", "w") as f:
    json.dump(nf, f, indent=2)
    f.write("\n")
os.rename(path + ".tmp", path)
EOF
  device_available() { [[ "$(jp er "$name" -o jsonpath='{.status.phase}')" == Available ]]; }
  eventually 60 device_available ||
    fail "the node agent did not publish $name as Available within 60 s" er "$name"
}

# pod_of DEPLOYMENT: the name of its one pod, once it has exactly one.
pod_of() {
  kubectl get pods -n "$ns" -l "app=$1" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}'
}

# check_workload DEPLOYMENT CLAIM DEVICE INDEX: the Deployment's one pod runs, holding CLAIM,
# Bound to DEVICE, which names the pod as holder; the allocation annotation, the container's
# output and its /dev show the device (and no other nvidia device). Sets $pod and $pod_uid.
check_workload() {
  local deploy=$1 claim=$2 device=$3 dev=/dev/nvidia$4 pods phase out
  one_running() {
    pods=$(pod_of "$deploy")
    [[ -n "$pods" && "$pods" != *$'\n'* ]] &&
      [[ "$(jp pod -n "$ns" "$pods" -o jsonpath='{.status.phase}')" == Running ]]
  }
  eventually 120 one_running || fail "$deploy has no one Running pod within 120 s" pods -n "$ns" -l "app=$deploy"
  pod=$pods
  pod_uid=$(jp pod -n "$ns" "$pod" -o jsonpath='{.metadata.uid}')
  phase=$(jp erc -n "$ns" "$claim" -o jsonpath='{.status.phase} {.status.extendedResourceNames} {.status.podRef.uid}')
  [[ "$phase" == "Bound [\"$device\"] $pod_uid" ]] ||
    fail "claim $claim is '$phase', not Bound to [$device] for pod $pod ($pod_uid)" erc -n "$ns" "$claim"
  phase=$(jp er "$device" -o jsonpath='{.status.phase} {.status.claimRef.namespace}/{.status.claimRef.name} {.status.holders[*].uid}')
  [[ "$phase" == "Bound $ns/$claim $pod_uid" ]] ||
    fail "device $device is '$phase', not Bound to $ns/$claim held by $pod ($pod_uid)" er "$device"
  out=$(jp pod -n "$ns" "$pod" -o jsonpath='{.metadata.annotations.extendedresource\.io/allocation}')
  [[ "$out" == *"\"$device\""* ]] || fail "pod $pod's allocation annotation '$out' does not name $device" pod -n "$ns" "$pod"
  printed() {
    out=$(kubectl logs -n "$ns" "$pod" 2>&1)
    [[ "$out" == *"allocated: "*"\"$device\""* && "$out" == *"NVIDIA_VISIBLE_DEVICES=GPU-$device"* &&
      "$out" == *" $dev"* ]]
  }
  eventually 30 printed || fail "pod $pod did not print its device $device (GPU-$device, $dev); its log: $out" pod -n "$ns" "$pod"
  log "  $pod printed: $(sed 's/  */ /g' <<<"$out" | paste -sd '|')"
  out=$(kubectl exec -n "$ns" "$pod" -- sh -c "test -c $dev && ls /dev | grep nvidia" 2>&1) ||
    fail "no character device $dev in pod $pod's container: $out" pod -n "$ns" "$pod"
  [[ "$out" == "${dev#/dev/}" ]] || fail "pod $pod's container sees nvidia devices '$out', not only ${dev#/dev/}" pod -n "$ns" "$pod"
  log "  $ns/$pod runs with $device: claim $claim Bound, device held by the pod, $dev in the container"
}

# --- 1. deploy/ out, then crds/
crds=(extendedresources.extendedresource.io extendedresourceclaims.extendedresource.io
  extendedresourceclaimtemplates.extendedresource.io)
no_crds() { ! kubectl get crd "${crds[@]}" --ignore-not-found -o name | grep -q .; }
begin 1 "deleting what test/e2e/deploy applied, then the CRDs"
kubectl kustomize --load-restrictor=LoadRestrictionsNone "$root/test/e2e/deploy" >"$work/deploy.yaml"
# --ignore-not-found: the token controller deletes a ServiceAccount's token Secret with the
# ServiceAccount, which may be before kubectl reaches the Secret.
kubectl delete --ignore-not-found --wait --timeout=120s -f "$work/deploy.yaml" >/dev/null ||
  fail "kubectl delete of test/e2e/deploy's objects failed"
eventually 120 no_component_pods || fail "component pods still there 120 s after deleting deploy/" pods -n "$sys" -l "$selector"
# The protection finalizers of what the suite left would hold the CRDs' deletion forever now that
# no controller runs to take them off.
for kind in extendedresources extendedresourceclaims extendedresourceclaimtemplates; do
  # namespace/name, with an empty namespace for the cluster-scoped devices.
  kubectl get "$kind.extendedresource.io" -A -o jsonpath='{range .items[*]}{.metadata.namespace}{"/"}{.metadata.name}{"\n"}{end}' |
    while IFS=/ read -r objns name; do
      [[ -n "$name" ]] || continue
      kubectl patch "$kind.extendedresource.io" "$name" ${objns:+-n "$objns"} --type=merge \
        -p '{"metadata":{"finalizers":null}}' >/dev/null
    done
done
kubectl delete --wait=false -f "$root/crds" >/dev/null || fail "kubectl delete -f crds/ failed"
eventually 120 no_crds || fail "the CRDs are still there 120 s after their deletion" crd "${crds[@]}"
done_step

# --- 2. helm install
begin 2 "helm install $release $chart (local images, pulls forbidden, the e2e node file)"
# Only what a cluster without a registry and the e2e node need; every other value is the default.
cat >"$work/values.yaml" <<EOF
# The images test/images/build-images.sh loaded into the node's containerd (as in
# test/e2e/deploy/kustomization.yaml); nothing is pulled.
image:
  repository: localhost/kube-extended-resource
  tag: dev
  pullPolicy: Never
scheduler:
  kubeScheduler:
    image:
      repository: registry.k8s.io/kube-scheduler
      tag: $KUBERNETES_VERSION
      pullPolicy: Never
# The e2e node agent's node file, "host" /dev and state folder (test/e2e/cluster-up.sh).
nodeAgent:
  nodeFile:
    hostPath: $(dirname "$node_file")
  hostDevPath: $host_root/dev
  stateHostPath: $state_dir
  cdiSpecDirs: [$host_root/etc/cdi, $host_root/var/run/cdi]
EOF
helm install "$release" "$chart" -n "$sys" -f "$work/values.yaml" --wait --timeout 5m \
  >"$work/install.log" 2>&1 || {
  sed 's/^/    /' "$work/install.log" >&2
  fail "helm install failed"
}
check_components
wait_crds_established kubectl "${crds[@]/#/crd/}" ||
  fail "the chart's CRDs are not Established" crd "${crds[@]}"
log "  $(helm list -n "$sys" -f "^$release\$" | tail -n 1 | tr -s '\t ' ' ')"
done_step

# --- 3. a device, and the sample workload of config/ with it
begin 3 "a device in the node file, config/k80-erc.yaml and config/k80-workload.yaml in $ns"
add_device helm-e2e-gpu0 0
rel=$(realpath --relative-to="$work/sample" "$root/config")
mkdir -p "$work/sample"
cat >"$work/sample/kustomization.yaml" <<EOF
# config/'s sample claim and workload in namespace $ns, with the local busybox image and no pull.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: $ns
resources:
  - $rel/k80-erc.yaml
  - $rel/k80-workload.yaml
images:
  - name: busybox
    newName: localhost/ker-busybox
    newTag: "1"
patches:
  - patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: k80-workload
      spec:
        template:
          spec:
            containers:
              - name: app
                imagePullPolicy: Never
EOF
kubectl kustomize --load-restrictor=LoadRestrictionsNone "$work/sample" >"$work/sample.yaml"
kubectl create namespace "$ns" >/dev/null
kubectl apply -f "$work/sample.yaml" >/dev/null || fail "applying the sample failed"
check_workload k80-workload k80-erc helm-e2e-gpu0 0
done_step

# --- 4. helm upgrade with the workload running
begin 4 "helm upgrade $release with --v=2 for every component, the workload running"
pod1=$pod pod1_uid=$pod_uid
container1=$(jp pod -n "$ns" "$pod1" -o jsonpath='{.status.containerStatuses[0].containerID}')
old_pods=$(component_pods)
cat >"$work/upgrade.yaml" <<'EOF'
# A flag in every component's pod template: the upgrade replaces every component pod.
controller:
  extraArgs: [--v=2]
scheduler:
  kubeScheduler:
    extraArgs: [--v=2]
  extender:
    extraArgs: [--v=2]
nodeAgent:
  extraArgs: [--v=2]
EOF
helm upgrade "$release" "$chart" -n "$sys" -f "$work/values.yaml" -f "$work/upgrade.yaml" \
  --wait --timeout 5m >"$work/upgrade.log" 2>&1 || {
  sed 's/^/    /' "$work/upgrade.log" >&2
  fail "helm upgrade failed"
}
check_components
[[ "$(helm history "$release" -n "$sys" | tail -n 1 | awk '{print $1}')" == 2 ]] ||
  fail "the release is not at revision 2 after the upgrade"
old_gone() { [[ -z "$(comm -12 <(sort <<<"$old_pods") <(component_pods | sort))" ]]; }
eventually 120 old_gone || fail "component pods of before the upgrade are still there" pods -n "$sys" -l "$selector"
# Every container of every component pod now runs with --v=2.
args=$(kubectl get pods -n "$sys" -l "$selector" \
  -o jsonpath='{range .items[*]}{range .spec.containers[*]}{.name}={.command} {.args}{"\n"}{end}{end}')
n=$(grep -c -- '--v=2' <<<"$args" || true)
((n == $(wc -l <<<"$args") && n == 7)) ||
  fail "not every component container (7: 2 x (kube-scheduler, extender), 2 controllers, 1 agent) runs with --v=2: $args" \
    pods -n "$sys" -l "$selector"
log "  every component pod replaced ($(wc -l <<<"$old_pods") before, $(component_pods | wc -l) now, $n containers with --v=2)"
# The workload: the same pod, the same container, never restarted, still with its device.
same_pod() {
  local seen
  seen=$(jp pod -n "$ns" "$pod1" -o jsonpath='{.metadata.uid} {.status.containerStatuses[0].containerID} {.status.containerStatuses[0].restartCount}')
  [[ "$seen" == "$pod1_uid $container1 0" ]] ||
    fail "workload pod $pod1 is '$seen' $1, was '$pod1_uid $container1 0' (UID, containerID, restartCount)" pod -n "$ns" "$pod1"
}
same_pod "after the upgrade"
check_workload k80-workload k80-erc helm-e2e-gpu0 0
[[ "$pod" == "$pod1" && "$pod_uid" == "$pod1_uid" ]] || fail "the workload's pod changed: $pod1 -> $pod"
# The system works after it: a second workload gets a second device.
add_device helm-e2e-gpu1 1
sed -e 's/k80-erc/k80-erc-2/g' -e 's/k80-workload/k80-workload-2/g' "$work/sample.yaml" >"$work/sample-2.yaml"
kubectl apply -f "$work/sample-2.yaml" >/dev/null || fail "applying the second workload failed"
check_workload k80-workload-2 k80-erc-2 helm-e2e-gpu1 1
# And the first still runs untouched, once the new agent has been up a while.
same_pod "after the second workload started"
done_step

log "ok in $((SECONDS - total_start)) s (${timings[*]})"

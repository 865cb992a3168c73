#!/usr/bin/env bash
# `make run`: the whole system on this machine. Starts a control plane (etcd, kube-apiserver,
# kube-controller-manager) and one real node, node-1 (containerd, kubelet, kube-proxy, on a
# bridge of its own: see test/controlplane/launch.sh), applies crds/, the RBAC and admission
# policy of deploy/ and the sample claim and workload of config/, runs the extender, the
# controller and node-1's node agent (its node file: config/node-agent/make-run-node-1.yaml) on
# the host with their ServiceAccounts' credentials and kube-scheduler with the
# extended-resource-scheduler profile, waits until the sample workload's container runs on
# node-1 with its claim Bound, prints what the container printed (the device the agent gave
# it) and a table of the devices and their holders (tools/ker-devices), and keeps everything
# running until Ctrl-C.
#
#   deploy/run-local.sh [--in-cluster] [--nodes N] [BUILD_DIR]    (default: build; needs root)
#
# --nodes N (`make run NODES=2`): N real nodes, node-1 to node-N; node k is a machine of its own
# as far as Kubernetes can tell (launch.sh runs it in network and mount namespaces of its own),
# with node-1's two stand-in GPUs renamed for it (k80-node-k-gpu0, ...) and a node agent of its
# own.
#
# --in-cluster (`make run-in-cluster`): instead of running the components on the host, builds
# the project image and runs deploy/ as pods on node-1 (test/e2e/cluster-up.sh), as a user
# deploys it; the samples are then applied the same way.
#
# No registry is needed: the sample's busybox:1.36 is the busybox-static image of
# test/images/build-images.sh, loaded into the node's containerd under that name.
# State, logs and kubeconfigs live in .run/ at the top of the repository.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../test/lib/crds.sh
source "$root/test/lib/crds.sh"
in_cluster=false nodes=1
while (($#)); do
  case "$1" in
  --in-cluster) in_cluster=true ;;
  --nodes)
    nodes=${2:-}
    shift
    ;;
  *) break ;;
  esac
  shift
done
[[ "$nodes" =~ ^[1-9]$ ]] || {
  printf '[run] --nodes must be 1 to 9, got %s\n' "'$nodes'" >&2
  exit 2
}
build=$(cd "${1:-$root/build}" && pwd)
run="$root/.run"
cp="$run/controlplane"
launcher="$root/test/controlplane/launch.sh"
children=()

log() { printf '[run] %s\n' "$*" >&2; }

cleanup() {
  local pid
  trap - EXIT INT TERM
  # Whoever read our output may be gone with the same Ctrl-C; stopping must go on regardless.
  trap '' PIPE
  log "stopping"
  for pid in "${children[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${children[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  "$launcher" stop "$cp" || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A TCP port on 127.0.0.1 nobody listens on.
free_port() {
  local port
  for _ in $(seq 1 100); do
    port=$((20000 + RANDOM % 12000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      printf '%s\n' "$port"
      return 0
    fi
  done
  log "no free port found"
  return 1
}

# stand_in_vendor HOST_ROOT: what a GPU vendor's driver and toolkit leave on node-1, as stand-ins
# under HOST_ROOT: device nodes with /dev/null's numbers, a driver library per GPU, and the CDI
# spec a generator writes (config/node-agent/make-run-cdi.yaml, with HOST_ROOT's paths).
stand_in_vendor() { # HOST_ROOT [k]
  local host=$1 k=${2:-1} dev
  for dev in nvidia0 nvidia1 nvidiactl; do
    mknod -m 0666 "$host/dev/$dev" c 1 3
  done
  mkdir -p "$host/usr/lib/nvidia-stand-in"
  for dev in 0 1; do
    echo "stand-in driver library of GPU $dev" >"$host/usr/lib/nvidia-stand-in/libgpu$dev.so"
  done
  for_node "$k" "$root/config/node-agent/make-run-cdi.yaml" | sed "s|@HOST_ROOT@|$host|g" >"$host/var/run/cdi/nvidia.yaml"
}

# node k's copy of node-1's file (its node file, its CDI spec): its own device names and IDs.
for_node() { # k FILE
  if (($1 == 1)); then
    cat "$2"
  else
    sed "s/node-1/node-$1/g; s/-0000-0000-0000-/-0000-0000-000$1-/g" "$2"
  fi
}

# node_key k KEY: a key of node k's env file (node-1's is the cluster's).
node_key() {
  local f="$cp/env"
  (($1 == 1)) || f="$cp/nodes/node-$1/env"
  sed -n "s/^$2=//p" "$f"
}

# wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND until it succeeds.
wait_for() {
  local secs=$1 what=$2 deadline
  shift 2
  deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      log "timed out after ${secs}s waiting for $what"
      return 1
    fi
    sleep 0.5
  done
}

if (($(id -u) != 0)); then
  log "make run starts a real node (kubelet, containerd), which needs root: run it as root"
  exit 1
fi
mkdir -p "$run"
"$launcher" stop "$cp" >/dev/null 2>&1 || true
rm -rf "$cp"
if $in_cluster; then
  log "building the images and bringing up node-1 with deploy/ running on it (logs: .run/controlplane/*.log)"
  "$root/test/e2e/cluster-up.sh" "$cp" --node-name node-1 --nodes "$nodes"
else
  images="$root/.cache/images/tarballs"
  mkdir -p "$images"
  "$root/test/images/build-images.sh" "$images" --only ker-busybox >/dev/null
  "$launcher" start "$cp" --node-network >/dev/null
  "$launcher" start-controller-manager "$cp" >/dev/null
  # node-1's "host" as its node agent sees it: stand-in device nodes and the vendor's CDI specs,
  # whose /var/run/cdi is containerd's spec folder. Its state folder (--state-dir) is in
  # .run/node-agent too: fresh for each run, as the node is.
  agent_root="$run/node-agent/host"
  rm -rf "$run/node-agent"
  mkdir -p "$agent_root/dev" "$agent_root/etc/cdi" "$agent_root/var/run/cdi"
  log "starting node-1 (kubelet, containerd, kube-proxy; logs: .run/controlplane/*.log)"
  "$launcher" start-node "$cp" --node-name node-1 --cdi-spec-dir "$agent_root/var/run/cdi" \
    --image-tar "$images/ker-busybox.tar" >/dev/null
  for ((k = 2; k <= nodes; k++)); do
    host="$run/node-agent-$k/host"
    rm -rf "$run/node-agent-$k"
    mkdir -p "$host/dev" "$host/etc/cdi" "$host/var/run/cdi"
    log "starting node-$k"
    "$launcher" start-node "$cp" --node-name "node-$k" --cdi-spec-dir "$host/var/run/cdi" \
      --image-tar "$images/ker-busybox.tar" >/dev/null
  done
fi
bin_dir=$(sed -n 's/^BIN_DIR=//p' "$cp/env")
for ((k = 1; k <= nodes; k++)); do
  "$(node_key "$k" CTR)" --address "$(node_key "$k" CONTAINERD_SOCKET)" \
    -n k8s.io images tag --force localhost/ker-busybox:1 docker.io/library/busybox:1.36 >/dev/null 2>&1 ||
    { log "could not name the local busybox image busybox:1.36 in node-$k's containerd"; exit 1; }
done
export KUBECONFIG="$cp/admin.kubeconfig"
kubectl() { "$bin_dir/kubectl" "$@"; }

if ! $in_cluster; then
  log "applying crds/"
  kubectl apply -f "$root/crds" >/dev/null
  wait_crds_established kubectl \
    crd/extendedresources.extendedresource.io crd/extendedresourceclaims.extendedresource.io \
    crd/extendedresourceclaimtemplates.extendedresource.io \
    crd/extendedresourceclasses.extendedresource.io || { log "the CRDs are not Established"; exit 1; }

  log "applying deploy/ but its workloads (ServiceAccounts, RBAC, the class policies' Namespace)"
  "$launcher" apply-deploy-rbac "$cp"
  log "applying deploy/admission-policy.yaml (the components report on /readyz without it)"
  kubectl apply -f "$root/deploy/admission-policy.yaml" >/dev/null
  log "applying deploy/class-routing-policy.yaml (pods asking for a class's resource get the profile)"
  kubectl apply -f "$root/deploy/class-routing-policy.yaml" >/dev/null
  "$launcher" sa-kubeconfig "$cp" kube-system extended-resource-scheduler-extender "$run/extender.kubeconfig" >/dev/null
  "$launcher" sa-kubeconfig "$cp" kube-system extended-resource-controller "$run/controller.kubeconfig" >/dev/null
  # Bound to node-1: an agent's token must name its node (deploy/admission-policy.yaml).
  "$launcher" sa-kubeconfig "$cp" kube-system extended-resource-node-agent "$run/node-agent.kubeconfig" node-1 >/dev/null

  extender_port=$(free_port)
  extender_health=$(free_port)
  log "starting the extender on 127.0.0.1:$extender_port (log: .run/extender.log)"
  # setsid: Ctrl-C reaches this script only, which then stops the components in order.
  setsid "$build/scheduler/extended-resource-scheduler" --kubeconfig "$run/extender.kubeconfig" \
    --bind-address 127.0.0.1 --port "$extender_port" --health-port "$extender_health" \
    --health-bind-address 127.0.0.1 >"$run/extender.log" 2>&1 &
  children+=($!)
  wait_for 60 "the extender's /readyz" curl -fsS "http://127.0.0.1:$extender_health/readyz"

  controller_port=$(free_port)
  log "starting the controller (log: .run/controller.log)"
  setsid "$build/controller/extended-resource-controller" --kubeconfig "$run/controller.kubeconfig" \
    --metrics-bind-address "127.0.0.1:$controller_port" >"$run/controller.log" 2>&1 &
  children+=($!)
  wait_for 60 "the controller's /healthz" curl -fsS "http://127.0.0.1:$controller_port/healthz"

  stand_in_vendor "$agent_root"
  agent_port=$(free_port)
  log "starting node-1's node agent (log: .run/node-agent.log)"
  NODE_NAME=node-1 setsid "$build/agent/extended-resource-node-agent" \
    --kubeconfig "$run/node-agent.kubeconfig" --node-file "$root/config/node-agent/make-run-node-1.yaml" \
    --host-root "$agent_root" --nri-socket "$(sed -n 's/^NRI_SOCKET=//p' "$cp/env")" \
    --state-dir "$run/node-agent/state" --metrics-bind-address "127.0.0.1:$agent_port" >"$run/node-agent.log" 2>&1 &
  children+=($!)
  wait_for 60 "the node agent's /readyz" curl -fsS "http://127.0.0.1:$agent_port/readyz"
  for ((k = 2; k <= nodes; k++)); do
    host="$run/node-agent-$k/host"
    stand_in_vendor "$host" "$k"
    for_node "$k" "$root/config/node-agent/make-run-node-1.yaml" >"$run/node-agent-$k/node-devices.yaml"
    "$launcher" sa-kubeconfig "$cp" kube-system extended-resource-node-agent "$run/node-agent-$k.kubeconfig" "node-$k" >/dev/null
    agent_port=$(free_port)
    log "starting node-$k's node agent (log: .run/node-agent-$k.log)"
    NODE_NAME=node-$k setsid "$build/agent/extended-resource-node-agent" \
      --kubeconfig "$run/node-agent-$k.kubeconfig" --node-file "$run/node-agent-$k/node-devices.yaml" \
      --host-root "$host" --nri-socket "$(node_key "$k" NRI_SOCKET)" \
      --state-dir "$run/node-agent-$k/state" --metrics-bind-address "127.0.0.1:$agent_port" >"$run/node-agent-$k.log" 2>&1 &
    children+=($!)
    wait_for 60 "node-$k's node agent's /readyz" curl -fsS "http://127.0.0.1:$agent_port/readyz"
  done

  "$launcher" start-scheduler "$cp" --extender-url "http://127.0.0.1:$extender_port" \
    --node-cache-capable true >/dev/null
fi

if $in_cluster; then
  log "node-1's devices: config/node-agent/make-run-node-1.yaml for its node agent"
  # cluster-up.sh gave the agent an empty node file and a "host" of its own for stand-ins.
  stand_in_vendor "$(sed -n 's/^NODE_AGENT_HOST_ROOT=//p' "$cp/env")"
  cp "$root/config/node-agent/make-run-node-1.yaml" "$(sed -n 's/^NODE_AGENT_FILE=//p' "$cp/env")"
  for ((k = 2; k <= nodes; k++)); do
    stand_in_vendor "$(node_key "$k" NODE_AGENT_HOST_ROOT)" "$k"
    for_node "$k" "$root/config/node-agent/make-run-node-1.yaml" >"$(node_key "$k" NODE_AGENT_FILE)"
  done
fi
log "applying the sample class and its plain GPU Deployment, then the claim and workload of config/"
kubectl apply -f "$root/config/gpu-class.yaml" >/dev/null
# The routing policy reads the classes through kube-apiserver's own cache: a server-side dry run
# of a GPU pod shows when it routes.
routed() {
  kubectl create --dry-run=server -o 'jsonpath={.spec.schedulerName}' -f - <<'POD' |
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "routing-probe", "namespace": "default"},
 "spec": {"containers": [{"name": "c", "image": "busybox:1.36",
                          "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
POD
    grep -qx extended-resource-scheduler
}
wait_for 30 "the class routing policy to see class gpu" routed
kubectl apply -f "$root/config/gpu-workload.yaml" >/dev/null
kubectl apply -f "$root/config/k80-erc.yaml" -f "$root/config/k80-workload.yaml" >/dev/null

claim_bound() { [[ "$(kubectl get erc k80-erc -o 'jsonpath={.status.phase}')" == Bound ]]; }
pod_running() { [[ "$(kubectl get pods -l app=k80-workload -o 'jsonpath={.items[*].status.phase}')" == Running ]]; }
wait_for 120 "the k80-workload pod to run" pod_running
wait_for 60 "claim k80-erc to be Bound" claim_bound
pod=$(kubectl get pods -l app=k80-workload -o 'jsonpath={.items[0].metadata.name}')
wait_for 30 "the k80-workload container's output" kubectl logs "$pod"
gpu_running() { [[ "$(kubectl get pods -l app=gpu-workload -o 'jsonpath={.items[*].status.phase}')" == Running ]]; }
wait_for 120 "the gpu-workload pod (nvidia.com/gpu: 1, no annotation) to run" gpu_running
gpu_pod=$(kubectl get pods -l app=gpu-workload -o 'jsonpath={.items[0].metadata.name}')
wait_for 30 "the gpu-workload container's output" kubectl logs "$gpu_pod" -c app

echo
((nodes == 1)) || kubectl get nodes -o wide
kubectl get er,erc,pods -o wide
echo
echo "\$ kubectl logs $pod"
kubectl logs "$pod"
echo
echo "\$ kubectl get node node-1 -o jsonpath='{.status.allocatable.nvidia\\.com/gpu}'    # the class's healthy devices"
kubectl get node node-1 -o 'jsonpath={.status.allocatable.nvidia\.com/gpu}'
echo
echo "\$ kubectl get erclass,erc -l extendedresource.io/class    # the claim made for the plain Deployment"
kubectl get erclass
kubectl get erc -l extendedresource.io/class -o wide
for c in app sidecar; do
  echo "\$ kubectl logs $gpu_pod -c $c"
  kubectl logs "$gpu_pod" -c "$c"
done
echo
echo "\$ kubectl get er -o json | tools/ker-devices    # the devices, their health and holders"
kubectl get er -o json | "$root/tools/ker-devices" || log "could not print the devices' table"
if $in_cluster; then
  echo
  kubectl get pods -n kube-system -o wide
  running="kube-apiserver, kube-controller-manager, the default kube-scheduler and node-1, whose
kubelet runs the extended-resource scheduler, controller and node agent from deploy/
(kube-system) and the sample workload's container"
else
  running="kube-apiserver, kube-controller-manager, kube-scheduler (profile
extended-resource-scheduler), the extender, the controller and node-1's node agent, and node-1,
whose kubelet runs the sample workload's container"
fi
cat <<EOF

The system is running: $running. Logs are in .run/.
To use it from another shell:

  export KUBECONFIG=$KUBECONFIG
  export PATH=$bin_dir:\$PATH

Press Ctrl-C to stop everything.
EOF

while true; do
  for pid in "${children[@]}"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "a component exited (pid $pid); see .run/*.log"
      exit 1
    fi
  done
  if ! "$launcher" status "$cp" >/dev/null 2>&1; then
    log "a component of the cluster or node-1 stopped; see .run/controlplane/*.log"
    exit 1
  fi
  sleep 2
done
